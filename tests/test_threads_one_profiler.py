"""Threads on one profiler (threads=False): enable() in one thread and disable() in another,
five threads hammering it with the GIL switched as often as it can be, a Python timer entered
by two threads at once, and the times a Python timer gives when three threads share its single
stack. Every call counted once, nothing wedged, times within bounds that hold whatever the
interleaving.

The scenarios are programs of robustness_scenarios/, each run in a child process (under
rprofile and, where compared, cProfile), so that a crash fails the test instead of the run."""

import pytest

from robustness_support import PY312, both, run_child


@pytest.mark.parametrize("scenario", ["disable_elsewhere", "enable_elsewhere"])
def test_enable_in_one_thread_disable_in_another(scenario):
    mine, ref = both("enable_disable_across_threads", scenario)
    assert mine == ref
    assert mine["counts"]["work_a"] == 1
    assert mine["fresh"] == {"work_a": 1, "work_b": 0, "work_c": 0}


@pytest.mark.parametrize("kind", ["clock", "ctimer", "pytimer"])
def test_threads_hammering_one_profiler(kind):
    out = run_child("threads_hammering", "rprofile", kind)
    # Spec: 3.12+ profiles every thread (sys.monitoring is global); before, only the thread
    # that called enable(). Every call is counted exactly once.
    threads = 5 if PY312 else 1
    assert out["leaf"] == 3000 * threads
    assert out["body"] == threads
    assert out["unraisable"] == []
    assert out["cc_le_nc"]
    if kind != "pytimer":  # (cProfile livelocks with a Python timer and threads on 3.12+)
        assert out["disable"] == "ok"
        ref = run_child("threads_hammering", "cProfile", kind)
        assert (out["leaf"], out["body"]) == (ref["leaf"], ref["body"])


def test_overlapping_timer_calls_in_two_threads_do_not_wedge_the_profiler():
    out = run_child("timers_overlapping_in_threads", "rprofile")
    assert out["both_timers_overlapped"]
    # Spec: only a call made from inside the timer is refused; here no timer is running.
    assert out.get("worker_disable", "ok") == "ok"
    assert out["disable"] == "ok"


@pytest.mark.parametrize("kind, n", [("plain", 20000), ("sleep0", 2000)])
def test_python_timer_with_threads_on_one_stack_gives_sane_times(kind, n):
    out = run_child("python_timer_shared_stack", "rprofile", kind, n)
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
