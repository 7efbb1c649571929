"""Python timers that raise, return the wrong thing or a sequence, or call disable()/clear() of
the profiler they time: the run goes on, errors reach sys.unraisablehook as in cProfile, and
the timer's references do not pile up.

The scenarios are programs of robustness_scenarios/, each run in a child process under rprofile
and, where the expected values are cProfile's, under cProfile on the same interpreter. A
counting timer (each call returns the next integer) makes times deterministic, so where both
profilers read the timer at the same moments whole stats tables, times included, are compared.
"""

import sys

import pytest

import rprofile
from robustness_support import PY313, both, run_child
from support import Tick


@pytest.mark.parametrize("kind", ["raises", "str", "none", "object", "float_with_unit", "nan"])
def test_bad_timer_is_reported_as_unraisable_like_cprofile(kind):
    mine, ref = both("bad_timers", kind)
    assert mine["result"] == 6  # the run goes on
    assert mine["unraisable"], "the timer's error must reach sys.unraisablehook"
    assert mine["table"], "stats are still produced"
    assert any(k.endswith("(leaf)") and v[1] == 4 for k, v in mine["table"].items())
    # Same reports (type and message), same count of them, and the same table, since a failed
    # timer read counts as 0 in both.
    assert mine == ref


@pytest.mark.parametrize("kind", ["overflow_float", "overflow_int_unit", "overflow_int"])
def test_out_of_range_timer_is_reported_like_cprofile(kind):
    mine, ref = both("bad_timers", kind)
    # The message of the OverflowError differs between CPython versions (and from ours); the
    # type, the number of reports and the table must not.
    assert [t for t, _ in mine["unraisable"]] == [t for t, _ in ref["unraisable"]]
    assert {t for t, _ in mine["unraisable"]} == {"OverflowError"}
    assert mine["how"] == ref["how"]
    assert mine["result"] == ref["result"] == 6
    assert mine["table"] == ref["table"]


def test_float_seconds_timer_matches_cprofile():
    mine, ref = both("bad_timers", "float_seconds")
    assert mine["unraisable"] == []
    assert mine == ref


@pytest.mark.parametrize("tuple_kind,sum_kind", [("tuple_int", "sum_int"),
                                                 ("list_float", "sum_float")])
def test_timer_returning_a_sequence_counts_its_sum(tuple_kind, sum_kind):
    summed = run_child("sequence_timers", "rprofile", tuple_kind)
    plain = run_child("sequence_timers", "rprofile", sum_kind)
    assert summed["unraisable"] == []
    # Spec: a tuple/list is the sum of its items, so the stats are those of a timer returning
    # the sum.
    assert summed["table"] == plain["table"]
    top = [v for k, v in summed["table"].items() if k.endswith("(work)")][0]
    assert top[3] > 0


def test_timer_returning_a_sequence_with_a_bad_item_is_unraisable():
    out = run_child("sequence_timers", "rprofile", "tuple_bad_item")
    assert out["unraisable"] and {t for t, _ in out["unraisable"]} == {"TypeError"}
    assert any(k.endswith("(leaf)") and v[1] == 3 for k, v in out["table"].items())


@pytest.mark.parametrize("what", ["disable", "clear"])
def test_disable_or_clear_inside_the_timer_is_refused(what):
    message = "cannot %s profiler in external timer" % what
    propagated = run_child("calls_from_the_timer", "rprofile", what, "propagate")
    reference = run_child("calls_from_the_timer", "rprofile", what, "reference")
    caught = run_child("calls_from_the_timer", "rprofile", what, "catch")
    plain = run_child("calls_from_the_timer", "rprofile", what, "plain")
    # Spec: RuntimeError, reported through sys.unraisablehook since it escapes the timer, and
    # the profile goes on unharmed: exactly as if the timer had raised that error itself.
    assert propagated["unraisable"] == [["RuntimeError", message]]
    assert propagated == reference
    # Caught inside the timer, the refusal has no effect at all.
    assert caught["caught"] == [message]
    assert caught["unraisable"] == []
    assert caught["table"] == plain["table"]
    if PY313:  # cProfile has this guard from 3.13 (3.12.1's cProfile crashes on clear()).
        assert propagated == run_child("calls_from_the_timer", "cProfile", what, "propagate")


def _leaf():
    return 1


def test_python_timer_references_do_not_pile_up_while_profiling():
    import cProfile

    def refcounts(module):
        timer = Tick()
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
