"""The one door from a result to Stats: a profiler's snapshot and a sampler's profile hand their
native model to Stats directly (no marshal bytes between). What Stats then holds and prints must
be what the same result gives when written to a file and read back, the path pstats knows, on
real programs (docutils, Jinja2) whose stats have hundreds of rows, callers and recursion."""

import io
import runpy
import sys
from pathlib import Path

import pytest

import rprofile
from rprofile.stats import SampledStats, Stats
from sampler_support import needs_sampler

pytest.importorskip("jinja2", reason="tools/test-requirements.txt installs jinja2")
pytest.importorskip("docutils", reason="tools/test-requirements.txt installs docutils")

# docutils_rst.py names its writer the way docutils 0.22 deprecates (it runs on older ones too).
pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

PROGRAMS = Path(__file__).parent / "real_programs"
SORTS = ["cumulative", "tottime", "calls", "pcalls", "name", "file", "line", "nfl", "stdname"]


def real_main(name):
    sys.path.insert(0, str(PROGRAMS))
    try:
        return runpy.run_path(str(PROGRAMS / name))["main"]
    finally:
        sys.path.remove(str(PROGRAMS))


def printed(stats, sort):
    out = io.StringIO()
    stats.stream = out
    stats.sort_stats(sort).print_stats(40)
    stats.print_callers(15)
    stats.print_callees(15)
    return out.getvalue()


def same_rows(direct, read):
    assert list(direct.stats.items()) == list(read.stats.items())
    assert (direct.total_calls, direct.prim_calls, direct.total_tt, direct.top_level,
            direct.max_name_len) == (read.total_calls, read.prim_calls, read.total_tt,
                                     read.top_level, read.max_name_len)


@pytest.fixture(scope="module", params=["docutils_rst.py", "jinja_loop.py"])
def profiled(request, tmp_path_factory):
    main = real_main(request.param)
    prof = rprofile.Profile()
    prof.runcall(main)
    path = tmp_path_factory.mktemp("results") / "real.prof"
    prof.dump_stats(path)
    return prof, path


@pytest.mark.parametrize("sort", SORTS)
def test_a_profile_gives_the_stats_its_file_gives(profiled, sort):
    prof, path = profiled
    direct, read = Stats(prof), Stats(str(path))
    assert len(direct.stats) > 300  # a real program's rows, not a toy's
    same_rows(direct, read)
    read.files = direct.files  # the file's name and time are the only difference
    assert printed(direct, sort) == printed(read, sort)


def test_a_snapshot_gives_the_stats_of_its_profile(profiled):
    prof, _ = profiled
    snapshot = prof._take_snapshot()
    direct = Stats(snapshot)
    same_rows(direct, Stats(prof))
    assert printed(direct, "cumulative") == printed(Stats(prof), "cumulative")
    # The snapshot is not used up: a second Stats of it is the same.
    assert list(Stats(snapshot).stats.items()) == list(direct.stats.items())


def test_a_profile_stats_can_be_added_to_its_file(profiled):
    prof, path = profiled
    both = Stats(prof).add(str(path))
    twice = Stats(str(path)).add(str(path))
    assert list(both.stats.items()) == list(twice.stats.items())


def test_an_empty_profile_is_refused_or_empty_as_pstats_does():
    import cProfile
    import pstats

    def outcome(make, arg):
        try:
            return len(make(arg).stats)
        except TypeError as e:
            return type(e)
    ours = outcome(Stats, rprofile.Profile())
    theirs = outcome(pstats.Stats, cProfile.Profile())
    assert ours == theirs
    assert outcome(Stats, rprofile.Profile()._take_snapshot()) == theirs


@needs_sampler
def test_a_sampler_gives_sampled_stats_equal_to_its_file(tmp_path):
    from rprofile.sampling import Sampler

    main = real_main("jinja_loop.py")
    with Sampler(rate=1000) as s:
        main()
    stats = s.stats()
    assert type(stats) is SampledStats
    path = tmp_path / "sampled.prof"
    s.dump_stats(path)
    read = Stats(str(path))
    assert len(stats.stats) > 20
    same_rows(stats, read)
    for sort in ("cumulative", "tottime", "name"):
        assert stats.sort_stats(sort).fcn_list == read.sort_stats(sort).fcn_list
