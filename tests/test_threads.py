"""Profile(threads=True): every thread on its own call stack, added up into one profile.

The expected counts are computed from what each thread runs, so they are exact whatever the
interleaving: cProfile's single stack (3.12+) or single thread (3.10/3.11) cannot give them.
"""

import concurrent.futures
import cProfile
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import rprofile

# What enable() says when the profiler tool id is taken: 3.14 lets sys.monitoring's words out.
TOOL_BUSY = ("tool 2 is already in use" if sys.version_info >= (3, 14)
             else "Another profiling tool is already active")


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


def leaf():
    return 1


def work(k, depth):
    for _ in range(k):
        rec(depth)
        leaf()


def boom():
    leaf()
    raise ValueError("thread dies")


def _rows(stats, name):
    rows = [(k, v) for k, v in stats.items() if k[2] == name]
    assert len(rows) == 1, (name, rows)
    return rows[0][1]


def _callers(row):
    return {k[2]: v[:2] for k, v in row[4].items()}


def _run_threads(prof, plan, before_enable=()):
    """Runs work(k, depth) in one thread per (k, depth) of `plan`; the threads of
    `before_enable` start (and wait) before profiling is enabled."""
    go = threading.Event()

    def waiting(k, depth):
        go.wait()
        work(k, depth)

    early = [threading.Thread(target=waiting, args=a, name="early-%d" % i)
             for i, a in enumerate(before_enable)]
    for t in early:
        t.start()
    prof.enable()
    late = [threading.Thread(target=work, args=a, name="late-%d" % i)
            for i, a in enumerate(plan)]
    for t in late:
        t.start()
    go.set()
    work(3, 2)  # the main thread works too
    for t in early + late:
        t.join()
    prof.disable()
    prof.create_stats()
    return [(3, 2)] + list(before_enable) + list(plan)


@pytest.mark.parametrize("repeat", range(3))
def test_eight_threads_exact_counts(repeat):
    prof = rprofile.Profile(threads=True)
    ran = _run_threads(prof, [(20, 3), (50, 0), (7, 9), (30, 5), (11, 1), (40, 2)],
                       before_enable=[(25, 4), (13, 6)])
    stats = prof.stats
    calls = sum(k for k, _ in ran)
    rec_total = sum(k * (d + 1) for k, d in ran)
    rec_prim = calls
    row = _rows(stats, "rec")
    assert row[:2] == (rec_prim, rec_total)
    # The rec->rec edge is primitive once per chain that recurses at all (cProfile's rule).
    chains = sum(k for k, d in ran if d >= 1)
    assert _callers(row) == {"work": (calls, calls), "rec": (rec_total - calls, chains)}
    assert _rows(stats, "leaf")[:2] == (calls, calls)
    assert _rows(stats, "work")[:2] == (len(ran), len(ran))
    # Per thread: each late and early thread apart, with its own counts.
    per = prof.thread_stats()
    names = {name for name, _ in per}
    assert {"MainThread", "early-0", "early-1"} | {"late-%d" % i for i in range(6)} <= names
    for (name, ident), st in per.items():
        if name.startswith("late-"):
            k, d = [(20, 3), (50, 0), (7, 9), (30, 5), (11, 1), (40, 2)][int(name[5:])]
            assert _rows(st, "rec")[:2] == (k, k * (d + 1)), name


def test_thread_pool_and_dying_threads():
    prof = rprofile.Profile(threads=True)
    prof.enable()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda a: work(*a), [(10, 3)] * 12))
    dying = [threading.Thread(target=boom) for _ in range(3)]
    old_hook = threading.excepthook
    threading.excepthook = lambda args: None
    try:
        for t in dying:
            t.start()
        for t in dying:
            t.join()
    finally:
        threading.excepthook = old_hook
    prof.disable()
    prof.create_stats()
    assert len(results) == 12
    assert _rows(prof.stats, "rec")[:2] == (120, 480)
    assert _rows(prof.stats, "boom")[:2] == (3, 3)
    assert _rows(prof.stats, "leaf")[:2] == (123, 123)


def test_a_thread_per_task_keeps_few_cache_sets_and_exact_counts():
    """A thread's track keeps its counts until disable(), but a full set of lookup caches
    (80 KB) only while it is among the threads switched in last: a program that starts a
    thread per task must not keep a set for every thread it ever ran."""
    prof = rprofile.Profile(threads=True)
    prof.enable()
    for _ in range(60):
        t = threading.Thread(target=work, args=(5, 2))
        t.start()
        t.join()
    # More threads running at once than there are sets: they pass the sets around.
    go = threading.Barrier(12)

    def together():
        go.wait()
        for _ in range(20):
            work(3, 3)
            time.sleep(0)

    crowd = [threading.Thread(target=together) for _ in range(12)]
    for t in crowd:
        t.start()
    for t in crowd:
        t.join()
    tracks, full, most, nbytes = prof._lookup_caches()
    prof.disable()
    prof.create_stats()
    assert tracks >= 1 + 60 + 12
    assert 1 <= full <= most < 60
    full_set = 80 * 1024
    assert full * full_set <= nbytes < full * full_set + tracks * 1024
    calls = 60 * 5 + 12 * 20 * 3
    assert _rows(prof.stats, "rec")[:2] == (calls, 60 * 5 * 3 + 12 * 20 * 3 * 4)
    assert _rows(prof.stats, "leaf")[:2] == (calls, calls)
    assert _rows(prof.stats, "together")[:2] == (12, 12)


def test_thread_cpu_clock_per_thread():
    prof = rprofile.Profile("thread_cpu", threads=True)
    prof.enable()
    sleeper = threading.Thread(target=time.sleep, args=(0.3,), name="sleeper")
    sleeper.start()
    work(2000, 5)
    sleeper.join()
    prof.disable()
    per = prof.thread_stats()
    (st,) = [s for (name, _), s in per.items() if name == "sleeper"]
    sleep_rows = [v for k, v in st.items() if "sleep" in k[2]]
    assert sleep_rows and sleep_rows[0][3] < 0.02


def test_enable_and_disable_while_threads_run():
    stop = threading.Event()
    deep_ready = threading.Event()

    def deep(n):
        if n == 0:
            deep_ready.set()
            while not stop.is_set():
                leaf()
            return
        deep(n - 1)

    def churn():
        while not stop.is_set():
            work(5, 3)

    threads = [threading.Thread(target=deep, args=(200,))] + [
        threading.Thread(target=churn) for _ in range(3)]
    for t in threads:
        t.start()
    deep_ready.wait()
    for _ in range(5):
        prof = rprofile.Profile(threads=True)
        prof.enable()
        time.sleep(0.02)
        prof.disable()  # threads keep running
        prof.create_stats()
        assert _rows(prof.stats, "leaf")[0] > 0
        assert prof.thread_stats()
    # Threads ending while profiling.
    prof = rprofile.Profile(threads=True)
    prof.enable()
    stop.set()
    for t in threads:
        t.join()
    work(1, 1)
    prof.disable()
    prof.create_stats()
    assert _rows(prof.stats, "work")[0] >= 1
    prof.clear()
    assert prof.getstats() == []


def test_default_is_cprofiles_behaviour():
    assert rprofile.Profile().threads is False
    assert rprofile.Profile(threads=True).threads is True


def test_command_line_threads_summary(tmp_path):
    script = tmp_path / "t.py"
    script.write_text(textwrap.dedent("""
        import threading
        def f(n):
            return sum(range(n))
        ts = [threading.Thread(target=f, args=(1000,), name="worker-%d" % i) for i in range(3)]
        for t in ts: t.start()
        for t in ts: t.join()
    """))
    out = subprocess.run([sys.executable, "-m", "rprofile", "--threads", str(script)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "Threads" in out
    for i in range(3):
        assert "worker-%d" % i in out
    assert "MainThread" in out


def test_enable_flags_reach_every_threads_track():
    """enable(subcalls=False) after a first run applies to a thread that already has a track."""
    import queue

    jobs, done = queue.Queue(), queue.Queue()

    def caller():
        return leaf()

    def worker():
        while True:
            job = jobs.get()
            if job is None:
                return
            job()
            done.put(1)

    t = threading.Thread(target=worker)
    t.start()
    prof = rprofile.Profile(threads=True)
    prof.enable()
    jobs.put(caller)
    done.get()
    prof.disable()
    prof.enable(subcalls=False)
    jobs.put(caller)
    done.get()
    prof.disable()
    jobs.put(None)
    t.join()
    prof.create_stats()
    row = _rows(prof.stats, "leaf")
    assert row[:2] == (2, 2)
    assert _callers(row) == {"caller": (1, 1)}  # the second call recorded no edge


def test_a_label_that_runs_python_while_threads_run():
    """A builtin's label is made with repr(), which can run Python and let another thread's
    events in: each thread's calls stay on its own track."""
    stop = threading.Event()

    def other_leaf():
        return 1

    def other():
        while not stop.is_set():
            other_leaf()

    class Slow:
        def __repr__(self):
            time.sleep(0.01)
            return "Slow()"

    t = threading.Thread(target=other, name="other")
    prof = rprofile.Profile(threads=True)
    prof.enable()
    t.start()

    def main_work():
        x = []
        for _ in range(3):
            x.append(len(repr(Slow())))
        return x

    main_work()
    stop.set()
    t.join()
    prof.disable()
    prof.create_stats()
    assert _rows(prof.stats, "main_work")[:2] == (1, 1)
    row = _rows(prof.stats, "other_leaf")
    assert _callers(row) == {"other": row[:2]}


def test_a_stats_object_freed_on_another_thread_goes_quietly():
    # Found by CI: a Stats collected on a worker thread raised "is unsendable, but is being
    # dropped on another thread" (unraisable) and leaked its engine.
    import rprofile

    prof = rprofile.Profile()
    prof.runcall(sorted, [3, 1, 2])
    box = [rprofile.Stats(prof)]
    box[0].sort_stats("cumulative")
    caught = []
    old = sys.unraisablehook
    sys.unraisablehook = caught.append
    try:
        t = threading.Thread(target=box.clear)
        t.start()
        t.join()
    finally:
        sys.unraisablehook = old
    assert box == [] and caught == []


def c_work(n):
    return rec(n)


def thread_work(n):
    return rec(n)


def test_threads_started_outside_threading_are_profiled():
    """Threads that threading.setprofile does not reach: one from _thread, one a native thread
    entering Python through ctypes (PyGILState_Ensure makes its thread state). On 3.10/3.11
    they get the hook at their first frame, on 3.12+ sys.monitoring covers every thread."""
    import _thread
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "pthread_create"):
        pytest.skip("no pthread_create to start a native thread with")
    callback_type = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)

    @callback_type
    def native_start(_arg):
        c_work(5)
        return None

    done = threading.Event()
    # The _thread thread lives until the native one has ended: a thread that ended may leave
    # its ident to the next, and thread_stats() adds up threads with the same name and ident.
    release = threading.Event()
    prof = rprofile.Profile(threads=True)
    prof.enable()
    try:
        _thread.start_new_thread(lambda: (thread_work(4), done.set(), release.wait(30)), ())
        tid = ctypes.c_ulong()
        assert libc.pthread_create(ctypes.byref(tid), None, native_start, None) == 0
        assert libc.pthread_join(tid, None) == 0
        assert done.wait(30)
    finally:
        release.set()
        prof.disable()
    prof.create_stats()
    assert _rows(prof.stats, "c_work")[:2] == (1, 1)
    assert _rows(prof.stats, "thread_work")[:2] == (1, 1)
    # Their recursion is counted on their own stacks: rec(5) and rec(4), 11 calls, 2 primitive.
    rec_row = _rows(prof.stats, "rec")
    assert rec_row[:2] == (2, 11)
    callers = _callers(rec_row)
    assert callers["c_work"] == (1, 1) and callers["thread_work"] == (1, 1)
    assert len(prof.thread_stats()) >= 3  # main, the _thread thread, the native thread


NATIVE_CALLER = r"""
#include <pthread.h>

typedef void (*callback)(int);

static void *call_three_times(void *arg)
{
    callback f = (callback)arg;
    f(3);
    f(3);
    f(3);
    return 0;
}

int run_in_native_thread(callback f)
{
    pthread_t thread;
    if (pthread_create(&thread, 0, call_three_times, (void *)f) != 0)
        return -1;
    return pthread_join(thread, 0);
}
"""


def test_a_native_thread_entering_python_again_is_profiled_each_time(tmp_path):
    """Each entry of a native thread into Python (PyGILState_Ensure ... Release) makes a new
    thread state on the same OS thread: every one of them is profiled."""
    import ctypes
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the native caller")
    src = tmp_path / "caller.c"
    src.write_text(NATIVE_CALLER)
    lib = tmp_path / "caller.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src), "-lpthread"], check=True,
                   timeout=120)
    caller = ctypes.CDLL(str(lib))
    callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int)

    @callback_type
    def entered(n):
        c_work(n)

    prof = rprofile.Profile(threads=True)
    prof.enable()
    try:
        assert caller.run_in_native_thread(entered) == 0
    finally:
        prof.disable()
    prof.create_stats()
    assert _rows(prof.stats, "c_work")[:2] == (3, 3)
    assert _rows(prof.stats, "rec")[:2] == (3, 12)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12+ hooks threads by sys.monitoring")
def test_a_refused_hook_leaves_a_thrown_exception_alone():
    # An audit hook refusing sys.setprofile when a new thread's first frame is a throw into a
    # generator: the thread still sees the thrown exception, and the refusal is reported.
    code = textwrap.dedent("""
        import sys, _thread, threading, rprofile
        refuse = False
        def audit(event, args):
            if refuse and event == "sys.setprofile":
                raise RuntimeError("refused")
        sys.addaudithook(audit)
        caught = threading.Event()
        def gen():
            try:
                yield 1
            except KeyError:
                caught.set()
                yield "caught"
        g = gen()
        next(g)
        p = rprofile.Profile(threads=True)
        p.enable()
        refuse = True
        # The thread's first frame is the generator's, evaluated with KeyError pending.
        _thread.start_new_thread(g.throw, (KeyError("k"),))
        ok = caught.wait(30)
        refuse = False
        p.disable()
        print(ok)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True", (out.stdout, out.stderr)
    assert "RuntimeError: refused" in out.stderr
    assert "SystemError" not in out.stderr


# A second profiler beside a threads=True one (issue 24). On 3.10/3.11 a thread has one profile
# hook, and the one set last in a thread wins there, as between two cProfiles; on 3.12+
# sys.monitoring has one profiler tool, so a second profiler is refused (sys.setprofile
# functions run beside it).


def before_second():
    return rec(2)


def under_second():
    return rec(3)


def after_second():
    return rec(1)


def _second_profiler_run(kind):
    """In the calling thread: before_second(), then under_second() with a second profiler of
    `kind` enabled (if it can be), then after_second(). Returns what the second profiler recorded, or the
    ValueError its enable() raised."""
    before_second()
    if kind == "setprofile":
        calls = {}

        def count(frame, event, arg):
            if event == "call":
                calls[frame.f_code.co_name] = calls.get(frame.f_code.co_name, 0) + 1

        sys.setprofile(count)
        under_second()
        sys.setprofile(None)
        recorded = calls
    else:
        p2 = cProfile.Profile() if kind == "cProfile" else rprofile.Profile()
        try:
            p2.enable()
        except ValueError as e:
            recorded, p2 = e, None
        under_second()
        if p2 is not None:
            p2.disable()
            p2.create_stats()
            # The counts, of calls and by caller (not the times).
            recorded = {k: (v[:2], sorted((c, cv[:2]) for c, cv in v[4].items()))
                        for k, v in p2.stats.items()}
    after_second()
    return recorded


def _run_in(where, fn, prof=None):
    """fn() in the thread that enables `prof` (if given), in a thread already running at
    enable(), or in one started after it; returns its result."""
    if where == "enabling thread":
        if prof is not None:
            prof.enable()
        try:
            return fn()
        finally:
            if prof is not None:
                prof.disable()
    go = threading.Event()
    out = []

    def body():
        go.wait()
        try:
            out.append(fn())
        except BaseException as e:
            out.append(e)

    t = threading.Thread(target=body)
    if where == "running thread":
        t.start()
    if prof is not None:
        prof.enable()
    try:
        if where == "later thread":
            t.start()
        go.set()
        t.join()
    finally:
        if prof is not None:
            prof.disable()
    return out[0]


@pytest.mark.parametrize("where", ["enabling thread", "running thread", "later thread"])
@pytest.mark.parametrize("kind", ["cProfile", "rprofile", "setprofile"])
def test_a_second_profiler_beside_a_threads_profiler(kind, where):
    alone = _run_in(where, lambda: _second_profiler_run(kind))
    assert isinstance(alone, dict) and alone
    p1 = rprofile.Profile(threads=True)
    beside = _run_in(where, lambda: _second_profiler_run(kind), p1)
    p1.create_stats()
    names = ("before_second", "under_second", "after_second", "rec")
    seen = {k[2]: v[:2] for k, v in p1.stats.items() if k[2] in names}
    everything = {"before_second": (1, 1), "under_second": (1, 1), "after_second": (1, 1),
                  "rec": (3, 9)}
    if sys.version_info >= (3, 12):
        if kind == "setprofile":
            assert beside == alone
        else:
            assert isinstance(beside, ValueError), beside
            assert str(beside) == TOOL_BUSY
        assert seen == everything
    else:
        # The second profiler records what it records alone; the first one records nothing
        # more in that thread, even after the second is disabled (as with two cProfiles).
        assert beside == alone
        assert seen == {"before_second": (1, 1), "rec": (1, 3)}


def hooked_thread_work(done):
    rec(2)
    done.set()


def _thread_hooked_before_its_first_frame(prof=None):
    """Starts a _thread thread that sets a sys.setprofile function by C calls alone, before
    its first Python frame, then runs hooked_thread_work(); `prof` is enabled meanwhile.
    Returns the calls the function saw."""
    import _thread
    import functools
    import operator

    calls = []

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_name in ("hooked_thread_work", "rec"):
            calls.append(frame.f_code.co_name)

    done = threading.Event()
    # The thread removes its function before it ends: on 3.12 a thread that ends with one
    # leaves the interpreter's legacy profiling on, and the pure-Python `profile` module's
    # later runs in other tests then fail ("Bad return").
    steps = [functools.partial(sys.setprofile, count),
             functools.partial(hooked_thread_work, done), functools.partial(sys.setprofile, None)]
    if prof is not None:
        prof.enable()
    try:
        _thread.start_new_thread(list, (map(operator.methodcaller("__call__"), steps),))
        assert done.wait(30)
    finally:
        if prof is not None:
            prof.disable()
    return calls


def test_a_thread_hooked_before_its_first_frame_keeps_its_hook():
    assert _thread_hooked_before_its_first_frame() == ["hooked_thread_work", "rec", "rec", "rec"]
    p1 = rprofile.Profile(threads=True)
    assert _thread_hooked_before_its_first_frame(p1) == [
        "hooked_thread_work", "rec", "rec", "rec"]
    p1.create_stats()
    seen = {k[2]: v[:2] for k, v in p1.stats.items() if k[2] in ("hooked_thread_work", "rec")}
    if sys.version_info >= (3, 12):
        assert seen == {"hooked_thread_work": (1, 1), "rec": (1, 3)}
    else:
        assert seen == {}


def test_enable_and_disable_record_none_of_the_profilers_own_calls():
    # threads=True hooks the threads threading starts; its own calls to do so (and the import
    # of threading, when the program had not imported it) are not the program's.
    code = textwrap.dedent("""\
        import sys
        import rprofile

        assert "threading" not in sys.modules
        prof = rprofile.Profile(threads=True)
        prof.enable()
        sum(range(10))
        prof.disable()
        prof.create_stats()
        print(sorted("%s:%s" % (k[0].rsplit("/", 1)[-1], k[2]) for k in prof.stats))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("['~:<built-in method builtins.sum>', "
                                   "\"~:<method 'disable' of '_lsprof.Profiler' objects>\"]")
    # With threading imported and a thread started: threading's code, nothing of ours.
    prof = rprofile.Profile(threads=True)
    prof.enable()
    t = threading.Thread(target=sum, args=([1, 2],))
    t.start()
    t.join()
    prof.disable()
    prof.create_stats()
    names = {k[2] for k in prof.stats if k[0].endswith("threading.py")}
    assert "start" in names and "join" in names
    assert not names & {"setprofile", "getprofile", "setprofile_all_threads"}
