"""The differential test of record: rprofile's results are exactly cProfile's.

Each program in programs/ is profiled by cProfile and by rprofile under several profiler
configurations. The timers are counting timers (1, 2, 3, ... one tick per call), so every time
in a profile is a function of the sequence of profile events alone: the two profilers must agree
to the last bit, and any extra, missing or misplaced timer call shows up as a difference.

No entry of the profilers' own Python code appears: ``runcall``'s frame is entered before
``enable()``, and the only profiler call seen, ``disable()``, is a C method whose label
(``{method 'disable' of '_lsprof.Profiler' objects}``) rprofile shares on purpose.
"""

import cProfile
import gc
import importlib
import marshal
import pathlib
import pstats
import sys

import pytest

import rprofile
from support import Tick

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# The row of cProfile's own disable() call: its key is the address of the method's definition
# in _lsprof's (or rprofile's) shared library, so where it sorts among the code objects depends
# on where the library was mapped; it moves from process to process in cProfile itself.
DISABLE = ("~", 0, "<method 'disable' of '_lsprof.Profiler' objects>")

# cProfile's label(), from the module defining its Profile (3.15: profiling.tracing, whose
# label cProfile does not re-export).
_label = sys.modules[cProfile.Profile.__module__].label

PROGRAMS = sorted(
    p.stem for p in (HERE / "programs").glob("*.py") if not p.stem.startswith("_")
)


class MillisecondTimer(Tick):
    """Float seconds that are not binary fractions, so the conversion to integer nanoseconds
    (floored) must be done exactly as _lsprof does it."""

    def __call__(self):
        return super().__call__() * 0.001


# name -> (Profile keyword arguments, made fresh per profiler; are times deterministic)
CONFIGS = {
    "default": (lambda: dict(timer=Tick()), True),
    "no_subcalls": (lambda: dict(timer=Tick(), subcalls=False), True),
    "no_builtins": (lambda: dict(timer=Tick(), builtins=False), True),
    "neither": (lambda: dict(timer=Tick(), subcalls=False, builtins=False), True),
    "timeunit": (lambda: dict(timer=Tick(), timeunit=0.001), True),
    "float_seconds": (lambda: dict(timer=MillisecondTimer()), True),
    # The real clock: only the call counts and the call graph can be compared.
    "builtin_clock": (lambda: dict(), False),
    # The builtins' leaf paths are compiled in; the profiler's flag turns them away.
    "builtin_clock_no_builtins": (lambda: dict(builtins=False), False),
}


def profile(module, main, **kwargs):
    prof = module.Profile(**kwargs)
    # A cyclic collection inside the run would call finalizers at a point that depends on how
    # much each profiler allocates, not on the program.
    gc.disable()
    try:
        prof.runcall(main)
    finally:
        gc.enable()
    prof.create_stats()
    return prof


def without_times(stats):
    return {
        func: (cc, nc, {caller: row[:2] for caller, row in callers.items()})
        for func, (cc, nc, _, _, callers) in stats.items()
    }


def entries(prof, exact):
    """getstats() as comparable data: code objects (compared by identity) become labels, and
    the listing becomes a sorted list (two entries can share a label)."""

    def row(e):
        return (_label(e.code), e.callcount, e.reccallcount) + (
            (e.totaltime, e.inlinetime) if exact else ()
        )

    return sorted(
        (row(e), None if e.calls is None else sorted(map(row, e.calls)))
        for e in prof.getstats()
    )


def listing_order(stats):
    return [func for func in stats if func != DISABLE]


def load_program(name):
    return importlib.import_module("programs." + name)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_stats_equal_cprofile(program, config, tmp_path):
    module = load_program(program)
    main = module.main
    # Imports, caches and lazily created state are settled before either profiler runs.
    main()
    main()
    make_kwargs, exact = CONFIGS[config]
    view = (lambda stats: stats) if exact else without_times

    expected = profile(cProfile, main, **make_kwargs())
    actual = profile(rprofile, main, **make_kwargs())
    # Only a case that cProfile itself reproduces can be held against rprofile.
    assert view(profile(cProfile, main, **make_kwargs()).stats) == view(expected.stats), (
        "cProfile is not deterministic on this program"
    )

    assert view(actual.stats) == view(expected.stats)
    assert entries(actual, exact) == entries(expected, exact)
    # _lsprof lists entries by key address, and pstats shows them in that order unsorted and
    # breaks sort ties with it. Code objects compiled during the run have no fixed address.
    if not getattr(module, "COMPILES_DURING_RUN", False):
        assert listing_order(actual.stats) == listing_order(expected.stats)

    cfile, rfile = tmp_path / "cprofile.prof", tmp_path / "rprofile.prof"
    expected.dump_stats(cfile)
    actual.dump_stats(rfile)
    with open(cfile, "rb") as c, open(rfile, "rb") as r:
        assert view(marshal.load(r)) == view(marshal.load(c))

    r, c = pstats.Stats(str(rfile)), pstats.Stats(str(cfile))
    assert (r.total_calls, r.prim_calls, r.top_level) == (c.total_calls, c.prim_calls, c.top_level)
    if exact:
        # A float sum over the rows in listing order: the DISABLE row's place moves its last bits.
        assert r.total_tt == pytest.approx(c.total_tt, rel=1e-12)


def test_comparison_detects_a_different_program():
    recursion = profile(rprofile, load_program("recursion").main, timer=Tick())
    mutual = profile(cProfile, load_program("mutual_recursion").main, timer=Tick())
    assert recursion.stats != mutual.stats
    assert entries(recursion, True) != entries(mutual, True)


class HiccupTimer(Tick):
    """Skips a tick once, as one timer call too many would."""

    def __call__(self):
        if self.n == 9:
            self.n += 1
        return super().__call__()


def test_comparison_detects_one_extra_tick():
    main = load_program("recursion").main
    main()
    expected = profile(cProfile, main, timer=Tick())
    actual = profile(rprofile, main, timer=HiccupTimer())
    assert without_times(actual.stats) == without_times(expected.stats)
    assert actual.stats != expected.stats
    assert entries(actual, True) != entries(expected, True)


def _builtins_work():
    total = 0
    for i in range(60):
        total += len(str(i)) + max(i, 3)
        [].append(i)
    return total


def _run_toggling_flags(module):
    """Profiles with the real clock (the callbacks' leaf paths) while the builtins and subcalls
    flags change under a running profiler: by enable() (on 3.12+ _lsprof sets the flags before
    its ValueError for the tool slot it holds) and by __init__."""
    prof = module.Profile()
    prof.enable()
    _builtins_work()
    for flags in (dict(builtins=False), dict(builtins=True), dict(subcalls=False),
                  dict(subcalls=True, builtins=False), dict(builtins=True)):
        try:
            prof.enable(**flags)
        except ValueError:
            pass
        _builtins_work()
    prof.disable()
    prof.__init__(builtins=False)
    prof.enable()
    _builtins_work()
    prof.__init__(builtins=True)
    _builtins_work()
    prof.disable()
    prof.create_stats()
    return without_times(prof.stats)


def test_flags_changed_while_profiling_count_as_cprofile():
    _builtins_work()
    expected = _run_toggling_flags(cProfile)
    assert _run_toggling_flags(cProfile) == expected, "cProfile is not deterministic here"
    actual = _run_toggling_flags(rprofile)
    assert any(func[0] == "~" for func in expected)
    assert actual == expected
