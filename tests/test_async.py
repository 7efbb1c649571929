"""Profile(async_aware=True): a coroutine is one call from its first start to its final return,
its cumtime the whole span (awaits included), its tottime without the time it was suspended.
cProfile counts every resume as a call instead (and so does rprofile by default)."""

import asyncio
import sys
import time

import pytest

import rprofile

# A task is charged to the coroutine that made it where the profiler sees Python calls
# (sys.monitoring's CALL event, 3.12+); on 3.11 it is listed under the event loop's step.
TASK_CREATORS = sys.version_info >= (3, 12)


async def leaf(delay):
    await asyncio.sleep(delay)
    return delay


async def middle(delay):
    total = 0
    for _ in range(3):
        total += await leaf(delay)
    return total


def gen(n):
    for i in range(n):
        yield i


async def consumer():
    return sum(gen(5))


def _row(stats, name):
    rows = [v for k, v in stats.items() if k[2] == name]
    assert len(rows) == 1, (name, [k for k in stats])
    return rows[0]


def _profile(coro_fn, async_aware=True):
    prof = rprofile.Profile(async_aware=async_aware)
    prof.enable()
    asyncio.run(coro_fn())
    prof.disable()
    prof.create_stats()
    return prof.stats


def test_coroutines_are_one_call_with_their_whole_span():
    async def main():
        await asyncio.gather(middle(0.05), middle(0.1))

    stats = _profile(main)
    leaf_row, middle_row = _row(stats, "leaf"), _row(stats, "middle")
    assert leaf_row[:2] == (6, 6)
    assert middle_row[:2] == (2, 2)  # two concurrent instances: not recursion
    assert leaf_row[3] == pytest.approx(3 * 0.05 + 3 * 0.1, abs=0.08)
    assert middle_row[3] == pytest.approx(0.45, abs=0.08)
    assert leaf_row[2] < 0.02 and middle_row[2] < 0.02  # suspended time is not their own
    assert {k[2]: v[:2] for k, v in leaf_row[4].items()} == {"middle": (6, 6)}
    if TASK_CREATORS:
        # gather runs them as tasks: charged to main, which made them, not to the event loop.
        assert {k[2]: v[:2] for k, v in middle_row[4].items()} == {"main": (2, 2)}
    main_row = _row(stats, "main")
    assert main_row[:2] == (1, 1)
    assert main_row[3] == pytest.approx(0.3, abs=0.08)


@pytest.mark.skipif(not TASK_CREATORS, reason="task creators are seen from 3.12")
def test_task_group_tasks_are_callees_of_their_creator():
    async def spawner():
        async with asyncio.TaskGroup() as tg:
            for d in (0.01, 0.02, 0.03):
                tg.create_task(leaf(d))

    async def main():
        await spawner()

    stats = _profile(main)
    leaf_row = _row(stats, "leaf")
    assert leaf_row[:2] == (3, 3)
    assert {k[2]: v[:2] for k, v in leaf_row[4].items()} == {"spawner": (3, 3)}
    assert {k[2] for k in _row(stats, "spawner")[4]} == {"main"}


def test_cprofile_counting_without_it():
    async def main():
        await middle(0.01)

    stats = _profile(main, async_aware=False)
    # Every resume is a call: leaf starts 3 times and resumes 3 times.
    assert _row(stats, "leaf")[1] == 6


def test_generators_are_counted_as_cprofile_counts_them():
    plain = _profile(consumer, async_aware=False)
    aware = _profile(consumer, async_aware=True)
    assert _row(aware, "gen")[:2] == _row(plain, "gen")[:2] == (6, 6)


def test_cancelled_and_failing_coroutines():
    async def sleeper():
        await asyncio.sleep(10)

    async def failer():
        await asyncio.sleep(0.01)
        raise ValueError("x")

    async def main():
        t = asyncio.create_task(sleeper())
        await asyncio.sleep(0.02)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        with pytest.raises(ValueError):
            await failer()

    stats = _profile(main)
    assert _row(stats, "sleeper")[:2] == (1, 1)
    assert _row(stats, "failer")[:2] == (1, 1)
    assert _row(stats, "sleeper")[3] == pytest.approx(0.02, abs=0.05)


def test_disable_while_coroutines_are_suspended():
    prof = rprofile.Profile(async_aware=True)

    async def main():
        task = asyncio.create_task(leaf(0.2))
        await asyncio.sleep(0.05)
        prof.disable()
        await task

    prof.enable()
    asyncio.run(main())
    prof.create_stats()
    row = _row(prof.stats, "leaf")
    assert row[:2] == (1, 1)
    assert row[3] == pytest.approx(0.05, abs=0.04)  # closed at disable


def test_attribute_and_command_line(tmp_path):
    assert rprofile.Profile(async_aware=True).async_aware is True
    assert rprofile.Profile().async_aware is False
    import subprocess
    script = tmp_path / "a.py"
    script.write_text("import asyncio\n"
                      "async def f():\n    await asyncio.sleep(0)\n"
                      "async def main():\n    await asyncio.gather(*(f() for _ in range(5)))\n"
                      "asyncio.run(main())\n")
    out = tmp_path / "a.prof"
    subprocess.run([sys.executable, "-m", "rprofile", "--async", "-o", str(out), str(script)],
                   check=True, timeout=60)
    assert _row(rprofile.Stats(str(out)).stats, "f")[:2] == (5, 5)


def test_a_coroutine_finished_unseen_does_not_leave_its_call_open():
    """A coroutine suspended under the profiler and closed on a thread it does not see
    (threads=False): a later coroutine that gets the same frame is a call of its own."""
    import threading

    class Pause:
        def __await__(self):
            yield

    async def co():
        await Pause()
        return 1

    prof = rprofile.Profile(async_aware=True)
    prof.enable()
    first = co()
    first.send(None)  # suspended here
    closer = threading.Thread(target=first.close)
    closer.start()
    closer.join()
    del first
    time.sleep(0.2)
    second = co()
    second.send(None)
    with pytest.raises(StopIteration):
        second.send(None)
    prof.disable()
    prof.create_stats()
    row = _row(prof.stats, "co")
    assert row[:2] == (2, 2)
    assert row[3] < 0.1  # the sleep was in neither call
