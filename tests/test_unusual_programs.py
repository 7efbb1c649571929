"""Programs that do unusual things under profiling: thousands of code objects that die at
once, generators closed and thrown into, recursion 20,000 deep and unbounded, a
KeyboardInterrupt in the middle of a run, os.fork(). The program sees what it would see
unprofiled, and the counts are exact (derived from the workload) or cProfile's.

The scenarios are programs of robustness_scenarios/, each run in a child process under rprofile
and under cProfile, so that a crash fails the test instead of the run. A counting timer (each
call returns the next integer) makes times deterministic, so where both profilers read the
timer at the same moments whole stats tables, times included, are compared."""

import os
import sys

import pytest

from robustness_support import both


def test_thousands_of_dying_code_objects_are_counted_exactly():
    result, ref = both("dying_code_objects", 0)
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
            "dying_code_objects.py(driver)"]
        assert callers[0][1:3] == [i % 3 + 1, i % 3 + 1]
    # (and above: the whole table - counts, callers, counting-timer times - is cProfile's)


def test_dying_code_objects_with_clear_in_between():
    result, ref = both("dying_code_objects", 700)
    assert result == ref
    mine = result["table"]
    assert result["module_entries"] == [1] * 200
    # The last clear() happens after f2799: exactly f2800..f2999 remain, with their counts.
    names = sorted(int(k[len("<string>:1(f"):-1]) for k in mine if k.startswith("<string>:1(f"))
    assert names == list(range(2800, 3000))
    for i in names:
        assert mine["<string>:1(f%d)" % i][:2] == [i % 3 + 1, i % 3 + 1]


@pytest.mark.parametrize("timer", ["clock", "raising"])
def test_generator_close_and_throw_propagate_unchanged(timer):
    mine, ref = both("generator_throw_close", timer)
    # Spec: profiling changes nothing the program can see: the same exception objects, args,
    # contexts and tracebacks; sys.exc_info() restored - also when the timer itself raises
    # while the exception is in flight.
    assert mine["same_as_unprofiled"], mine["profiled"]
    assert mine["timer_errors"] == (["ValueError"] if timer == "raising" else [])
    # And the counts are cProfile's.
    assert mine == ref


def test_recursion_20000_deep():
    n = 8000 if sys.version_info < (3, 11) else 20000
    mine, ref = both("recursion", n, "deep")
    assert mine["result"] == n
    rec = [v for k, v in mine["rows"].items() if k.endswith("(rec)")][0]
    # Spec: n + 1 calls of rec, one of them primitive; rec calls itself n times, driver once
    # (each edge's primitive count is 1, as _lsprof counts an edge's recursion).
    assert rec[:2] == [1, n + 1]
    callers = {c[0].split("(")[1][:-1]: c[1:3] for c in rec[-1]}
    assert callers == {"rec": [n, 1], "driver": [1, 1]}
    assert mine == ref


def test_recursion_error_under_profiling_matches_cprofile():
    mine, ref = both("recursion", 0, "unbounded")
    assert mine["result"] == "RecursionError"
    assert mine == ref


@pytest.mark.parametrize("kind", ["code", "interrupt_main", "kill", "raise_signal", "thread"])
def test_keyboard_interrupt_mid_run(kind):
    mine, ref = both("keyboard_interrupt", kind)
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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("exit_kind", ["os_exit", "sys_exit"])
def test_fork_while_profiling(exit_kind):
    mine, ref = both("fork", exit_kind)
    assert mine["child_exit"] == 0
    assert mine["child"] == {"before": 1, "child_work": 2, "parent_work": 0}
    assert mine["parent"] == {"before": 1, "child_work": 0, "parent_work": 1}
    assert mine == ref
