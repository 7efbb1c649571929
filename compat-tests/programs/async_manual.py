"""Coroutines driven by hand with ``send()``/``throw()``/``close()``, no event loop."""


class Suspend:
    """An awaitable that suspends its coroutine once."""

    def __await__(self):
        value = yield "suspended"
        return value


async def leaf(n):
    got = await Suspend()
    return n + (got or 0)


async def middle():
    total = 0
    for i in range(3):
        total += await leaf(i)
    return total


async def guarded():
    try:
        await Suspend()
    except KeyError:
        return "recovered"


def run(coro):
    value = None
    while True:
        try:
            coro.send(value)
        except StopIteration as stop:
            return stop.value
        value = 1


def main():
    run(middle())
    c = guarded()
    c.send(None)
    try:
        c.throw(KeyError("k"))
    except StopIteration:
        pass
    c = middle()
    c.send(None)
    c.close()
