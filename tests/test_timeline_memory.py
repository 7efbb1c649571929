"""Memory on the timeline: allocations and frees as events (timeline=True, memory=True), and the
RSS sampler (rss=True); both against the memory stats of the same run and in the exports."""

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict

import pytest

import rprofile
from support import Tick, runcall_with_flags

MEMORY = {"malloc", "calloc", "realloc", "free", "realloc_free"}
ALLOC = {"malloc", "calloc", "realloc"}

keep = []


def make(n):
    for i in range(n):
        keep.append([i] * 50)


def churn(n):
    for _ in range(n):
        x = bytearray(3000)
        del x


def grow(n):
    s = []
    for i in range(n):
        s.append(str(i))
    keep.append(s)


def program():
    make(300)
    churn(300)
    grow(2000)
    keep.clear()


def run(func=program, **kw):
    kw.setdefault("timeline", True)
    kw.setdefault("memory", True)
    prof = rprofile.Profile(**kw)
    runcall_with_flags(prof, func, **kw)
    return prof


def total_net(prof):
    return sum(m.net for m in prof.memory_stats().values())


def test_memory_events_add_up_to_the_memory_stats():
    prof = run()
    assert prof.timeline.dropped == 0
    events = list(prof.timeline.events())
    mem = [e for e in events if e[1] in MEMORY]
    assert len(mem) > 1000
    stats = prof.memory_stats()
    # An allocation is an event of the function charged with it.
    allocs = Counter(e[2] for e in mem if e[1] in ALLOC)
    allocated = defaultdict(int)
    for e in mem:
        if e[1] in ALLOC:
            allocated[e[2]] += e[5]
    for key, m in stats.items():
        k = None if key == ("~", 0, "<no profiled call>") else key
        assert allocs[k] == m.allocations, key
        assert allocated[k] == m.allocated, key
    assert sum(allocs.values()) == sum(m.allocations for m in stats.values())
    # Frees are the tracked blocks' sizes: all the events add up to the net bytes.
    assert all(e[5] < 0 for e in mem if e[1] not in ALLOC)
    assert all(e[5] > 0 for e in mem if e[1] in ALLOC)
    assert sum(e[5] for e in mem) == total_net(prof)
    df = prof.timeline.to_dataframe()
    rows = df[df.event.isin(sorted(MEMORY))]
    assert len(rows) == len(mem)
    assert rows.value1.sum() == total_net(prof)
    assert rows.value2.iloc[-1] == total_net(prof)
    assert df[~df.event.isin(sorted(MEMORY))].value1.isna().all()


def test_memory_events_happen_inside_the_call_on_top():
    prof = run(builtins=False)
    stacks = defaultdict(list)
    seen = 0
    for t, event, func, thread, depth, value in prof.timeline.events():
        stack = stacks[thread]
        if event == "call":
            stack.append(func)
        elif event == "return":
            stack.pop()
        elif event in MEMORY:
            seen += 1
            assert func == (stack[-1] if stack else None)
            assert depth == max(len(stack) - 1, 0)
    assert seen > 1000
    df = prof.timeline.to_dataframe()
    churned = df[(df.event == "malloc") & (df.name == "churn")]
    assert (churned.from_name == "program").all() and len(churned) >= 300


@pytest.mark.parametrize("when_full", ["keep_newest", "keep_oldest"])
def test_a_full_buffer_keeps_the_live_bytes_right(when_full):
    n = len(run().timeline)
    prof = run(buffer_size=n // 3, when_full=when_full)
    assert prof.timeline.dropped > 0
    df = prof.timeline.to_dataframe()
    mem = df[df.event.isin(sorted(MEMORY))]
    if when_full == "keep_newest":
        # What the dropped events added is carried: the last total is the run's net.
        assert mem.value2.iloc[-1] == total_net(prof)
    else:
        # Nothing before the kept events was dropped: the total starts from the first event.
        assert mem.value2.iloc[0] == mem.value1.iloc[0]
        assert mem.value2.iloc[-1] != total_net(prof)
    # Each total is the one before plus the event's bytes.
    v1, v2 = list(mem.value1), list(mem.value2)
    assert all(v2[i] == v2[i - 1] + v1[i] for i in range(1, len(v2)))


def test_chrome_trace_has_the_memory_counter(tmp_path):
    prof = run()
    path = tmp_path / "t.json"
    prof.timeline.to_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and all(e["name"] == "memory" for e in counters)
    for e in counters:
        assert {"pid", "tid", "ts", "name", "args"} <= set(e)
        assert isinstance(e["args"]["tracked bytes"], int)
    ts = [e["ts"] for e in counters]
    assert ts == sorted(ts)
    assert counters[-1]["args"]["tracked bytes"] == total_net(prof)
    # The calls are as without memory: one slice per call.
    slices = [e for e in events if e["ph"] == "X"]
    calls = sum(1 for e in prof.timeline.events() if e[1] in ("call", "c_call"))
    assert len(slices) == calls


def test_speedscope_ignores_memory_events(tmp_path):
    prof = run()
    path = tmp_path / "s.json"
    prof.timeline.to_speedscope(path)
    doc = json.loads(path.read_text())
    called = {e[2] for e in prof.timeline.events() if e[1] in ("call", "c_call")}
    assert len(doc["shared"]["frames"]) == len(called)
    events = doc["profiles"][0]["events"]
    assert len(events) == 2 * sum(1 for e in prof.timeline.events()
                                  if e[1] in ("call", "c_call"))


def test_no_memory_events_without_memory_or_without_timeline():
    prof = run(memory=False)
    assert not {e[1] for e in prof.timeline.events()} & MEMORY
    prof = run(timeline=False)
    assert prof.timeline is None and prof.memory_stats()


def test_a_python_timer_stamps_memory_events_with_the_latest_event_time():
    prof = run(timer=Tick())
    last = None
    seen = 0
    for t, event, *_ in prof.timeline.events():
        if event in MEMORY:
            # (Before the first call event there is no time to take but the start's.)
            assert t == last or (last is None and t == 0)
            seen += last is not None
        else:
            assert last is None or t > last
            last = t
    assert seen > 1000


def test_threads_put_their_memory_events_on_their_own_lanes():
    def worker():
        churn(200)

    def main():
        t = threading.Thread(target=worker)
        t.start()
        make(200)
        t.join()
        return t.ident

    prof = rprofile.Profile(timeline=True, memory=True, threads=True)
    ident = prof.runcall(main)
    by_func = defaultdict(set)
    for e in prof.timeline.events():
        if e[1] in MEMORY and e[2] is not None:
            by_func[e[2][2]].add(e[3])
    assert by_func["churn"] == {ident}
    assert by_func["make"] == {threading.get_ident()}


def test_a_thread_with_no_profiled_call_yet_has_its_own_lane():
    started, go, stop = threading.Event(), threading.Event(), threading.Event()
    box = []

    def spin():
        started.set()
        go.wait()
        # No profiled call in this thread after enable(): it never gets a track of its own.
        while not stop.is_set():
            box.append(bytearray(100))
            del box[:]

    t = threading.Thread(target=spin)
    t.start()
    started.wait()
    prof = rprofile.Profile(timeline=True, memory=True, threads=True, builtins=False)
    prof.enable()
    go.set()
    time.sleep(0.05)
    stop.set()
    t.join()
    prof.disable()
    lanes = Counter(e[3] for e in prof.timeline.events() if e[1] in MEMORY)
    assert lanes[t.ident] > 100
    main = [e for e in prof.timeline.events()
            if e[1] in MEMORY and e[3] == threading.get_ident() and e[2] is not None]
    assert all(e[2][2] != "spin" for e in main)


# -- rss=True ---------------------------------------------------------------------------------

def rss_threads():
    """Threads of this process named as the sampler's (Linux: /proc/self/task/*/comm)."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names.count("rprofile-rss")


def wait_for_rss_threads(n, timeout=10.0):
    """Whether the count of sampler threads reaches `n` (a new thread names itself, and an
    ended one leaves /proc, a moment later)."""
    deadline = time.monotonic() + timeout
    while rss_threads() != n:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def touch_memory(mib):
    block = bytearray(mib << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    time.sleep(0.05)
    del block
    time.sleep(0.03)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
def test_rss_samples_follow_the_resident_memory(tmp_path):
    before = rss_threads()
    prof = rprofile.Profile(timeline=True, rss=True, rss_interval=0.002)
    prof.enable()
    try:
        assert wait_for_rss_threads(before + 1)
        touch_memory(64)
    finally:
        prof.disable()
    assert wait_for_rss_threads(before)
    samples = [e for e in prof.timeline.events() if e[1] == "rss"]
    assert len(samples) >= 5
    assert len(prof.timeline) == len(list(prof.timeline.events()))
    assert all(e[2] is None and e[5] > 0 for e in samples)
    times = [e[0] for e in samples]
    assert times == sorted(times)
    values = [e[5] for e in samples]
    assert max(values) - values[0] >= 50 << 20
    assert max(values) - values[-1] >= 50 << 20
    calls = [e[0] for e in prof.timeline.events() if e[1] != "rss"]
    assert times[0] <= calls[0]  # sampled at enable(), before the first event
    path = tmp_path / "t.json"
    prof.timeline.to_chrome_trace(path)
    counters = [e for e in json.loads(path.read_text())["traceEvents"]
                if e["ph"] == "C" and e["name"] == "rss"]
    assert [c["args"]["bytes"] for c in counters] == values
    assert all(c["ts"] >= 0 for c in counters)
    df = prof.timeline.to_dataframe()
    assert list(df[df.event == "rss"].value1) == values
    prof.clear()
    assert not [e for e in prof.timeline.events() if e[1] == "rss"]


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
def test_rss_trigger_keeps_only_moves_as_large():
    prof = rprofile.Profile(timeline=True, rss=True, rss_interval=0.002, rss_trigger=1 << 40)
    with prof:
        touch_memory(16)
    samples = [e for e in prof.timeline.events() if e[1] == "rss"]
    assert len(samples) == 2  # at enable and at disable


def cut_timeline_messages(tmp_path, *options):
    """The dropped-events lines `python -m rprofile --timeline` prints for a short program with
    `options`: {what was kept ("events", "RSS samples"): (kept, dropped)}."""
    import re

    script = tmp_path / "prog.py"
    script.write_text("def f(n):\n    return sum(range(n))\nfor i in range(50):\n    f(i)\n")
    out = subprocess.run(
        [sys.executable, "-m", "rprofile", "--timeline", "t.json", *options, str(script)],
        capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    found = re.findall(r"the timeline kept the last (\d+) (events|RSS samples); (\d+) earlier",
                       out.stderr)
    return {what: (int(kept), int(dropped)) for kept, what, dropped in found}


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
def test_the_cli_counts_rss_samples_apart_from_the_dropped_events(tmp_path):
    # The events the message counts are the calls and returns, as without --rss.
    plain = cut_timeline_messages(tmp_path, "--buffer-size", "30")
    with_rss = cut_timeline_messages(tmp_path, "--buffer-size", "30", "--rss")
    assert plain["events"][1] > 0
    assert with_rss["events"] == plain["events"]
    # A buffer of one keeps one of the samples taken at enable() and at disable().
    one = cut_timeline_messages(tmp_path, "--buffer-size", "1", "--rss")
    assert one["events"] == (1, sum(plain["events"]) - 1)
    assert one["RSS samples"][0] == 1 and one["RSS samples"][1] >= 1


def test_rss_arguments_are_checked():
    with pytest.raises(ValueError, match="timeline"):
        rprofile.Profile(rss=True)
    for timer in (Tick(), "cpu", "thread_cpu"):
        with pytest.raises(ValueError, match="timer"):
            rprofile.Profile(timer, timeline=True, rss=True)
    with pytest.raises(ValueError, match="bias"):
        rprofile.Profile(timeline=True, rss=True, bias=1e-6)
    prof = rprofile.Profile(timeline=True, rss=True)
    with pytest.raises(ValueError, match="bias"):
        prof.bias = 1e-6
    prof.bias = 0.0
    assert prof.bias == 0.0
    for bad in (0, -1, float("nan"), float("inf"), 1e300):
        with pytest.raises(ValueError, match="rss_interval"):
            rprofile.Profile(timeline=True, rss=True, rss_interval=bad)
    with pytest.raises(ValueError, match="rss_trigger"):
        rprofile.Profile(timeline=True, rss=True, rss_trigger=-1)
    with pytest.raises(TypeError):
        rprofile.Profile(timeline=True, rss=True, rss_interval="fast")
    prof = rprofile.Profile(timeline=True, rss=True)
    with prof:
        with pytest.raises(RuntimeError, match="rss"):
            prof.__init__(timeline=True)
        with pytest.raises(RuntimeError, match="rss"):
            prof.__init__(timeline=True, rss=True, rss_interval=1.0)
    assert wait_for_rss_threads(0)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
def test_an_enable_that_fails_keeps_no_samples_and_no_thread():
    other = rprofile.Profile()
    other.enable()
    try:
        prof = rprofile.Profile(timeline=True, rss=True)
        try:
            prof.enable()
        except ValueError:
            pass  # 3.12+: another tool holds sys.monitoring's profiler slot
        else:
            prof.disable()
            pytest.skip("before 3.12 a second profiler replaces the first's hook")
    finally:
        other.disable()
    assert wait_for_rss_threads(0)
    assert len(prof.timeline) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
def test_a_child_forked_while_sampling_disables_cleanly():
    code = """if 1:
        import os, rprofile
        p = rprofile.Profile(timeline=True, rss=True, rss_interval=0.001)
        p.enable()
        pid = os.fork()
        if pid == 0:
            try:
                p.disable()
                n = sum(1 for e in p.timeline.events() if e[1] == "rss")
                os._exit(0 if n >= 1 else 3)
            except BaseException:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        p.disable()
        print(os.waitstatus_to_exitcode(status))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0", out.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc")
def test_cli_rss(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("x = bytearray(32 << 20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
                      "import time; time.sleep(0.05)\n")
    trace = tmp_path / "t.json"
    out = subprocess.run([sys.executable, "-m", "rprofile", "--timeline", str(trace), "--rss",
                          "--memory", str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    names = Counter(e["name"] for e in json.loads(trace.read_text())["traceEvents"]
                    if e["ph"] == "C")
    assert names["rss"] >= 2 and names["memory"] >= 1
    out = subprocess.run([sys.executable, "-m", "rprofile", "--rss", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--rss needs --timeline" in out.stderr
