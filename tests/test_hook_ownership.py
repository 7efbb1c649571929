"""Who holds the profiling hook (sys.monitoring's profiler tool id on 3.12+, the thread's
profile function before): a second profiler enabled while one runs, another tool holding the
id, a profiler collected while enabled, plainly or in a reference cycle. rprofile behaves as
cProfile does, and everything is released afterwards.

The scenarios are programs of robustness_scenarios/, each run in a child process (under
rprofile and, where compared, cProfile), so that a crash fails the test instead of the run."""

import pytest

from robustness_support import PY312, PY313, TOOL_BUSY, both, run_child


@pytest.mark.parametrize("first,second", [("rprofile", "rprofile"), ("rprofile", "cProfile"),
                                          ("cProfile", "rprofile")])
def test_second_profiler_while_one_runs_behaves_like_cprofile(first, second):
    mine = run_child("second_profiler", "rprofile", first, second)
    ref = run_child("second_profiler", "rprofile", "cProfile", "cProfile")
    assert mine == ref
    assert mine["after_first"] == mine["after_second"] == [
        "ok", "ok", "ok", {"work_a": 1, "work_b": 0, "work_c": 0}]
    if PY312:
        assert mine["enable2"] == ["ValueError", TOOL_BUSY]
        assert mine["p1"] == {"work_a": 1, "work_b": 1, "work_c": 1}
    else:  # the second replaces the hook of the thread; the first's disable() removes it
        assert mine["p1"] == {"work_a": 1, "work_b": 0, "work_c": 0}
        assert mine["p2"] == {"work_a": 0, "work_b": 1, "work_c": 0}


@pytest.mark.skipif(not PY312, reason="sys.monitoring is 3.12+")
def test_profiler_tool_id_taken_by_someone_else():
    mine, ref = both("foreign_tool")
    assert mine == ref
    assert mine["enable"] == ["ValueError", TOOL_BUSY]
    assert mine["tool"] == "someone else"


def test_profiler_collected_while_enabled_behaves_like_cprofile():
    mine, ref = both("collected_while_enabled", "plain")
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
    mine = run_child("collected_while_enabled", "rprofile", "cycle")
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
        assert mine == run_child("collected_while_enabled", "cProfile", "cycle")
