"""Profile(memory=True): bytes charged per function, against tracemalloc on the same program,
and the rules (frees charged to the allocator, re-entrancy, hooks restored in every exit path)."""

import inspect
import subprocess
import sys
import threading
import tracemalloc

import pytest

import rprofile
from support import runcall_with_flags

keep = []


def make_lists(n):
    for i in range(n):
        keep.append([i] * 200)


def make_strings(n):
    for i in range(n):
        keep.append(("abc%d" % i) * 300)


def make_dicts(n):
    for i in range(n):
        keep.append({j: str(j) for j in range(20)})


def make_objects(n):
    class Point:
        def __init__(self, x):
            self.x = x
            self.data = bytearray(500)

    for i in range(n):
        keep.append(Point(i))


def churn(n):
    for _ in range(n):
        x = [0] * 1000
        y = "z" * 5000
        del x, y


def program():
    make_lists(2000)
    make_strings(2000)
    make_dicts(500)
    make_objects(1000)
    churn(2000)


FUNCS = [make_lists, make_strings, make_dicts, make_objects, churn]


def tracemalloc_net():
    """Bytes still allocated at the end, per function, as tracemalloc attributes them (the
    innermost frame's line, mapped to the function whose lines hold it)."""
    keep.clear()
    tracemalloc.start(1)
    try:
        program()
        snap = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    spans = {}
    for f in FUNCS:
        lines, first = inspect.getsourcelines(f)
        spans[f.__name__] = (f.__code__.co_filename, first, first + len(lines))
    out = dict.fromkeys(spans, 0)
    for stat in snap.statistics("lineno"):
        frame = stat.traceback[0]
        for name, (file, lo, hi) in spans.items():
            if frame.filename == file and lo <= frame.lineno < hi:
                out[name] += stat.size
    return out


def rprofile_memory(**kw):
    keep.clear()
    prof = rprofile.Profile(memory=True, builtins=False, **kw)
    runcall_with_flags(prof, program, builtins=False)
    stats = prof.memory_stats()
    # Functions defined inside one of FUNCS (Point.__init__; comprehensions, which are functions
    # of their own before 3.12) count for it, as tracemalloc sees their lines in it.
    spans = {}
    for f in FUNCS:
        lines, first = inspect.getsourcelines(f)
        spans[f.__name__] = (first, first + len(lines))
    by_name = {}
    for (file, line, name), m in stats.items():
        if file != __file__:
            continue
        key = next((n for n, (lo, hi) in spans.items() if lo <= line < hi), name)
        prev = by_name.get(key)
        by_name[key] = m if prev is None else rprofile.MemoryStat(
            *(a + b for a, b in zip(prev, m)))
    return by_name, prof


def test_net_bytes_per_function_match_tracemalloc_within_5_percent():
    ref = tracemalloc_net()
    mine, _ = rprofile_memory()
    for name in ("make_lists", "make_strings", "make_dicts", "make_objects"):
        assert ref[name] > 100_000, (name, ref[name])
        assert mine[name].net == pytest.approx(ref[name], rel=0.05), (name, mine[name], ref)


def test_a_function_that_frees_what_it_allocates_nets_zero():
    mine, _ = rprofile_memory()
    m = mine["churn"]
    assert m.allocated > 2000 * 5000
    assert m.net == 0 or abs(m.net) < 0.001 * m.allocated
    assert m.peak >= 5000


def test_blocks_freed_by_another_function_are_charged_to_their_allocator():
    store = []

    def allocator():
        for _ in range(100):
            store.append(bytearray(10_000))

    def releaser():
        store.clear()

    prof = rprofile.Profile(memory=True, builtins=False)
    prof.enable()
    allocator()
    releaser()
    prof.disable()
    stats = {k[2]: v for k, v in prof.memory_stats().items()}
    a = stats["allocator"]
    r = stats.get("releaser", rprofile.MemoryStat(0, 0, 0, 0, 0))
    assert a.allocated >= 1_000_000 and a.freed >= 1_000_000
    assert abs(a.net) < 10_000 and a.peak >= 1_000_000
    assert r.freed < 10_000 and r.allocated < 10_000


def test_peak_is_the_highest_net():
    def grow_then_shrink():
        big = []
        for _ in range(10):
            big.append(bytearray(100_000))
        del big

    prof = rprofile.Profile(memory=True, builtins=False)
    prof.runcall(grow_then_shrink)
    m = next(v for k, v in prof.memory_stats().items() if k[2] == "grow_then_shrink")
    assert m.peak >= 1_000_000 > abs(m.net)


def test_allocations_inside_builtins_are_charged_to_the_builtin():
    def caller():
        return "".join(str(i) for i in range(50_000))

    prof = rprofile.Profile(memory=True)
    prof.runcall(caller)
    stats = prof.memory_stats()
    join = next(v for k, v in stats.items() if "join" in k[2])
    assert join.allocated > 50_000


def test_stats_are_unchanged_and_hooks_are_restored():
    before = [tracemalloc.is_tracing()]
    plain = rprofile.Profile(builtins=False, timer=_ticks())
    plain.runcall(make_lists, 10)
    plain.create_stats()
    prof = rprofile.Profile(builtins=False, timer=_ticks(), memory=True)
    prof.runcall(make_lists, 10)
    prof.create_stats()
    assert prof.stats == plain.stats
    assert [tracemalloc.is_tracing()] == before
    # tracemalloc works after us: our hooks are out of its way.
    tracemalloc.start()
    x = [bytearray(1000) for _ in range(10)]
    assert tracemalloc.get_traced_memory()[0] >= 10_000
    tracemalloc.stop()
    del x


def _ticks():
    n = [0]

    def t():
        n[0] += 1
        return n[0]
    return t


def test_tracemalloc_started_while_we_track_keeps_working():
    prof = rprofile.Profile(memory=True)
    prof.enable()
    tracemalloc.start()
    data = [bytearray(1000) for _ in range(100)]
    prof.disable()  # our hook is under tracemalloc's: it stays, passing calls through
    assert tracemalloc.get_traced_memory()[0] >= 100_000
    tracemalloc.stop()
    del data
    # Tracking again later reuses the hook still in the chain.
    prof2 = rprofile.Profile(memory=True, builtins=False)
    prof2.runcall(make_lists, 100)
    assert any(k[2] == "make_lists" and v.net > 0 for k, v in prof2.memory_stats().items())


def test_one_profiler_tracks_memory_at_a_time():
    a = rprofile.Profile(memory=True)
    b = rprofile.Profile(memory=True)
    a.enable()
    try:
        with pytest.raises(RuntimeError, match="another profiler is tracking memory"):
            b.enable()
    finally:
        a.disable()
    b.runcall(make_lists, 3)  # free again after a.disable()


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt, SystemExit])
def test_an_exception_stops_tracking_cleanly(exc):
    def boom():
        make_lists(10)
        raise exc()

    prof = rprofile.Profile(memory=True, builtins=False)
    with pytest.raises(exc):
        prof.runcall(boom)
    assert any(k[2] == "make_lists" for k in prof.memory_stats())
    # Allocations after disable are not charged.
    n = sum(v.allocations for v in prof.memory_stats().values())
    make_lists(100)
    assert sum(v.allocations for v in prof.memory_stats().values()) == n


def test_threads_are_charged_on_their_own_stacks():
    def worker():
        make_strings(300)

    prof = rprofile.Profile(memory=True, threads=True, builtins=False)
    prof.enable()
    ts = [threading.Thread(target=worker) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    prof.disable()
    stats = {k[2]: v for k, v in prof.memory_stats().items()}
    assert stats["make_strings"].allocations >= 900


def test_a_python_timer_s_allocations_are_not_the_program_s():
    def timer():
        junk = [bytearray(1000) for _ in range(5)]  # noqa: F841
        return len(junk) * 0.0

    prof = rprofile.Profile(timer, memory=True, builtins=False)

    def nothing():
        return 1

    prof.runcall(nothing)
    # The timer ran (and allocated 5 KB) at each of the events; none of it is charged.
    assert prof.memory_stats() == {} or \
        sum(v.allocated for v in prof.memory_stats().values()) < 1000


def test_clear_and_no_memory():
    prof = rprofile.Profile(memory=True)
    prof.runcall(make_lists, 10)
    assert prof.memory_stats()
    prof.clear()
    assert prof.memory_stats() == {}
    assert rprofile.Profile().memory_stats() is None


def test_memory_cannot_change_while_enabled():
    prof = rprofile.Profile()
    prof.enable()
    try:
        with pytest.raises(RuntimeError):
            prof.__init__(memory=True)
    finally:
        prof.disable()


def test_cli_prints_the_memory_table(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("keep = []\n"
                      "def hog():\n"
                      "    keep.extend(bytearray(4096) for _ in range(200))\n"
                      "hog()\n")
    out = subprocess.run([sys.executable, "-m", "rprofile", "--memory", str(script)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Memory (bytes" in text
    table = text[text.index("Memory (bytes"):].splitlines()
    # hog (or the genexpr it runs) is first by net bytes, with at least 200 x 4 KiB.
    first = table[2]
    assert ("hog" in first or "genexpr" in first) and int(first.split()[0]) >= 200 * 4096


def test_large_blocks_served_by_the_raw_domain_are_counted_once():
    def big_blocks():
        for _ in range(100):
            keep.append(bytearray(10_000))  # pymalloc hands these to the raw allocator

    keep.clear()
    prof = rprofile.Profile(memory=True, builtins=False)
    prof.runcall(big_blocks)
    m = next(v for k, v in prof.memory_stats().items() if k[2] == "big_blocks")
    # Each buffer once: its raw allocation under the object allocator is not counted again
    # (that would make ~2 MB).
    assert 100 * 10_000 <= m.allocated < 1.2 * 100 * 10_000
    keep.clear()


def test_allocations_of_threads_without_the_gil_are_not_charged():
    import zlib

    data = bytes(range(256)) * 20_000

    def compress_in_thread():
        # zlib allocates through PyMem_RawMalloc with the GIL released.
        threading.Thread(target=zlib.compress, args=(data, 9)).start()

    prof = rprofile.Profile(memory=True, builtins=False)
    prof.enable()
    t = threading.Thread(target=zlib.compress, args=(data, 9))
    t.start()
    make_lists(200)
    t.join()
    prof.disable()
    keep.clear()
    # No crash, and what was charged is what the main thread's functions made.
    assert all(k[2] != "compress" for k in prof.memory_stats())
