"""Robustness: rprofile must never crash and never lie.

Every scenario that could bring the interpreter down runs in a child process
(``sys.executable scenario.py <module> ...``), so a crash shows up as a failing return code
instead of killing the test run. The child prints one JSON result line; the parent checks it.

Expected values come from the specification (exact call counts we can derive from the
workload) or from ``cProfile`` running the very same scenario on the same interpreter, in a
child of its own. A counting timer (each call returns the next integer) makes times
deterministic, so where both profilers read the timer at the same moments whole stats tables,
times included, are compared.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

import rprofile

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)
# What enable() says when the profiler tool id is taken: 3.14 lets sys.monitoring's words out.
TOOL_BUSY = ("tool 2 is already in use" if sys.version_info >= (3, 14)
             else "Another profiling tool is already active")
RESULT_MARK = "@@RESULT@@"

# What every child script starts with: the profiler module named by argv[1], a counting timer,
# a stats table in JSON-able form, an unraisable-hook recorder and the result printer.
PRELUDE = r'''
import gc, importlib, json, os, sys
MODNAME = sys.argv[1]
mod = importlib.import_module(MODNAME)


class Tick:
    """A counting timer: each call returns the next integer."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n


def label_of(key):
    return "%s:%d(%s)" % (os.path.basename(key[0]), key[1], key[2])


def table(prof, times=True, snapshot=False):
    """{label: [cc, nc, (tt, ct,) sorted callers]} from the profiler's stats dict."""
    if snapshot:
        prof.snapshot_stats()
    else:
        prof.create_stats()
    out = {}
    for key, (cc, nc, tt, ct, callers) in prof.stats.items():
        row = [cc, nc] + ([tt, ct] if times else [])
        row.append(sorted([label_of(c)] + list(v[:2]) + (list(v[2:4]) if times else [])
                          for c, v in callers.items()))
        out[label_of(key)] = row
    return out


def calls_of(tab, name):
    """nc of the one row for function `name` (0 if absent)."""
    rows = [v for k, v in tab.items() if k.endswith("(%s)" % name)]
    assert len(rows) <= 1, (name, rows)
    return rows[0][1] if rows else 0


class Unraisable:
    """Records what reaches sys.unraisablehook as [type name, message] in `seen`, and how it
    is introduced (the hook's err_msg without addresses, the object's type name) in `how`."""

    def __enter__(self):
        import re
        self.seen = []
        self.how = []
        self.old = sys.unraisablehook

        def hook(u):
            self.seen.append([type(u.exc_value).__name__, str(u.exc_value)])
            self.how.append([re.sub(r" at 0x[0-9a-f]+", "", u.err_msg or ""),
                             type(u.object).__name__])
        sys.unraisablehook = hook
        return self

    def __exit__(self, *exc):
        sys.unraisablehook = self.old


def work_a():
    return 1


def work_b():
    return 2


def work_c():
    return 3


def counts(prof):
    tab = table(prof, times=False)
    return {n: calls_of(tab, n) for n in ("work_a", "work_b", "work_c")}


def outcome(call):
    try:
        call()
        return "ok"
    except Exception as e:
        return [type(e).__name__, str(e)]


def emit(result):
    sys.stdout.write("\n" + "@@RESULT@@" + json.dumps(result) + "\n")
    sys.stdout.flush()
'''


def run_child(body, module="rprofile", *args, timeout=300):
    """Runs PRELUDE + body as a script with argv [module, *args]; returns its emitted result.

    Fails (with the child's output) unless the child exits with status 0."""
    import tempfile

    script = PRELUDE + textwrap.dedent(body)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "scenario.py")
        with open(path, "w") as f:
            f.write(script)
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [sys.executable, "-X", "faulthandler", path, module, *map(str, args)],
            cwd=d, capture_output=True, text=True, timeout=timeout, env=env,
        )
    detail = "child %s %s exited with %s\n--- stdout\n%s\n--- stderr\n%s" % (
        module, list(args), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, detail
    results = [line[len(RESULT_MARK):] for line in proc.stdout.splitlines()
               if line.startswith(RESULT_MARK)]
    assert results, "child printed no result\n" + detail
    return json.loads(results[-1])


def both(body, *args, **kw):
    """The result of the scenario under rprofile and under cProfile."""
    return run_child(body, "rprofile", *args, **kw), run_child(body, "cProfile", *args, **kw)


# ---------------------------------------------------------------------------------------------
# Strong references: thousands of short-lived code objects.

TRANSIENT = r'''
N = 3000
CLEAR_EVERY = int(sys.argv[2])


def driver(prof):
    ns = {}
    for i in range(N):
        exec("def f%d(x):\n    return x + %d\n" % (i, i), ns)
        f = ns.pop("f%d" % i)
        for _ in range(i % 3 + 1):
            f(i)
        del f  # the function and (unless the profiler keeps it) its code object die here
        if CLEAR_EVERY and i % CLEAR_EVERY == CLEAR_EVERY - 1:
            prof.clear()


prof = mod.Profile(Tick(), 1.0)
prof.runcall(driver, prof)
tab = table(prof)
# Each exec compiled its own "<module>" code object; pstats keys collide for them (the stats
# dict keeps one), getstats() lists each.
modules = [e.callcount for e in prof.getstats()
           if not isinstance(e.code, str) and e.code.co_name == "<module>"]
emit({"table": tab, "module_entries": modules})
'''


def test_thousands_of_dying_code_objects_are_counted_exactly():
    result, ref = both(TRANSIENT, 0)
    assert result["module_entries"] == [1] * 3000
    assert result == ref
    mine = result["table"]
    # Spec: f<i> is its own function, called i % 3 + 1 times, by `driver`; no entry is merged
    # with another one whose code object died (address reuse) and none is lost.
    rows = {k: v for k, v in mine.items() if k.startswith("<string>:1(f")}
    assert len(rows) == 3000
    for i in range(3000):
        cc, nc = rows["<string>:1(f%d)" % i][:2]
        assert (cc, nc) == (i % 3 + 1, i % 3 + 1), i
        callers = rows["<string>:1(f%d)" % i][-1]
        assert [c[0].split(":")[0] + "(" + c[0].split("(")[1] for c in callers] == [
            "scenario.py(driver)"]
        assert callers[0][1:3] == [i % 3 + 1, i % 3 + 1]
    # (and above: the whole table - counts, callers, counting-timer times - is cProfile's)


def test_dying_code_objects_with_clear_in_between():
    result, ref = both(TRANSIENT, 700)
    assert result == ref
    mine = result["table"]
    assert result["module_entries"] == [1] * 200
    # The last clear() happens after f2799: exactly f2800..f2999 remain, with their counts.
    names = sorted(int(k[len("<string>:1(f"):-1]) for k in mine if k.startswith("<string>:1(f"))
    assert names == list(range(2800, 3000))
    for i in names:
        assert mine["<string>:1(f%d)" % i][:2] == [i % 3 + 1, i % 3 + 1]


# ---------------------------------------------------------------------------------------------
# Python timers that raise or return the wrong thing.

TIMERS = r'''
KIND = sys.argv[2]


class Raising(Tick):
    def __call__(self):
        n = Tick.__call__(self)
        if n % 3 == 0:
            raise ZeroDivisionError("tick %d" % n)
        return n


def make_timer():
    t = Tick()
    return {
        "raises": (Raising(), 1.0),
        "str": (lambda: "12", None),
        "none": (lambda: None, None),
        "object": (lambda: object(), None),
        "float_with_unit": (lambda: t() + 0.5, 1.0),
        "float_seconds": (lambda: t() * 0.5, None),
        "nan": (lambda: float("nan"), None),
        "overflow_float": (lambda: 1e300, None),
        "overflow_int_unit": (lambda: 2 ** 70, 1.0),
        "overflow_int": (lambda: 2 ** 70, None),
    }[KIND]


def leaf(i):
    return i


def work(n):
    return sum([leaf(i) for i in range(n)])


timer, unit = make_timer()
prof = mod.Profile(timer, unit) if unit is not None else mod.Profile(timer)
with Unraisable() as u:
    result = prof.runcall(work, 4)
    tab = table(prof)
emit({"result": result, "unraisable": u.seen, "how": u.how, "table": tab})
'''


@pytest.mark.parametrize("kind", ["raises", "str", "none", "object", "float_with_unit", "nan"])
def test_bad_timer_is_reported_as_unraisable_like_cprofile(kind):
    mine, ref = both(TIMERS, kind)
    assert mine["result"] == 6  # the run goes on
    assert mine["unraisable"], "the timer's error must reach sys.unraisablehook"
    assert mine["table"], "stats are still produced"
    assert any(k.endswith("(leaf)") and v[1] == 4 for k, v in mine["table"].items())
    # Same reports (type and message), same count of them, and the same table, since a failed
    # timer read counts as 0 in both.
    assert mine == ref


@pytest.mark.parametrize("kind", ["overflow_float", "overflow_int_unit", "overflow_int"])
def test_out_of_range_timer_is_reported_like_cprofile(kind):
    mine, ref = both(TIMERS, kind)
    # The message of the OverflowError differs between CPython versions (and from ours); the
    # type, the number of reports and the table must not.
    assert [t for t, _ in mine["unraisable"]] == [t for t, _ in ref["unraisable"]]
    assert {t for t, _ in mine["unraisable"]} == {"OverflowError"}
    assert mine["how"] == ref["how"]
    assert mine["result"] == ref["result"] == 6
    assert mine["table"] == ref["table"]


def test_float_seconds_timer_matches_cprofile():
    mine, ref = both(TIMERS, "float_seconds")
    assert mine["unraisable"] == []
    assert mine == ref


TUPLE_TIMERS = r'''
KIND = sys.argv[2]
t = Tick()
timer, unit = {
    "tuple_int": (lambda: (t(), 2 * t.n), 1.0),          # n + 2n
    "sum_int": (lambda: 3 * t(), 1.0),
    "list_float": (lambda: [t() * 0.5, t.n * 0.25], None),  # 0.75 n seconds
    "sum_float": (lambda: t() * 0.75, None),
    "tuple_bad_item": (lambda: (t(), "x"), 1.0),
}[KIND]


def leaf(i):
    return i


def work(n):
    return [leaf(i) for i in range(n)]


prof = mod.Profile(timer, unit) if unit is not None else mod.Profile(timer)
with Unraisable() as u:
    prof.runcall(work, 3)
    tab = table(prof)
emit({"unraisable": u.seen, "table": tab})
'''


@pytest.mark.parametrize("tuple_kind,sum_kind", [("tuple_int", "sum_int"),
                                                 ("list_float", "sum_float")])
def test_timer_returning_a_sequence_counts_its_sum(tuple_kind, sum_kind):
    summed = run_child(TUPLE_TIMERS, "rprofile", tuple_kind)
    plain = run_child(TUPLE_TIMERS, "rprofile", sum_kind)
    assert summed["unraisable"] == []
    # Spec: a tuple/list is the sum of its items, so the stats are those of a timer returning
    # the sum.
    assert summed["table"] == plain["table"]
    top = [v for k, v in summed["table"].items() if k.endswith("(work)")][0]
    assert top[3] > 0


def test_timer_returning_a_sequence_with_a_bad_item_is_unraisable():
    out = run_child(TUPLE_TIMERS, "rprofile", "tuple_bad_item")
    assert out["unraisable"] and {t for t, _ in out["unraisable"]} == {"TypeError"}
    assert any(k.endswith("(leaf)") and v[1] == 3 for k, v in out["table"].items())


# ---------------------------------------------------------------------------------------------
# disable() / clear() from profiled code and from the timer.

INSIDE = r'''
WHAT = sys.argv[2]
holder = []


def leaf(i):
    return i


def f():
    leaf(1)
    if WHAT == "disable":
        holder[0].disable()
    elif WHAT == "clear":
        holder[0].clear()
    elif WHAT == "reenable":
        holder[0].disable()
        leaf(2)
        holder[0].enable()
    elif WHAT == "snapshot":
        holder[0].snapshot_stats()
    leaf(3)


def g():
    f()
    leaf(4)


prof = mod.Profile(Tick(), 1.0)
holder.append(prof)
prof.enable()
g()
leaf(5)
prof.disable()
emit(table(prof))
'''


@pytest.mark.parametrize("what", ["disable", "clear", "reenable", "snapshot"])
def test_disable_and_clear_from_profiled_code_match_cprofile(what):
    mine, ref = both(INSIDE, what)
    if what == "snapshot":
        # snapshot_stats() is Python code of each profiler's own (its rows and the timer ticks
        # it takes differ); the workload's counts must not.
        ours = lambda t: {k: v[:2] for k, v in t.items() if k.startswith("scenario.py")}  # noqa
        assert ours(mine) == ours(ref)
        assert sorted(v[1] for v in ours(mine).values()) == [1, 1, 4]
    else:
        assert mine == ref
    if what == "disable":
        # Spec: nothing after the disable() is recorded: leaf ran once while enabled.
        assert [v[1] for k, v in mine.items() if k.endswith("(leaf)")] == [1]


IN_TIMER = r'''
WHAT, MODE = sys.argv[2], sys.argv[3]
holder, caught = [], []


class T(Tick):
    def __call__(self):
        n = Tick.__call__(self)
        if n == 5:
            if MODE == "reference":  # what the refusal must amount to: a timer that raises
                raise RuntimeError("cannot %s profiler in external timer" % WHAT)
            if MODE == "propagate":
                getattr(holder[0], WHAT)()
            elif MODE == "catch":
                try:
                    getattr(holder[0], WHAT)()
                except RuntimeError as e:
                    caught.append(str(e))
        return n


def leaf(i):
    return i


def work(n):
    return [leaf(i) for i in range(n)]


prof = mod.Profile(T(), 1.0)
holder.append(prof)
with Unraisable() as u:
    prof.runcall(work, 3)
    tab = table(prof)
emit({"unraisable": u.seen, "caught": caught, "table": tab})
'''


@pytest.mark.parametrize("what", ["disable", "clear"])
def test_disable_or_clear_inside_the_timer_is_refused(what):
    message = "cannot %s profiler in external timer" % what
    propagated = run_child(IN_TIMER, "rprofile", what, "propagate")
    reference = run_child(IN_TIMER, "rprofile", what, "reference")
    caught = run_child(IN_TIMER, "rprofile", what, "catch")
    plain = run_child(IN_TIMER, "rprofile", what, "plain")
    # Spec: RuntimeError, reported through sys.unraisablehook since it escapes the timer, and
    # the profile goes on unharmed: exactly as if the timer had raised that error itself.
    assert propagated["unraisable"] == [["RuntimeError", message]]
    assert propagated == reference
    # Caught inside the timer, the refusal has no effect at all.
    assert caught["caught"] == [message]
    assert caught["unraisable"] == []
    assert caught["table"] == plain["table"]
    if PY313:  # cProfile has this guard from 3.13 (3.12.1's cProfile crashes on clear()).
        assert propagated == run_child(IN_TIMER, "cProfile", what, "propagate")


# ---------------------------------------------------------------------------------------------
# Threads.

THREADS = r'''
import threading
SCEN = sys.argv[2]



out = {}
p = mod.Profile()
if SCEN == "disable_elsewhere":
    go, back = threading.Event(), threading.Event()

    def other():
        go.wait(30)
        out["other_disable"] = outcome(p.disable)
        work_c()
        back.set()

    t = threading.Thread(target=other)
    t.start()
    p.enable()
    work_a()
    go.set()
    back.wait(30)
    work_b()
    t.join()
    out["main_disable"] = outcome(p.disable)
else:
    ready, back = threading.Event(), threading.Event()

    def other():
        p.enable()
        work_a()
        ready.set()
        back.wait(30)
        work_c()

    t = threading.Thread(target=other)
    t.start()
    ready.wait(30)
    work_b()
    back.set()
    t.join()
    out["main_disable"] = outcome(p.disable)
out["counts"] = counts(p)
# Afterwards a new profiler works.
q = mod.Profile()
out["fresh_enable"] = outcome(q.enable)
work_a()
q.disable()
out["fresh"] = counts(q)
emit(out)
'''


@pytest.mark.parametrize("scenario", ["disable_elsewhere", "enable_elsewhere"])
def test_enable_in_one_thread_disable_in_another(scenario):
    mine, ref = both(THREADS, scenario)
    assert mine == ref
    assert mine["counts"]["work_a"] == 1
    assert mine["fresh"] == {"work_a": 1, "work_b": 0, "work_c": 0}


STRESS = r'''
import threading, time
KIND = sys.argv[2]
N, T = 3000, 4
sys.setswitchinterval(1e-6)


def leaf(i):
    return i


def body():
    for i in range(N):
        leaf(i)


def pytimer():
    x = 0
    for i in range(5):  # bytecode: the GIL may pass to another thread in here
        x += i
    return time.perf_counter()


timer = {"clock": None, "ctimer": time.perf_counter, "pytimer": pytimer}[KIND]
prof = mod.Profile(timer) if timer else mod.Profile()
out = {}
with Unraisable() as u:
    prof.enable()
    threads = [threading.Thread(target=body) for _ in range(T)]
    for t in threads:
        t.start()
    body()
    for t in threads:
        t.join()
    try:
        prof.disable()
        out["disable"] = "ok"
    except RuntimeError as e:
        out["disable"] = str(e)
    tab = table(prof, times=False, snapshot=True)
out["unraisable"] = u.seen
out["leaf"] = calls_of(tab, "leaf")
out["body"] = calls_of(tab, "body")
out["cc_le_nc"] = all(v[0] <= v[1] for v in tab.values())
emit(out)
if out["disable"] != "ok":
    os._exit(0)  # a profiler that cannot be disabled would keep timing the shutdown
'''


@pytest.mark.parametrize("kind", ["clock", "ctimer", "pytimer"])
def test_threads_hammering_one_profiler(kind):
    out = run_child(STRESS, "rprofile", kind)
    # Spec: 3.12+ profiles every thread (sys.monitoring is global); before, only the thread
    # that called enable(). Every call is counted exactly once.
    threads = 5 if PY312 else 1
    assert out["leaf"] == 3000 * threads
    assert out["body"] == threads
    assert out["unraisable"] == []
    assert out["cc_le_nc"]
    if kind != "pytimer":  # (cProfile livelocks with a Python timer and threads on 3.12+)
        assert out["disable"] == "ok"
        ref = run_child(STRESS, "cProfile", kind)
        assert (out["leaf"], out["body"]) == (ref["leaf"], ref["body"])


IN_TIMER_RACE = r'''
import threading, time
main = threading.main_thread()
a_in, b_in = threading.Event(), threading.Event()
armed, done = [False], {"a": False, "b": False}


def timer():
    t = threading.current_thread()
    if t is main and armed[0] and not done["a"]:
        done["a"] = True
        a_in.set()       # the main thread is inside the timer...
        b_in.wait(10)    # ...and lets the worker's event run the timer too
    elif t is not main and a_in.is_set() and not done["b"]:
        done["b"] = True
        b_in.set()
        time.sleep(0.2)  # the main thread leaves its timer meanwhile
    return time.perf_counter()


def leaf():
    return 1


p = mod.Profile(timer)
out = {}


def worker():
    if sys.version_info < (3, 12):
        p.enable()  # before 3.12 the hook is per thread
    a_in.wait(10)
    leaf()
    if sys.version_info < (3, 12):
        try:
            p.disable()
            out["worker_disable"] = "ok"
        except RuntimeError as e:
            out["worker_disable"] = str(e)


p.enable()
w = threading.Thread(target=worker)
w.start()
armed[0] = True
leaf()
w.join()
out["both_timers_overlapped"] = done["a"] and done["b"]
try:
    p.disable()
    out["disable"] = "ok"
except RuntimeError as e:
    out["disable"] = str(e)
emit(out)
if out["disable"] != "ok":
    os._exit(0)
'''


def test_overlapping_timer_calls_in_two_threads_do_not_wedge_the_profiler():
    out = run_child(IN_TIMER_RACE, "rprofile")
    assert out["both_timers_overlapped"]
    # Spec: only a call made from inside the timer is refused; here no timer is running.
    assert out.get("worker_disable", "ok") == "ok"
    assert out["disable"] == "ok"


PYTIMER_SHARED_STACK = r'''
import threading, time
KIND = sys.argv[2]
T, N = 3, int(sys.argv[3])
sys.setswitchinterval(1e-6)  # many GIL hand-overs, some of them inside the timer
start = threading.Barrier(T)  # the three run side by side


def leaf(i):
    return i + 1


def mid(i):
    return leaf(i) * 2


def work():
    start.wait()
    for i in range(N):
        mid(i)


def sleeping_timer():
    time.sleep(0)  # lets the other threads run (and deliver events) inside the timer
    return time.perf_counter()


timer = {"plain": lambda: time.perf_counter(), "sleep0": sleeping_timer}[KIND]
prof = mod.Profile(timer)  # threads=False: on 3.12+ every thread's events share one stack
threads = [threading.Thread(target=work) for _ in range(T)]
with Unraisable() as u:
    w0 = time.perf_counter()
    prof.enable()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prof.disable()
    wall = time.perf_counter() - w0
prof.create_stats()
emit({"wall": wall, "unraisable": u.seen,
      "rows": [[f[2], cc, nc, tt, ct] for f, (cc, nc, tt, ct, callers) in prof.stats.items()]})
'''


@pytest.mark.parametrize("kind, n", [("plain", 20000), ("sleep0", 2000)])
def test_python_timer_with_threads_on_one_stack_gives_sane_times(kind, n):
    out = run_child(PYTIMER_SHARED_STACK, "rprofile", kind, n)
    assert out["unraisable"] == []
    calls = {name: nc for name, _, nc, _, _ in out["rows"]}
    # Counts: 3.12+ sees the 3 workers' calls (sys.monitoring is global), 3.10/3.11 only the
    # enabling thread's, as cProfile.
    assert calls.get("mid", 0) == calls.get("leaf", 0) == (3 * n if PY312 else 0)
    # Times. A start of 0, or a reading older than a call already on the stack, shows at once:
    # times off by about the timer's value (perf_counter's: seconds since boot), either sign.
    # Bounds that hold on the one stack whatever the interleaving, with `wall` the span from
    # before enable() to after disable() (it contains every timer reading used):
    # - tottime: at each moment the time goes to the one call on top of the stack, so the
    #   tottimes share out the profiled span: each is >= 0 and together they are <= wall. (This
    #   is below the wall-time-per-thread bound, wall * 4 on 3.12+.)
    # - cumtime: each of a function's outermost calls (`cc`) adds the span of the call it
    #   closes, inside the run: between 0 and cc * wall. Not wall * threads: a thread's return
    #   closes whatever call is on top, maybe one another thread opened long before, as in
    #   cProfile (with its own clock, two threads can give one function 6 * wall).
    wall = out["wall"]
    for name, cc, _, tt, ct in out["rows"]:
        assert 0 <= tt <= wall, (name, tt, wall)
        assert 0 <= ct <= cc * wall, (name, cc, ct, wall)
    assert sum(tt for _, _, _, tt, _ in out["rows"]) <= wall


# ---------------------------------------------------------------------------------------------
# A profiler collected while enabled.

COLLECTED = r'''
import weakref
CYCLE = sys.argv[2] == "cycle"



out = {}
if CYCLE:  # profiler -> timer -> profiler: only the garbage collector can free it
    timer = Tick()
    p = mod.Profile(timer, 1.0)
    timer.prof = p
    del timer
else:
    p = mod.Profile()
p.enable()
work_a()
ref = weakref.ref(p)
del p
gc.collect()
out["alive_after_collect"] = ref() is not None
work_a()
q = mod.Profile()
out["second_enable"] = outcome(q.enable)
work_b()
q.disable()
out["second"] = counts(q)
gc.collect()
out["alive_after_second"] = ref() is not None
if sys.version_info >= (3, 12):
    M = sys.monitoring
    out["tool_taken"] = M.get_tool(M.PROFILER_ID) is not None
    # Release what the lost profiler holds, by hand.
    M.set_events(M.PROFILER_ID, 0)
    for name in dir(M.events):
        ev = getattr(M.events, name)
        if isinstance(ev, int) and ev and not ev & (ev - 1):
            M.register_callback(M.PROFILER_ID, ev, None)
    M.free_tool_id(M.PROFILER_ID)
    gc.collect()
    out["alive_after_release"] = ref() is not None
    r = mod.Profile()
    out["third_enable"] = outcome(r.enable)
    work_b()
    r.disable()
    out["third"] = counts(r)
emit(out)
'''


def test_profiler_collected_while_enabled_behaves_like_cprofile():
    mine, ref = both(COLLECTED, "plain")
    assert mine == ref
    if PY312:
        # The still-registered callbacks keep the lost profiler alive and the tool id taken.
        assert mine["alive_after_collect"] and mine["tool_taken"]
        assert mine["second_enable"] == ["ValueError", TOOL_BUSY]
        assert not mine["alive_after_release"]
        assert mine["third_enable"] == "ok"
        assert mine["third"] == {"work_a": 0, "work_b": 1, "work_c": 0}
    else:
        # The thread state keeps it alive until the next profiler replaces the hook.
        assert mine["alive_after_collect"] and not mine["alive_after_second"]
        assert mine["second_enable"] == "ok"
        assert mine["second"] == {"work_a": 0, "work_b": 1, "work_c": 0}


def test_profiler_in_a_reference_cycle_collected_while_enabled():
    mine = run_child(COLLECTED, "rprofile", "cycle")
    # Spec: as soon as nothing but the cycle (profiler -> timer -> profiler) refers to the
    # profiler, the garbage collector frees it: before 3.12 once another profiler has replaced
    # the hook, from 3.12 once the monitoring callbacks are released. (cProfile's profiler is
    # not traversable before 3.13 and leaks such a cycle; 3.13's behaves as specified.)
    assert mine["alive_after_collect"]
    if PY312:
        assert mine["second_enable"] == ["ValueError", TOOL_BUSY]
        assert not mine["alive_after_release"]
        assert mine["third"] == {"work_a": 0, "work_b": 1, "work_c": 0}
    else:
        assert mine["second_enable"] == "ok"
        assert not mine["alive_after_second"]
    if PY313:
        assert mine == run_child(COLLECTED, "cProfile", "cycle")


def test_python_timer_references_do_not_pile_up_while_profiling():
    import cProfile

    def refcounts(module):
        timer = _Tick()
        p = module.Profile(timer, 1.0)
        base = sys.getrefcount(timer)
        p.enable()
        for _ in range(1000):
            _leaf()
        during = sys.getrefcount(timer)
        p.disable()
        return base, during, sys.getrefcount(timer)

    ref = refcounts(cProfile)
    assert ref[0] == ref[1] == ref[2]
    assert refcounts(rprofile) == ref


# ---------------------------------------------------------------------------------------------
# Deep recursion.

RECURSION = r'''
N, KIND = int(sys.argv[2]), sys.argv[3]
sys.setrecursionlimit(N + 1000 if KIND == "deep" else 3000)


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


def unbounded(n):
    return unbounded(n + 1)


def driver():
    if KIND == "deep":
        return rec(N)
    try:
        unbounded(0)
    except RecursionError:
        return "RecursionError"


prof = mod.Profile(Tick(), 1.0)
result = prof.runcall(driver)
tab = table(prof)
emit({"result": result,
      "rows": {k: v for k, v in tab.items() if k.endswith(("(rec)", "(unbounded)", "(driver)"))}})
'''


def test_recursion_20000_deep():
    n = 8000 if sys.version_info < (3, 11) else 20000
    mine, ref = both(RECURSION, n, "deep")
    assert mine["result"] == n
    rec = [v for k, v in mine["rows"].items() if k.endswith("(rec)")][0]
    # Spec: n + 1 calls of rec, one of them primitive; rec calls itself n times, driver once
    # (each edge's primitive count is 1, as _lsprof counts an edge's recursion).
    assert rec[:2] == [1, n + 1]
    callers = {c[0].split("(")[1][:-1]: c[1:3] for c in rec[-1]}
    assert callers == {"rec": [n, 1], "driver": [1, 1]}
    assert mine == ref


def test_recursion_error_under_profiling_matches_cprofile():
    mine, ref = both(RECURSION, 0, "unbounded")
    assert mine["result"] == "RecursionError"
    assert mine == ref


# ---------------------------------------------------------------------------------------------
# KeyboardInterrupt in the middle of a run.

INTERRUPT = r'''
import _thread, signal, threading, time
KIND = sys.argv[2]
# Python leaves SIGINT ignored when it starts ignoring it, as a shell's background job does:
# KeyboardInterrupt is what this scenario is about, whoever started the tests.
signal.signal(signal.SIGINT, signal.default_int_handler)
count = [0]


def step(i):
    count[0] += 1
    return i * 2


def raiser():
    raise KeyboardInterrupt("from code")


def mid():
    step(1)
    raiser()


def spin():
    if KIND == "interrupt_main":
        _thread.interrupt_main()
    elif KIND == "kill":
        os.kill(os.getpid(), signal.SIGINT)
    elif KIND == "raise_signal":
        signal.raise_signal(signal.SIGINT)
    elif KIND == "thread":
        threading.Timer(0.05, _thread.interrupt_main).start()
    deadline = time.monotonic() + 60
    i = 0
    while time.monotonic() < deadline:
        step(i)
        i += 1
    return "not interrupted"


prof = mod.Profile(Tick(), 1.0) if KIND == "code" else mod.Profile()
out = {"interrupted": False}
try:
    out["returned"] = prof.runcall(mid if KIND == "code" else spin)
except KeyboardInterrupt:
    out["interrupted"] = True
tab = table(prof, times=KIND == "code")
out["step_runs"] = count[0]
out["rows"] = {k: v for k, v in tab.items()
               if k.endswith(("(step)", "(spin)", "(mid)", "(raiser)"))}
emit(out)
'''


@pytest.mark.parametrize("kind", ["code", "interrupt_main", "kill", "raise_signal", "thread"])
def test_keyboard_interrupt_mid_run(kind):
    mine, ref = both(INTERRUPT, kind)
    assert mine["interrupted"] and ref["interrupted"]
    rows = mine["rows"]
    step = [v for k, v in rows.items() if k.endswith("(step)")]
    # Spec: every call of step that started (even the one interrupted) is counted once; the
    # interrupt may land in step before its first line has counted the run.
    assert (step[0][1] if step else 0) - mine["step_runs"] in (0, 1)
    if kind == "code":
        assert mine == ref  # deterministic: whole rows, counting-timer times included
    elif kind == "thread":
        # Where the interrupt lands is timing: compare what does not depend on it.
        spin = [v[1] for k, v in rows.items() if k.endswith("(spin)")]
        if (step[0][1] if step else 0) == mine["step_runs"]:
            assert spin == [1]
        else:
            # The interrupt landed on the entry of step. 3.13 then may deliver PY_UNWIND for a
            # step whose PY_START never came; _lsprof's rule (a leave closes the top call and
            # charges it to the function named by the event) then closes spin's call as a step
            # call, and spin's own unwind finds the stack empty. cProfile does exactly the same.
            assert spin in ([1], [])
        assert set(rows) <= {k for k in list(ref["rows"]) + list(rows)
                             if k.endswith(("(step)", "(spin)"))}
    else:
        assert mine["rows"] == ref["rows"]
        assert mine["step_runs"] == ref["step_runs"]


# ---------------------------------------------------------------------------------------------
# os.fork() while profiling.

FORK = r'''
EXIT = sys.argv[2]


def before():
    return 1


def child_work():
    return 2


def parent_work():
    return 3


def counts(tab):
    return {n: calls_of(tab, n) for n in ("before", "child_work", "parent_work")}


p = mod.Profile()
p.enable()
before()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        child_work()
        child_work()
        # os._exit: stats taken (and the profiler disabled) first; sys.exit: the child shuts
        # the interpreter down with the profiler still enabled.
        tab = table(p, times=False, snapshot=(EXIT == "sys_exit"))
        os.write(w, json.dumps(counts(tab)).encode())
    finally:
        os.close(w)
        if EXIT == "os_exit":
            os._exit(0)
    sys.exit(0)
os.close(w)
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
os.close(r)
_, status = os.waitpid(pid, 0)
parent_work()
emit({"child_exit": os.waitstatus_to_exitcode(status),
      "child": json.loads(data.decode() or "null"),
      "parent": counts(table(p, times=False))})
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("exit_kind", ["os_exit", "sys_exit"])
def test_fork_while_profiling(exit_kind):
    mine, ref = both(FORK, exit_kind)
    assert mine["child_exit"] == 0
    assert mine["child"] == {"before": 1, "child_work": 2, "parent_work": 0}
    assert mine["parent"] == {"before": 1, "child_work": 0, "parent_work": 1}
    assert mine == ref


# ---------------------------------------------------------------------------------------------
# A second profiler while one runs.

SECOND = r'''
A, B = sys.argv[2], sys.argv[3]
ma, mb = importlib.import_module(A), importlib.import_module(B)



out = {}
p1, p2 = ma.Profile(), mb.Profile()
p1.enable()
work_a()
out["enable2"] = outcome(p2.enable)
work_b()
out["disable2"] = outcome(p2.disable)
work_c()
out["disable1"] = outcome(p1.disable)
out["p1"], out["p2"] = counts(p1), counts(p2)
# Everything is released afterwards: a new profiler of either kind works.
for which, m in (("after_first", ma), ("after_second", mb)):
    q = m.Profile()
    out[which] = [outcome(q.enable), outcome(work_a), outcome(q.disable), counts(q)]
emit(out)
'''


@pytest.mark.parametrize("first,second", [("rprofile", "rprofile"), ("rprofile", "cProfile"),
                                          ("cProfile", "rprofile")])
def test_second_profiler_while_one_runs_behaves_like_cprofile(first, second):
    mine = run_child(SECOND, "rprofile", first, second)
    ref = run_child(SECOND, "rprofile", "cProfile", "cProfile")
    assert mine == ref
    assert mine["after_first"] == mine["after_second"] == [
        "ok", "ok", "ok", {"work_a": 1, "work_b": 0, "work_c": 0}]
    if PY312:
        assert mine["enable2"] == ["ValueError", TOOL_BUSY]
        assert mine["p1"] == {"work_a": 1, "work_b": 1, "work_c": 1}
    else:  # the second replaces the hook of the thread; the first's disable() removes it
        assert mine["p1"] == {"work_a": 1, "work_b": 0, "work_c": 0}
        assert mine["p2"] == {"work_a": 0, "work_b": 1, "work_c": 0}


FOREIGN_TOOL = r'''
M = sys.monitoring
M.use_tool_id(M.PROFILER_ID, "someone else")
out = {}
try:
    mod.Profile().enable()
    out["enable"] = "ok"
except Exception as e:
    out["enable"] = [type(e).__name__, str(e)]
out["tool"] = M.get_tool(M.PROFILER_ID)
M.free_tool_id(M.PROFILER_ID)


def work():
    return 1


p = mod.Profile()
p.runcall(work)
out["after"] = calls_of(table(p, times=False), "work")
emit(out)
'''


@pytest.mark.skipif(not PY312, reason="sys.monitoring is 3.12+")
def test_profiler_tool_id_taken_by_someone_else():
    mine, ref = both(FOREIGN_TOOL)
    assert mine == ref
    assert mine["enable"] == ["ValueError", TOOL_BUSY]
    assert mine["tool"] == "someone else"


CALLBACKS_FROM_PYTHON = r'''
M = sys.monitoring
E = M.events
out = {}


def work():
    return 1


p = mod.Profile()
p.enable()
callbacks = {}
for name in ("PY_START", "PY_RETURN", "CALL", "C_RETURN"):
    ev = getattr(E, name)
    cb = M.register_callback(M.PROFILER_ID, ev, None)
    M.register_callback(M.PROFILER_ID, ev, cb)
    callbacks[name] = cb


def outcome(f, *a, **k):
    try:
        f(*a, **k)
        return "ok"
    except Exception as e:
        return type(e).__name__


for name, cb in callbacks.items():
    out[name] = [outcome(cb), outcome(cb, work.__code__, 0, x=1)]
out["new"] = outcome(type(callbacks["PY_START"]))
# Well-formed calls from Python are events like any other.
out["start"] = outcome(callbacks["PY_START"], work.__code__, 0)
out["return"] = outcome(callbacks["PY_RETURN"], work.__code__, 0, None)
out["call"] = outcome(callbacks["CALL"], work.__code__, 0, len, M.MISSING)
out["creturn"] = outcome(callbacks["C_RETURN"], work.__code__, 0, len, M.MISSING)
work()
p.disable()
out["work"] = calls_of(table(p, times=False), "work")
emit(out)
'''


@pytest.mark.skipif(not PY312, reason="sys.monitoring is 3.12+")
def test_monitoring_callbacks_called_from_python():
    # Spec: the registered callbacks are reachable through sys.monitoring; a call with too few
    # or keyword arguments is a TypeError, the callback type cannot be instantiated, and
    # well-formed calls count as events (one pair by hand and one real call of work: 2 calls).
    # Not compared with cProfile: 3.12.1's _lsprof crashes on a callback called with no
    # arguments.
    mine = run_child(CALLBACKS_FROM_PYTHON)
    for name in ("PY_START", "PY_RETURN", "CALL", "C_RETURN"):
        assert mine[name] == ["TypeError", "TypeError"], name
    assert mine["new"] == "TypeError"
    assert [mine[k] for k in ("start", "return", "call", "creturn")] == ["ok"] * 4
    assert mine["work"] == 2


# ---------------------------------------------------------------------------------------------
# Generators: close() and throw() under profiling.

GENERATORS = r'''
import traceback
TIMER = sys.argv[2]


class MyErr(Exception):
    pass


def gen_plain():
    yield 1
    yield 2


def gen_catch():
    try:
        yield 1
    except MyErr:
        yield "caught"
    yield 3


def gen_finally(log):
    try:
        yield 1
    finally:
        log.append("finally ran")


def gen_bad():
    try:
        yield 1
    finally:
        yield 2


def outer():
    r = yield from gen_catch()
    return r


def fresh_gen_function():
    ns = {}  # a new code object at each call
    exec("def fresh():\n    yield 1\n    yield 2\n", ns)
    return ns["fresh"]


def describe(got, sent):
    return [type(got).__name__, got is sent, got.args, got.__context__ is None,
            [f.name for f in traceback.extract_tb(got.__traceback__)]]


def scenario():
    out = []
    # throw() into a never-started generator whose code object the profiler has never seen.
    e = MyErr("fresh")
    g = fresh_gen_function()()
    try:
        g.throw(e)
    except MyErr as got:
        out.append(["fresh"] + describe(got, e))
    # throw() into a started generator that does not catch it.
    g = gen_plain()
    next(g)
    e = MyErr("started")
    try:
        g.throw(e)
    except MyErr as got:
        out.append(["started"] + describe(got, e))
    # throw() that the generator handles, and through yield from.
    g = gen_catch()
    next(g)
    out.append(["caught", g.throw(MyErr("z")), next(g)])
    g = outer()
    next(g)
    out.append(["delegated", g.throw(MyErr("d")), next(g)])
    # close(): finally blocks run, GeneratorExit never escapes.
    log = []
    g = gen_finally(log)
    next(g)
    out.append(["close", g.close(), log, g.gi_frame is None])
    g = gen_bad()
    next(g)
    try:
        g.close()
    except RuntimeError as got:
        out.append(["close_yields", str(got)])
    # throw() while another exception is being handled.
    try:
        raise KeyError("outer")
    except KeyError as handling:
        g = gen_plain()
        next(g)
        e = MyErr("nested")
        try:
            g.throw(e)
        except MyErr as got:
            out.append(["nested"] + describe(got, e) + [sys.exc_info()[1] is handling])
    out.append(["exc_info_clean", sys.exc_info() == (None, None, None)])
    return out


class Raising:
    def __call__(self):
        raise ValueError("timer")


reference = scenario()
if TIMER == "raising":
    prof = mod.Profile(Raising())
else:
    prof = mod.Profile()
with Unraisable() as u:
    profiled = prof.runcall(scenario)
    tab = table(prof, times=False)
emit({"same_as_unprofiled": profiled == reference, "profiled": profiled,
      "timer_errors": sorted({t for t, _ in u.seen}),
      "rows": {k: v for k, v in tab.items() if "gen" in k or "fresh" in k or "outer" in k}})
'''


@pytest.mark.parametrize("timer", ["clock", "raising"])
def test_generator_close_and_throw_propagate_unchanged(timer):
    mine, ref = both(GENERATORS, timer)
    # Spec: profiling changes nothing the program can see: the same exception objects, args,
    # contexts and tracebacks; sys.exc_info() restored - also when the timer itself raises
    # while the exception is in flight.
    assert mine["same_as_unprofiled"], mine["profiled"]
    assert mine["timer_errors"] == (["ValueError"] if timer == "raising" else [])
    # And the counts are cProfile's.
    assert mine == ref


# ---------------------------------------------------------------------------------------------
# Labels of builtins whose naming runs Python code.

LABELS = r'''
MODE = sys.argv[2]
holder = []


class OddRepr:
    def __repr__(self):
        if MODE == "raise":
            raise ValueError("bad repr")
        if MODE == "calls":
            return "odd-" + str(sum(len(str(i)) for i in range(3)))
        if MODE == "clear":
            holder[0].clear()
        if MODE == "disable":
            holder[0].disable()
        return "odd"


class Y(list):
    append = OddRepr()  # what the label of list.append bound to a Y is made from


def work():
    y = Y()
    bound = list.append.__get__(y)
    bound(1)
    bound(2)
    return len(y)


p = mod.Profile()
holder.append(p)
out = {}
p.enable()
out["result"] = work()
try:
    p.disable()
    out["disable"] = "ok"
except Exception as e:
    out["disable"] = [type(e).__name__, str(e)]
tab = table(p, times=False)
out["rows"] = {k: v[:2] for k, v in tab.items()}
emit(out)
'''


@pytest.mark.parametrize("mode", ["raise", "calls"])
def test_builtin_label_made_by_python_code_matches_cprofile(mode):
    mine, ref = both(LABELS, mode)
    assert mine == ref
    assert mine["result"] == 2


@pytest.mark.parametrize("mode", ["clear", "disable"])
def test_builtin_label_code_that_touches_the_profiler_does_not_crash(mode):
    # cProfile lets the repr clear/disable the profiler in the middle of an event; rprofile
    # refuses (RuntimeError inside the repr, which falls back to the plain label). Either way:
    # no crash, the program's result unchanged, readable stats with every call counted.
    out = run_child(LABELS, "rprofile", mode)
    assert out["result"] == 2
    assert out["disable"] == "ok"
    assert any(k.endswith("(work)") and v == [1, 1] for k, v in out["rows"].items())
    assert sorted(v[1] for k, v in out["rows"].items() if "append" in k or "odd" in k) == [2]


# ---------------------------------------------------------------------------------------------
# bias and calibrate(), in process (no event path runs Python code here).

def _leaf():
    return 1


def _mid():
    _leaf()
    _leaf()
    return 2


def _top():
    _mid()
    _leaf()
    return 3


class _Tick:
    def __init__(self, scale=1):
        self.n = 0
        self.scale = scale

    def __call__(self):
        self.n += 1
        return self.n * self.scale


def _times(prof):
    prof.create_stats()
    return {k[2]: (v[2], v[3]) for k, v in prof.stats.items() if k[2] in ("_leaf", "_mid", "_top")}


def _rprofile_times(bias, **kw):
    kw.setdefault("timeunit", 1.0)
    p = rprofile.Profile(_Tick(), kw.pop("timeunit"), builtins=False, bias=bias)
    p.runcall(_top)
    return _times(p)


def _profile_times(bias, scale=1):
    import profile

    p = profile.Profile(_Tick(scale), bias=bias)
    p.runcall(_top)
    return _times(p)


def test_bias_zero_matches_profile_module():
    assert _rprofile_times(0.0) == _profile_times(0.0)


@pytest.mark.parametrize("bias", [1.0, 2.0, 3.0])
def test_bias_in_whole_timer_units_matches_profile_module(bias):
    # profile.Profile subtracts `bias` from the time charged at each event; with a counting
    # timer and a bias of whole ticks ours must give exactly its numbers.
    mine = _rprofile_times(bias)
    ref = _profile_times(bias)
    assert mine == ref
    base = _rprofile_times(0.0)
    # Spec, spelled out: _leaf is charged 1 event per call (3 calls), _mid 3 inline events,
    # _top 3 inline; cumulatively _mid spans 5 events and _top 9.
    assert {k: (base[k][0] - mine[k][0], base[k][1] - mine[k][1]) for k in mine} == {
        "_leaf": (3 * bias, 3 * bias), "_mid": (3 * bias, 5 * bias),
        "_top": (3 * bias, 9 * bias)}


def test_bias_with_timeunit_is_in_seconds():
    # timeunit 1 ms, bias 2 ms = 2 ticks per event: same as profile.Profile on a 1 ms clock.
    mine = _rprofile_times(0.002, timeunit=0.001)
    ref = _profile_times(0.002, scale=0.001)
    for name in ref:
        assert mine[name] == pytest.approx(ref[name], abs=1e-9), name


@pytest.mark.parametrize("bias", [0.25, 0.5, 0.75])
def test_fractional_bias_is_loosely_profile_modules(bias):
    # Times are kept as integers of the timer's unit, so a bias that is not a whole number of
    # units is applied with rounding (the running total of the bias is rounded, so the error
    # does not accumulate). Documented tolerance: one timer unit on a single interval (the
    # cumulative time of the top function) and on the sum of all inline times.
    mine = _rprofile_times(bias)
    ref = _profile_times(bias)
    assert abs(mine["_top"][1] - ref["_top"][1]) <= 1.0
    assert abs(sum(v[0] for v in mine.values()) - sum(v[0] for v in ref.values())) <= 1.0


def test_bias_attribute_and_keyword_agree():
    import profile

    assert rprofile.Profile().bias == profile.Profile().bias == 0
    p = rprofile.Profile(_Tick(), 1.0, builtins=False)
    p.bias = 2.0
    assert p.bias == 2.0
    p.runcall(_top)
    assert _times(p) == _rprofile_times(2.0)


def test_bias_on_the_default_clock_is_seconds_per_event():
    # 1 ms per event is far more than a call of _leaf takes, so its inline time goes negative
    # by about 1 ms per call.
    p = rprofile.Profile(bias=1e-3, builtins=False)

    def loop():
        for _ in range(10):
            _leaf()

    p.runcall(loop)
    p.create_stats()
    tt = [v[2] for k, v in p.stats.items() if k[2] == "_leaf"][0]
    assert -10.5e-3 < tt < -9e-3


@pytest.mark.parametrize("threads", [False, True])
def test_a_bias_set_and_reset_while_profiling(threads):
    # enable() installs callbacks made for the fast paths of that moment; a bias set while they
    # run must still be applied from the next event on, and once it is back to 0 a call open
    # across both changes keeps what the biased events took (1 ms each, far more than the
    # calls take): profile.Profile's per-event subtraction, which never gives time back.
    p = rprofile.Profile(builtins=False, threads=threads)

    def loop(n):
        for _ in range(n):
            _leaf()

    def outer():
        loop(50)
        p.bias = 1e-3
        loop(10)
        p.bias = 0.0
        loop(40)

    p.runcall(outer)
    p.create_stats()
    rows = {k[2]: v for k, v in p.stats.items()}
    assert rows["_leaf"][:2] == (100, 100)
    assert rows["loop"][:2] == (3, 3)
    # The 10 biased calls of _leaf lost ~1 ms each; the others, at most microseconds.
    assert -10.5e-3 < rows["_leaf"][2] < -9e-3
    # outer contains the 22 biased events (the 10 calls' and the second loop's): about -22 ms.
    assert -23e-3 < rows["outer"][3] < -21e-3


def test_calibrate_returns_a_float_and_prints_what_profile_prints(capsys):
    import inspect
    import profile

    assert inspect.signature(rprofile.Profile.calibrate) == inspect.signature(
        profile.Profile.calibrate)
    p = rprofile.Profile()
    value = p.calibrate(200)
    assert isinstance(value, float) and math.isfinite(value)
    capsys.readouterr()
    p.calibrate(100, verbose=1)
    mine = [line.split(" = ")[0] for line in capsys.readouterr().out.splitlines()]
    profile.Profile().calibrate(100, verbose=1)
    ref = [line.split(" = ")[0] for line in capsys.readouterr().out.splitlines()]
    assert mine == ref


def test_calibrate_with_a_custom_timer_leaves_the_profile_alone():
    p = rprofile.Profile(_Tick(), 1.0)
    p.runcall(_top)
    before = p.getstats()
    value = p.calibrate(50)
    assert isinstance(value, float) and math.isfinite(value)
    after = p.getstats()
    assert [(e.code, e.callcount, e.totaltime) for e in after] == [
        (e.code, e.callcount, e.totaltime) for e in before]


def test_calibrate_times_with_the_profilers_own_timer():
    calls = [0]

    def ticks():
        calls[0] += 1
        return calls[0]

    p = rprofile.Profile(ticks, 1.0)
    value = p.calibrate(100)
    # The plain run and every profiled call and return read the counting timer.
    assert calls[0] >= 2 * (100 + 1) + 2
    # In ticks, a profiled call is charged a few: not the ~1e-7 a seconds clock would give.
    assert 0.5 < value < 10
