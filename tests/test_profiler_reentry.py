"""Python code that calls the profiler while it is in use: profiled code that disables, clears
or snapshots its own profiler, the label of a builtin made by a __repr__ that raises or touches
the profiler, and the profiler's sys.monitoring callbacks called by hand. No crash, and the
counts cProfile gives.

The scenarios are programs of robustness_scenarios/, each run in a child process (under
rprofile and, where compared, cProfile), so that a crash fails the test instead of the run."""

import pytest

from robustness_support import PY312, both, run_child


@pytest.mark.parametrize("what", ["disable", "clear", "reenable", "snapshot"])
def test_disable_and_clear_from_profiled_code_match_cprofile(what):
    mine, ref = both("calls_from_profiled_code", what)
    if what == "snapshot":
        # snapshot_stats() is Python code of each profiler's own (its rows and the timer ticks
        # it takes differ); the workload's counts must not.
        def ours(t):
            return {k: v[:2] for k, v in t.items() if k.startswith("calls_from_profiled_code.py")}

        assert ours(mine) == ours(ref)
        assert sorted(v[1] for v in ours(mine).values()) == [1, 1, 4]
    else:
        assert mine == ref
    if what == "disable":
        # Spec: nothing after the disable() is recorded: leaf ran once while enabled.
        assert [v[1] for k, v in mine.items() if k.endswith("(leaf)")] == [1]


@pytest.mark.parametrize("mode", ["raise", "calls"])
def test_builtin_label_made_by_python_code_matches_cprofile(mode):
    mine, ref = both("builtin_labels", mode)
    assert mine == ref
    assert mine["result"] == 2


@pytest.mark.parametrize("mode", ["clear", "disable"])
def test_builtin_label_code_that_touches_the_profiler_does_not_crash(mode):
    # cProfile lets the repr clear/disable the profiler in the middle of an event; rprofile
    # refuses (RuntimeError inside the repr, which falls back to the plain label). Either way:
    # no crash, the program's result unchanged, readable stats with every call counted.
    out = run_child("builtin_labels", "rprofile", mode)
    assert out["result"] == 2
    assert out["disable"] == "ok"
    assert any(k.endswith("(work)") and v == [1, 1] for k, v in out["rows"].items())
    assert sorted(v[1] for k, v in out["rows"].items() if "append" in k or "odd" in k) == [2]


@pytest.mark.skipif(not PY312, reason="sys.monitoring is 3.12+")
def test_monitoring_callbacks_called_from_python():
    # Spec: the registered callbacks are reachable through sys.monitoring; a call with too few
    # or keyword arguments is a TypeError, the callback type cannot be instantiated, and
    # well-formed calls count as events (one pair by hand and one real call of work: 2 calls).
    # Not compared with cProfile: 3.12.1's _lsprof crashes on a callback called with no
    # arguments.
    mine = run_child("callbacks_from_python")
    for name in ("PY_START", "PY_RETURN", "CALL", "C_RETURN"):
        assert mine[name] == ["TypeError", "TypeError"], name
    assert mine["new"] == "TypeError"
    assert [mine[k] for k in ("start", "return", "call", "creturn")] == ["ok"] * 4
    assert mine["work"] == 2
