"""async/await under a real asyncio event loop, with tasks and gather."""

import asyncio


async def leaf(n):
    return n * 2


async def middle(n):
    total = 0
    for i in range(n):
        total += await leaf(i)
    return total


async def yields_to_loop():
    await asyncio.sleep(0)  # a zero sleep only yields to the loop: no waiting, no timing
    return 1


async def top():
    results = await asyncio.gather(middle(3), middle(4), yields_to_loop())
    task = asyncio.ensure_future(middle(2))
    await task
    return sum(results)


def main():
    asyncio.run(top())
