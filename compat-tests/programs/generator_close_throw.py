"""Generator ``close()`` and ``throw()``: caught, re-yielding and propagating."""


def resilient():
    n = 0
    while True:
        try:
            yield n
        except ValueError:
            n += 100
        n += 1


def cleanup(log):
    try:
        yield 1
        yield 2
    finally:
        log.append("closed")


def watches_exit(log):
    try:
        yield 1
    except GeneratorExit:
        log.append("exit")
        raise


def fragile():
    yield 1
    yield 2


def delegating(log):
    yield from cleanup(log)


def main():
    log = []
    g = resilient()
    next(g)
    g.throw(ValueError)
    g.throw(ValueError("again"))
    g.close()

    g = cleanup(log)
    next(g)
    g.close()
    g.close()  # closing a finished generator is a no-op

    g = watches_exit(log)
    next(g)
    g.close()

    g = fragile()
    next(g)
    try:
        g.throw(KeyError("k"))
    except KeyError:
        pass

    g = delegating(log)
    next(g)
    g.close()
