"""bias and calibrate(), as profile.Profile has them: a bias in whole timer units gives exactly
profile.Profile's numbers under a counting timer, a fractional one within a documented
tolerance; calibrate() prints what profile's prints and leaves the profile alone. In process:
no event path runs Python code here."""

import math

import pytest

import rprofile


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
