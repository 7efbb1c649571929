"""Profile(timeline=True): the recorded events against the stats of the same run, the buffer's
limits, the Chrome and speedscope exports, and the faults a run can end in."""

import errno
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter, defaultdict

import pytest

import rprofile
from support import Tick, runcall_with_flags


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def leaf(x):
    return len(str(x))


def middle(n):
    return sum(leaf(i) for i in range(n))


def gen(n):
    for i in range(n):
        yield leaf(i)


def work():
    middle(20)
    list(gen(5))
    sorted([3, 1, 2], key=leaf)
    fib(8)


def profile(func, **kw):
    prof = rprofile.Profile(Tick(), **kw) if "timer" not in kw else rprofile.Profile(**kw)
    runcall_with_flags(prof, func, **kw)
    return prof


def replay(events):
    """Checks per thread that every enter has its exit and nesting is proper; returns the
    durations per function and the number of calls per function."""
    stacks = defaultdict(list)
    durations = defaultdict(float)
    calls = Counter()
    for t, event, func, thread, depth, value in events:
        if event not in ("call", "return", "c_call", "c_return"):
            continue
        assert value is None
        stack = stacks[thread]
        if event in ("call", "c_call"):
            assert depth == len(stack), (event, func, depth, len(stack))
            stack.append((func, t, event))
            calls[func] += 1
        else:
            assert stack, "a return with no open call: %r" % (func,)
            opened, t0, kind = stack.pop()
            assert opened == func, (opened, func)
            assert event == ("return" if kind == "call" else "c_return")
            assert depth == len(stack)
            assert t >= t0
            durations[func] += t - t0
    for thread, stack in stacks.items():
        assert not stack, "calls left open on thread %r: %r" % (thread, stack)
    return durations, calls


def test_every_enter_has_its_exit_and_counts_match_the_stats():
    prof = profile(work, timeline=True)
    prof.create_stats()
    durations, calls = replay(prof.timeline.events())
    stats = prof.stats
    assert set(calls) == set(stats)
    for func, (cc, nc, tt, ct, callers) in stats.items():
        assert calls[func] == nc, func


def test_durations_of_non_recursive_functions_equal_cumtime_under_the_counting_timer():
    prof = profile(work, timeline=True)
    prof.create_stats()
    durations, calls = replay(prof.timeline.events())
    checked = 0
    for func, (cc, nc, tt, ct, callers) in prof.stats.items():
        if cc == nc:  # not recursive
            assert durations[func] == pytest.approx(ct, abs=1e-9), func
            checked += 1
    assert checked >= 5
    # And the recursive one: its outermost activation is its cumtime.
    fib_key = next(f for f in prof.stats if f[2] == "fib")
    assert prof.stats[fib_key][0] == 1 and prof.stats[fib_key][1] > 1


def test_builtins_are_c_events_and_left_out_with_builtins_false():
    prof = profile(work, timeline=True)
    kinds = Counter(e[1] for e in prof.timeline.events())
    assert kinds["c_call"] == kinds["c_return"] > 0
    assert kinds["call"] == kinds["return"] > 0
    prof = profile(work, timeline=True, builtins=False)
    assert {e[1] for e in prof.timeline.events()} == {"call", "return"}


def full_run(**kw):
    prof = profile(work, timeline=True, **kw)
    return list(prof.timeline.events()), prof.timeline


def test_a_full_ring_keeps_the_newest_events_and_counts_the_dropped():
    everything, _ = full_run()
    events, tl = full_run(buffer_size=50)
    assert len(tl) == 50 == tl.capacity
    assert tl.dropped == len(everything) - 50
    assert tl.when_full == "keep_newest"
    assert [e[1:] for e in events] == [e[1:] for e in everything[-50:]]


def test_keep_oldest_keeps_the_first_events():
    everything, _ = full_run()
    events, tl = full_run(buffer_size=50, when_full="keep_oldest")
    assert tl.dropped == len(everything) - 50
    assert [e[1:] for e in events] == [e[1:] for e in everything[:50]]


def test_exports_of_a_cut_buffer_still_nest(tmp_path):
    for when in ("keep_newest", "keep_oldest"):
        prof = profile(work, timeline=True, buffer_size=37, when_full=when)
        prof.timeline.to_speedscope(tmp_path / "s.json")
        check_speedscope(json.loads((tmp_path / "s.json").read_text()))
        prof.timeline.to_chrome_trace(tmp_path / "c.json")
        check_chrome(json.loads((tmp_path / "c.json").read_text()))


def check_chrome(doc):
    """The trace-event format's rules for what we write: complete events with their fields,
    metadata naming each thread."""
    assert set(doc) >= {"traceEvents"}
    events = doc["traceEvents"]
    named_threads = set()
    slices = 0
    for e in events:
        assert isinstance(e["name"], str) and e["ph"] in ("X", "M")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name")
            assert isinstance(e["args"]["name"], str)
            if e["name"] == "thread_name":
                named_threads.add(e["tid"])
        else:
            slices += 1
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
            assert e["dur"] >= 0 and e["ts"] >= 0
            assert e["cat"] in ("python", "builtin")
            assert isinstance(e["args"]["file"], str) and isinstance(e["args"]["line"], int)
    assert {e["tid"] for e in events if e["ph"] == "X"} <= named_threads
    return slices


def check_speedscope(doc):
    """speedscope's file-format schema (https://www.speedscope.app/file-format-schema.json) for
    evented profiles, and the rules its importer enforces: events in time order, each close
    naming the frame opened last, nothing left open."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list)
    for f in frames:
        assert isinstance(f["name"], str)
        assert set(f) <= {"name", "file", "line", "col"}
        if "line" in f:
            assert isinstance(f["line"], int)
    assert isinstance(doc.get("name", ""), str) and isinstance(doc.get("exporter", ""), str)
    assert 0 <= doc.get("activeProfileIndex", 0) < max(1, len(doc["profiles"]))
    total = 0
    for p in doc["profiles"]:
        assert p["type"] == "evented"
        assert isinstance(p["name"], str)
        assert p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds",
                             "bytes")
        assert p["startValue"] <= p["endValue"]
        stack, last = [], p["startValue"]
        for e in p["events"]:
            assert set(e) == {"type", "frame", "at"}
            assert 0 <= e["frame"] < len(frames)
            assert last <= e["at"] <= p["endValue"]
            last = e["at"]
            if e["type"] == "O":
                stack.append(e["frame"])
            else:
                assert e["type"] == "C"
                assert stack and stack.pop() == e["frame"]
            total += 1
        assert not stack
    return total


def test_chrome_trace_has_one_slice_per_call(tmp_path):
    prof = profile(work, timeline=True)
    prof.create_stats()
    path = tmp_path / "trace.json"
    prof.timeline.to_chrome_trace(str(path))
    slices = check_chrome(json.loads(path.read_text()))
    assert slices == sum(v[1] for v in prof.stats.values())


def test_speedscope_file_has_an_open_and_close_per_call(tmp_path):
    prof = profile(work, timeline=True)
    path = tmp_path / "s.json"
    prof.timeline.to_speedscope(path)
    n = check_speedscope(json.loads(path.read_text()))
    assert n == len(prof.timeline)


def test_names_with_quotes_and_non_ascii_survive_the_json(tmp_path):
    ns = {}
    exec(compile("def f\u00e9():\n    return 1\n", 'we"ird\\\u2603.py', "exec"), ns)
    prof = rprofile.Profile(timeline=True)
    prof.runcall(ns["f\u00e9"])
    prof.timeline.to_chrome_trace(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    names = {(e["name"], e["args"]["file"]) for e in doc["traceEvents"] if e["ph"] == "X"}
    assert ("f\u00e9", 'we"ird\\\u2603.py') in names


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt, SystemExit])
def test_an_exception_in_the_profiled_code_leaves_a_balanced_timeline(exc):
    def inner():
        middle(3)
        raise exc("x")

    def boom():
        try:
            inner()
        finally:
            leaf(1)

    prof = rprofile.Profile(Tick(), timeline=True)
    with pytest.raises(exc):
        prof.runcall(boom)
    events = list(prof.timeline.events())
    replay(events)
    # The unwinding functions return where they unwind; disable() is closed at disable.
    assert [e[2][2] for e in events if e[1] == "return"][-3:] == ["inner", "leaf", "boom"]
    assert events[-1][1] == "c_return" and "disable" in events[-1][2][2]


def test_calls_open_at_disable_are_closed_on_the_timeline():
    prof = rprofile.Profile(Tick(), timeline=True)

    def inner():
        prof.disable()  # two Python calls and a builtin are still open

    def outer():
        inner()

    prof.enable()
    outer()
    events = list(prof.timeline.events())
    replay(events)
    assert events[-1][1] == "return" and events[-1][4] == 0


def test_threads_get_their_own_lanes():
    def task():
        middle(50)

    prof = rprofile.Profile(threads=True, timeline=True)
    prof.enable()
    ts = [threading.Thread(target=task, name="worker-%d" % i) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    prof.disable()
    events = list(prof.timeline.events())
    replay(events)
    idents = {e[3] for e in events if e[2][2] == "middle"}
    assert idents == {t.ident for t in ts}


def test_thread_names_reach_the_trace(tmp_path):
    def task():
        middle(5)

    prof = rprofile.Profile(threads=True, timeline=True)
    prof.enable()
    t = threading.Thread(target=task, name="the-worker")
    t.start()
    t.join()
    prof.disable()
    prof.timeline.to_chrome_trace(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert {"the-worker", "MainThread"} <= names


def profile_threads_reusing_an_ident(start_first):
    """A profile of a thread started by `start_first(target)` (returning a join function) that
    ends, then a threading.Thread named "second" started after it that got the same ident: the
    system hands a finished thread's ident to a later one, usually at once; each try is a new
    profile, until one shows that reuse. Returns (profile, the ident), or skips."""
    def task():
        middle(5)

    for _ in range(200):
        prof = rprofile.Profile(threads=True, timeline=True, buffer_size=100_000)
        prof.enable()
        first_ident = start_first(task)
        second = threading.Thread(target=task, name="second")
        second.start()
        second.join()
        prof.disable()
        if first_ident == second.ident:
            return prof, second.ident
    pytest.skip("no thread ident was reused in 200 tries")


def start_named_first(target):
    first = threading.Thread(target=target, name="first")
    first.start()
    first.join()
    return first.ident


def task_lanes_in_order(events):
    """The thread values of the rows calling `task`, oldest first."""
    return [e[3] for e in events if e[1] == "call" and e[2][2] == "task"]


def test_threads_sharing_an_ident_keep_their_own_lanes_and_names(tmp_path):
    pd = pytest.importorskip("pandas")
    prof, ident = profile_threads_reusing_an_ident(start_named_first)
    names = [name for name, i in prof.thread_stats() if i == ident]
    assert sorted(names) == ["first", "second"]

    prof.timeline.to_chrome_trace(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    check_chrome(doc)
    lane_names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
                  if e["name"] == "thread_name"}
    task_tids = [e["tid"] for e in sorted(doc["traceEvents"], key=lambda e: e.get("ts", -1))
                 if e["ph"] == "X" and e["name"] == "task"]
    assert len(set(task_tids)) == 2
    assert [lane_names[tid] for tid in task_tids] == ["first", "second"]

    prof.timeline.to_speedscope(tmp_path / "s.json")
    doc = json.loads((tmp_path / "s.json").read_text())
    check_speedscope(doc)
    task_frame = next(i for i, f in enumerate(doc["shared"]["frames"]) if f["name"] == "task")
    assert [p["name"] for p in doc["profiles"]
            if any(e["frame"] == task_frame for e in p["events"])] == ["first", "second"]

    events = list(prof.timeline.events())
    replay(events)
    lanes = task_lanes_in_order(events)
    assert lanes == [ident, ident]
    assert [lane.name for lane in lanes] == ["first", "second"]

    df = prof.timeline.to_dataframe()
    rows = df[(df["name"] == "task") & (df["event"] == "call")]
    assert list(rows["thread"]) == [ident, ident]
    assert list(rows["thread_name"]) == ["first", "second"]


def test_a_thread_without_a_name_is_not_named_after_a_later_one_with_its_ident(tmp_path):
    import _thread

    def start_unnamed_first(target):
        done = _thread.allocate_lock()
        done.acquire()
        idents = []

        def run():
            idents.append(_thread.get_ident())
            target()
            done.release()

        _thread.start_new_thread(run, ())
        done.acquire()
        return idents[0]

    prof, ident = profile_threads_reusing_an_ident(start_unnamed_first)
    prof.timeline.to_chrome_trace(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    lane_names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
                  if e["name"] == "thread_name"}
    task_tids = [e["tid"] for e in sorted(doc["traceEvents"], key=lambda e: e.get("ts", -1))
                 if e["ph"] == "X" and e["name"] == "task"]
    assert [lane_names[tid] == "second" for tid in task_tids] == [False, True]
    lanes = task_lanes_in_order(prof.timeline.events())
    assert lanes == [ident, ident]
    assert lanes[0].name != "second" and lanes[1].name == "second"


def test_clear_empties_the_timeline():
    prof = profile(work, timeline=True)
    assert len(prof.timeline) > 0
    prof.clear()
    assert len(prof.timeline) == 0 and prof.timeline.dropped == 0
    prof.runcall(leaf, 3)
    replay(prof.timeline.events())
    assert len(prof.timeline) > 0


def test_a_profiler_without_a_timeline_has_none():
    prof = rprofile.Profile()
    assert prof.timeline is None


@pytest.mark.parametrize("kw, exc", [
    (dict(buffer_size=0), ValueError),
    (dict(buffer_size=-5), ValueError),
    (dict(buffer_size="many"), TypeError),
    (dict(when_full="keep_all"), ValueError),
    (dict(when_full=3), TypeError),
])
def test_bad_arguments_are_refused(kw, exc):
    with pytest.raises(exc):
        rprofile.Profile(timeline=True, **kw)


def test_the_timeline_cannot_change_while_enabled():
    prof = rprofile.Profile(timeline=True)
    prof.enable()
    try:
        with pytest.raises(RuntimeError):
            prof.__init__(timeline=True, buffer_size=10)
        # A refused change changes nothing else either.
        with pytest.raises(RuntimeError):
            prof.__init__(Tick(), timeline=False)
        assert prof.clock == "wall" and prof.timeline.capacity == 1_000_000
    finally:
        prof.disable()
    assert len(prof.timeline) > 0


def test_the_ordinary_stats_are_unchanged_by_recording():
    a = profile(work)
    b = profile(work, timeline=True)
    a.create_stats()
    b.create_stats()
    assert a.stats == b.stats


@pytest.mark.parametrize("missing", ["pandas", "numpy"])
def test_dataframe_without_pandas_says_what_to_install(missing, monkeypatch):
    prof = profile(work, timeline=True)
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import <missing>` fail
    with pytest.raises(ImportError, match=r"needs pandas.*pip install rprofile\[pandas\]"):
        prof.timeline.to_dataframe()


def test_dataframe_has_the_eventprofiler_columns():
    pd = pytest.importorskip("pandas")
    prof = profile(work, timeline=True)
    df = prof.timeline.to_dataframe()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(prof.timeline)
    for col in ("time", "event", "name", "mod", "lineno", "from_name", "from_mod", "from_line",
                "thread", "depth", "value1", "value2"):
        assert col in df.columns
    events = list(prof.timeline.events())
    assert list(df["name"]) == [e[2][2] for e in events]
    assert list(df["event"].astype(str)) == [e[1] for e in events]
    # The caller of `leaf` inside middle's generator expression is the genexpr.
    rows = df[(df["name"] == "leaf") & (df["event"] == "call")]
    assert set(rows["from_name"]) >= {"<genexpr>", "gen"}


CLI_SCRIPT = """
import threading
def f(n):
    return sum(range(n))
for i in range(10):
    f(i)
"""


def test_cli_writes_both_files(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(CLI_SCRIPT)
    trace, speed = tmp_path / "t.json", tmp_path / "s.json"
    out = subprocess.run(
        [sys.executable, "-m", "rprofile", "--timeline", str(trace), "--speedscope", str(speed),
         str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "function calls" in out.stdout
    doc = json.loads(trace.read_text())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "f") == 10
    check_chrome(doc)
    check_speedscope(json.loads(speed.read_text()))


def test_cli_reports_a_cut_timeline(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(CLI_SCRIPT)
    out = subprocess.run(
        [sys.executable, "-m", "rprofile", "--timeline", "t.json", "--buffer-size", "8",
         str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "dropped" in out.stderr
    check_chrome(json.loads((tmp_path / "t.json").read_text()))


def test_cli_timeline_written_when_the_program_exits_with_a_status(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(CLI_SCRIPT + "\nimport sys\nsys.exit(3)\n")
    out = subprocess.run(
        [sys.executable, "-m", "rprofile", "--timeline", "t.json", str(script)],
        capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 3
    check_chrome(json.loads((tmp_path / "t.json").read_text()))


def test_an_unwritable_path_is_an_oserror(tmp_path):
    prof = profile(work, timeline=True)
    with pytest.raises(OSError):
        prof.timeline.to_chrome_trace(tmp_path / "no" / "such" / "dir.json")
    assert os.listdir(tmp_path) == []


def what_python_raises(write):
    try:
        write()
    except OSError as e:
        return e
    pytest.fail("writing did not fail")


def same_error(got, expected, filename):
    """`got` is what open() or write() raised (`expected`), with the file's name."""
    assert type(got) is type(expected)
    assert (got.errno, got.strerror) == (expected.errno, expected.strerror)
    assert got.errno is not None and got.strerror
    assert got.filename == filename and type(got.filename) is type(filename)
    assert got.filename2 is None


@pytest.mark.parametrize("export", ["to_chrome_trace", "to_speedscope"])
def test_an_export_raises_what_open_raises(tmp_path, export):
    prof = profile(work, timeline=True)
    (tmp_path / "a-directory").mkdir()
    for path in (tmp_path / "no" / "such" / "dir.json",
                 os.fsencode(tmp_path / "no" / "such" / "dir.json"),
                 tmp_path / "a-directory"):
        expected = what_python_raises(lambda: open(path, "w"))
        with pytest.raises(OSError) as got:
            getattr(prof.timeline, export)(path)
        same_error(got.value, expected, os.fspath(path))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("export", ["to_chrome_trace", "to_speedscope"])
def test_an_export_to_a_full_device_raises_what_write_raises(export):
    prof = profile(work, timeline=True)

    def python_write():
        with open("/dev/full", "w") as f:
            f.write("{}")

    expected = what_python_raises(python_write)
    assert expected.errno == errno.ENOSPC
    with pytest.raises(OSError) as got:
        getattr(prof.timeline, export)("/dev/full")
    same_error(got.value, expected, "/dev/full")


EFBIG_SCRIPT = """
import json, os, resource, signal, sys
import rprofile

def f(n):
    return sum(range(n))

prof = rprofile.Profile(timeline=True)
with prof:
    for i in range(100):
        f(i)
path, export = sys.argv[1], sys.argv[2]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def python_write():
    with open(path + ".other", "wb") as f:
        f.write(b"x" * 2000)


errors = []
for write in (python_write, lambda: getattr(prof.timeline, export)(path)):
    try:
        write()
        errors.append(None)
    except OSError as e:
        errors.append([type(e).__name__, e.errno, e.strerror, e.filename])
print(json.dumps(errors))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
@pytest.mark.parametrize("export", ["to_chrome_trace", "to_speedscope"])
def test_an_export_past_the_file_size_limit_raises_what_write_raises(tmp_path, export):
    path = str(tmp_path / "big.json")
    out = subprocess.run([sys.executable, "-c", EFBIG_SCRIPT, path, export],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    python, ours = json.loads(out.stdout)
    assert python is not None and python[1] == errno.EFBIG
    assert ours == python[:3] + [path]


def test_threads_false_keeps_one_balanced_lane_with_other_threads_running():
    # On 3.12+ other threads' events reach a threads=False profiler on its one stack (as
    # cProfile's); on 3.10/3.11 they are not seen. Either way the lane nests.
    def task():
        for _ in range(200):
            middle(5)

    prof = rprofile.Profile(timeline=True)
    prof.enable()
    ts = [threading.Thread(target=task) for _ in range(3)]
    for t in ts:
        t.start()
    task()
    for t in ts:
        t.join()
    prof.disable()
    events = list(prof.timeline.events())
    replay(events)
    assert {e[3] for e in events} == {threading.get_ident()}


def test_async_aware_runs_are_slices_between_awaits():
    import asyncio

    async def child(i):
        await asyncio.sleep(0)
        return leaf(i)

    async def main():
        return await asyncio.gather(*(child(i) for i in range(3)))

    prof = rprofile.Profile(Tick(), async_aware=True, timeline=True)
    prof.runcall(asyncio.run, main())
    prof.create_stats()
    events = list(prof.timeline.events())
    replay(events)
    child_key = next(f for f in prof.stats if f[2] == "child")
    runs = sum(1 for e in events if e[2] == child_key and e[1] == "call")
    # Each coroutine is one call in the stats, and at least two runs on the timeline (before
    # and after its await).
    assert prof.stats[child_key][1] == 3
    assert runs >= 6


def test_bytes_paths_are_accepted(tmp_path):
    prof = profile(work, timeline=True)
    path = os.fsencode(tmp_path / "c.json")
    prof.timeline.to_chrome_trace(path)
    check_chrome(json.loads(open(path, "rb").read()))


def test_an_impossible_buffer_is_a_memory_error_and_changes_nothing():
    prof = rprofile.Profile(timeline=True, buffer_size=10)
    with pytest.raises(MemoryError):
        prof.__init__(Tick(), timeline=True, buffer_size=10**15)
    assert prof.clock == "wall" and prof.timeline.capacity == 10


def test_calls_of_other_threads_open_at_disable_close_on_their_own_lanes():
    started, release = threading.Event(), threading.Event()

    def blocked():
        started.set()
        release.wait()

    prof = rprofile.Profile(threads=True, timeline=True)
    prof.enable()
    t = threading.Thread(target=blocked)
    t.start()
    started.wait()
    prof.disable()
    release.set()
    t.join()
    events = list(prof.timeline.events())
    replay(events)
    assert any(e[3] == t.ident and e[2][2] == "blocked" and e[1] == "return" for e in events)


def test_a_clock_going_back_still_makes_valid_files(tmp_path):
    values = iter([10, 9, 8, 20, 5, 30, 31, 2, 40, 41, 42, 43, 44, 45, 46, 47] * 100)
    prof = rprofile.Profile(lambda: next(values), timeunit=1e-6, timeline=True)
    prof.runcall(work)
    prof.timeline.to_speedscope(tmp_path / "s.json")
    check_speedscope(json.loads((tmp_path / "s.json").read_text()))
    prof.timeline.to_chrome_trace(tmp_path / "c.json")
    check_chrome(json.loads((tmp_path / "c.json").read_text()))
