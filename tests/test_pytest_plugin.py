"""The pytest plugin: small suites run by pytester with `--rprofile` and its options. Each
suite counts its own calls, and the stats files must hold those counts exactly; without the
option the plugin must leave no trace (no profiler, no file, no output)."""

import importlib.metadata
import json
import pstats
import re
import sys

import pytest

import rprofile
import rprofile.pytest_plugin
from sampler_support import sampler_unsupported

pytest_plugins = ["pytester"]

# The functions the suites call, counting their own calls and primitive calls (calls that are
# not within a call of the same function, as pstats counts them).
COUNTED = """
CALLS = {}
_depth = {}


def _enter(name):
    counts = CALLS.setdefault(name, [0, 0])
    counts[0] += 1
    if not _depth.get(name):
        counts[1] += 1
    _depth[name] = _depth.get(name, 0) + 1


def fib(n):
    _enter("fib")
    try:
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    finally:
        _depth["fib"] -= 1


def leaf():
    _enter("leaf")
    _depth["leaf"] -= 1
"""

# Each test's counts go to calls.jsonl, written after the test by an autouse fixture.
CONFTEST = """
import json

import pytest

import counted


@pytest.fixture(autouse=True)
def _log_calls(request):
    counted.CALLS.clear()
    yield
    with open(request.config.rootpath / "calls.jsonl", "a") as f:
        f.write(json.dumps({"nodeid": request.node.nodeid, "calls": counted.CALLS}) + "\\n")
"""

TESTS = """
import pytest

from counted import fib, leaf


def test_fib():
    assert fib(12) == 144


def test_leaf():
    for _ in range(7):
        leaf()


def test_in_another_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    leaf()


class TestBoth:
    def test_both(self):
        fib(6)
        leaf()


@pytest.mark.parametrize("n", [1, 3, 4], ids=["one", "x/y z", "x_y_z"])
def test_param(n):
    for _ in range(n):
        leaf()
"""


def _counted_suite(pytester, tests=TESTS):
    pytester.makepyfile(counted=COUNTED, conftest=CONFTEST, test_counted=tests)


def _logged_calls(pytester):
    """{node id: {function: (calls, primitive calls)}} as the suite counted them."""
    out = {}
    for line in (pytester.path / "calls.jsonl").read_text().splitlines():
        record = json.loads(line)
        out[record["nodeid"]] = {name: tuple(c) for name, c in record["calls"].items()}
    return out


def _profiled_calls(stats, names=("fib", "leaf")):
    """{function: (calls, primitive calls)} of counted.py's functions in a loaded Stats."""
    out = {}
    for (file, _line, name), (cc, nc, *_rest) in stats.stats.items():
        if file.endswith("counted.py") and name in names:
            out[name] = (nc, cc)
    return out


def _stats_files(directory):
    return {p.name: p for p in directory.iterdir() if p.suffix == ".prof"}


def _readable(nodeid):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", nodeid)


def _named_for(files, nodeid):
    """The files whose names are the test's node id made safe: exactly that, or that and a
    digest (which this test does not compute: two ids that differ only in unsafe characters
    have files told apart by their contents)."""
    plain = _readable(nodeid) + ".prof"
    if plain in files:
        return [plain]
    return [name for name in files
            if re.fullmatch(re.escape(_readable(nodeid)) + r"-[0-9a-f]{8}\.prof", name)]


def _check_counts(pytester, directory):
    """Each test's file holds its logged counts, read by pstats and rprofile.Stats alike, and
    the merge their sums; every file is one test's. {node id: file name}."""
    logged = _logged_calls(pytester)
    files = _stats_files(directory)
    assert len(files) == len(logged) + 1, sorted(files)
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.prof", name) for name in files)
    total = {}
    owner = {}
    for nodeid, calls in logged.items():
        matching = [name for name in _named_for(files, nodeid)
                    if _profiled_calls(rprofile.Stats(str(files[name]))) == calls]
        assert len(matching) == 1, (nodeid, calls, sorted(files))
        owner[nodeid] = name = matching[0]
        assert _profiled_calls(pstats.Stats(str(files[name]))) == calls
        for fn, (nc, cc) in calls.items():
            t = total.get(fn, (0, 0))
            total[fn] = (t[0] + nc, t[1] + cc)
    assert len(set(owner.values())) == len(owner)
    combined = str(files["combined.prof"])
    for read in (pstats.Stats, rprofile.Stats):
        assert _profiled_calls(read(combined)) == total
    return owner


def test_a_stats_file_per_test_and_their_merge_hold_the_exact_counts(pytester):
    _counted_suite(pytester)
    result = pytester.runpytest("--rprofile")
    assert result.ret == 0, result.stdout.str()
    owner = _check_counts(pytester, pytester.path / "prof")
    # Plain node ids keep their names; the two parameters that map to one name both have
    # a file of their own (checked above: each test's counts are in a file of its own).
    assert len(owner) == 7
    assert owner["test_counted.py::TestBoth::test_both"] == \
        "test_counted.py__TestBoth__test_both.prof"
    result.stdout.fnmatch_lines(["* rprofile *", "7 stats files in prof, merged in "
                                 "prof/combined.prof"])


def test_a_directory_of_ones_own_and_a_failing_test_that_still_fails(pytester):
    _counted_suite(pytester, TESTS + "\n\ndef test_fails():\n    leaf()\n    assert False\n")
    result = pytester.runpytest("--rprofile=out/profiles")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=7, failed=1)
    _check_counts(pytester, pytester.path / "out" / "profiles")
    assert not (pytester.path / "prof").exists()


STOPPING = """
import pytest

from counted import leaf


def test_stops():
    for _ in range(5):
        leaf()
    pytest.exit("stopped in the middle of the run")


def test_never_runs():
    leaf()
"""


def test_a_run_stopped_in_a_test_writes_that_test_s_profile_so_far(pytester):
    pytester.makepyfile(counted=COUNTED, test_stopping=STOPPING)
    result = pytester.runpytest("--rprofile")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    files = _stats_files(pytester.path / "prof")
    assert set(files) == {"test_stopping.py__test_stops.prof", "combined.prof"}
    for name in files:
        assert _profiled_calls(rprofile.Stats(str(files[name]))) == {"leaf": (5, 5)}
    # Its profiler is off.
    if sys.version_info >= (3, 12):
        assert sys.monitoring.get_tool(sys.monitoring.PROFILER_ID) is None
    else:
        assert sys.getprofile() is None


PHASED = """
import pytest


def in_setup():
    pass


def in_call():
    pass


def in_teardown():
    pass


@pytest.fixture
def fx():
    in_setup()
    yield
    in_teardown()


def test_one(fx):
    in_call()
"""

ALL = {"": {"in_setup", "in_call", "in_teardown"}}


@pytest.mark.parametrize("args, expected", [
    ((), ALL),
    (("--rprofile-phases=all",), ALL),
    (("--rprofile-phases=call",), {"": {"in_call"}}),
    (("--rprofile-phases=each",),
     {"-setup": {"in_setup"}, "-call": {"in_call"}, "-teardown": {"in_teardown"}}),
])
def test_phases(pytester, args, expected):
    pytester.makepyfile(test_phased=PHASED)
    result = pytester.runpytest("--rprofile", *args)
    assert result.ret == 0, result.stdout.str()
    files = _stats_files(pytester.path / "prof")
    want = {"test_phased.py__test_one%s.prof" % suffix for suffix in expected}
    assert set(files) == want | {"combined.prof"}
    for suffix, names in expected.items():
        stats = rprofile.Stats(str(files["test_phased.py__test_one%s.prof" % suffix]))
        found = {name: nc for (file, _, name), (cc, nc, *_r) in stats.stats.items()
                 if file.endswith("test_phased.py") and name.startswith("in_")}
        assert found == dict.fromkeys(names, 1), suffix



BURNING = """
import time


def burn():
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass


def test_burn():
    burn()


def test_short():
    pass
"""


def test_sample_writes_a_sampled_profile_of_a_test_that_burns_cpu(pytester):
    if sampler_unsupported() is not None:
        pytest.skip(sampler_unsupported())
    pytester.makepyfile(test_burning=BURNING)
    rate = 400
    # In a process of its own: run in this one, under pytest-xdist, the worker's I/O thread is
    # sampled beside the test's and holds half of the samples.
    result = pytester.runpytest_subprocess("--rprofile-sample", "--rprofile-rate=%d" % rate)
    assert result.ret == 0, result.stdout.str()
    files = _stats_files(pytester.path / "prof")
    assert {"test_burning.py__test_burn.prof", "combined.prof"} <= set(files)
    # A test may end before the sampler's first read: it then has no file (pstats reads no
    # empty stats file), and the summary counts it.
    short = "test_burning.py__test_short.prof" in files
    unsampled = "1 test ended before the sampler's first read: no file" in result.outlines
    assert short != unsampled, (sorted(files), result.outlines)
    stats = pstats.Stats(str(files["test_burning.py__test_burn.prof"])).stats
    # Sampled rows: times are samples times the interval, which a tracer's are not.
    running = {key: (cc, tt) for key, (cc, nc, tt, ct, callers) in stats.items() if cc}
    assert running
    for cc, tt in running.values():
        assert tt == pytest.approx(cc / rate)
    total = sum(cc for cc, tt in running.values())
    burn = [nc for (file, _, name), (cc, nc, *_r) in stats.items() if name == "burn"]
    assert burn and burn[0] > total / 2, (burn, total)
    # The summary reads them as samples.
    result.stdout.fnmatch_lines(["*nsamples  sample%  tottime   cumul%  cumtime*"])


# A profiler of the suite's own, enabled for the whole session.
HELD = """
import cProfile

_prof = cProfile.Profile()


def pytest_sessionstart(session):
    _prof.enable()


def pytest_sessionfinish(session):
    _prof.disable()
"""


def test_a_test_that_cannot_be_profiled_runs_unprofiled_and_is_named(pytester):
    pytester.makeconftest(HELD)
    pytester.makepyfile(test_two="def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    result = pytester.runpytest("--rprofile")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)
    if sys.version_info >= (3, 12):
        # sys.monitoring has one profiler id: the suite's cProfile holds it.
        assert _stats_files(pytester.path / "prof") == {}
        busy = ("tool 2 is already in use" if sys.version_info >= (3, 14)
                else "Another profiling tool is already active")  # (3.14: sys.monitoring's)
        result.stdout.fnmatch_lines(["test_two.py::test_a and 1 more: not profiled: " + busy])
    else:
        # The profile hook is per thread and the last profiler enabled takes it, as
        # between two cProfiles.
        assert set(_stats_files(pytester.path / "prof")) == {
            "test_two.py__test_a.prof", "test_two.py__test_b.prof", "combined.prof"}


def test_html_writes_the_report_of_the_merge(pytester):
    _counted_suite(pytester)
    result = pytester.runpytest("--rprofile-html")
    assert result.ret == 0, result.stdout.str()
    directory = pytester.path / "prof"
    _check_counts(pytester, directory)
    html = (directory / "combined.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "counted.py" in html and "fib" in html
    result.stdout.fnmatch_lines(["*merged in prof/combined.prof, HTML report "
                                 "prof/combined.html"])


SLOW_AND_QUICK = """
import time


def nap():
    time.sleep(0.3)


def test_slow():
    nap()


def test_quick_a():
    pass


def test_quick_b():
    pass
"""


def test_the_summary_shows_the_slowest_tests_hottest_functions(pytester):
    pytester.makepyfile(test_timed=SLOW_AND_QUICK)
    result = pytester.runpytest("--rprofile", "--rprofile-slowest=1",
                                "--rprofile-element-number=3", "--rprofile-strip-dirs")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    section = out[out.index("rprofile: hottest functions of the 1 slowest test"):]
    headings = re.findall(r"^-+ (\S+) \([0-9.]+ s\) -+$", section, re.M)
    assert headings == ["test_timed.py::test_slow"]
    assert "due to restriction <3>" in section
    rows = section[section.index("filename:lineno(function)"):].splitlines()[1:4]
    assert "{built-in method time.sleep}" in rows[0]
    # --rprofile-strip-dirs: no folder in the last column (ncalls may read "6/3").
    assert all("/" not in row.split(None, 5)[5] for row in rows), rows

    result = pytester.runpytest("--rprofile", "--rprofile-slowest=0")
    assert "hottest functions" not in result.stdout.str()
    result.stdout.fnmatch_lines(["3 stats files in prof, merged in prof/combined.prof"])


# Whether a profiler is active, seen from inside a test: asked for, or not.
WATCHING = """
import sys


def test_watch(request):
    manager = request.config.pluginmanager
    assert manager.hasplugin("rprofile")  # loaded from its entry point
    asked = request.config.getoption("rprofile") is not None
    assert (manager.get_plugin("rprofile-session") is not None) == asked
    if sys.version_info >= (3, 12):
        tool = sys.monitoring.get_tool(sys.monitoring.PROFILER_ID)
        assert (tool is not None) == asked, tool
    else:
        assert (sys.getprofile() is not None) == asked, sys.getprofile()
"""


def test_without_the_option_no_profiler_runs_and_nothing_is_written(pytester):
    pytester.makepyfile(test_watching=WATCHING)
    result = pytester.runpytest_subprocess()
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "prof").exists()
    assert [p for p in pytester.path.rglob("*") if p.suffix in (".prof", ".html")] == []
    said = [line for line in result.outlines + result.errlines
            if "rprofile" in line and not line.startswith("plugins:")]
    assert said == []
    # The same check sees the profiler when it is asked for.
    result = pytester.runpytest_subprocess("--rprofile")
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "prof" / "test_watching.py__test_watch.prof").is_file()


UNREWRITTEN = """
import importlib.util
import runpy


def test_rprofile_is_imported_as_without_pytest():
    # pytest would import every module of a plugin's distribution through its assertion
    # rewriter, whose loader runpy cannot run (pytest issue 9007).
    spec = importlib.util.find_spec("rprofile.stats")
    assert type(spec.loader).__name__ == "SourceFileLoader"
    runpy.run_module("rprofile.timeline")
"""


def test_rprofile_s_own_modules_are_not_rewritten_by_pytest(pytester):
    pytester.makepyfile(test_unrewritten=UNREWRITTEN)
    result = pytester.runpytest_subprocess()
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)


def test_the_entry_point_is_in_the_installed_distribution(pytester):
    dist = importlib.metadata.distribution("rprofile")
    points = [(ep.name, ep.value) for ep in dist.entry_points if ep.group == "pytest11"]
    assert points == [("rprofile", "rprofile.pytest_plugin")]
    assert "[pytest11]" in dist.read_text("entry_points.txt")
    ep = next(ep for ep in dist.entry_points if ep.group == "pytest11")
    assert ep.load() is rprofile.pytest_plugin
    # pytest knows it by that name: -p no:rprofile removes it, and its options with it.
    result = pytester.runpytest("-p", "no:rprofile", "--rprofile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --rprofile*"])


@pytest.mark.parametrize("args, message", [
    (("--rprofile=afile",), "ERROR: --rprofile: afile is a file, not a directory *"),
    (("--rprofile", "afile"), "ERROR: --rprofile: afile is a file, not a directory *"),
    (("--rprofile=afile/sub",), "ERROR: --rprofile: cannot make the directory afile/sub: *"),
    (("--rprofile", "tests"), "ERROR: --rprofile: tests holds Python files: *"),
    (("--rprofile", "--rprofile-phases=setup"),
     "*error: argument --rprofile-phases: invalid choice: 'setup'*"),
    (("--rprofile-sample", "--rprofile-rate=0"), "ERROR: --rprofile-rate: *above 0, not 0.0"),
    (("--rprofile", "--rprofile-slowest=-1"), "ERROR: --rprofile-slowest: *0 or more, not -1"),
    (("--rprofile", "--rprofile-element-number=0"),
     "ERROR: --rprofile-element-number: *not 0"),
])
def test_bad_options_are_usage_errors(pytester, args, message):
    pytester.makefile("", afile="not a directory")
    pytester.mkdir("tests")
    pytester.makepyfile(**{"tests/test_t": "def test_t():\n    pass\n"})
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not (pytester.path / "prof").exists()


def test_the_tests_of_a_directory_given_first_are_profiled(pytester):
    pytester.mkdir("tests")
    pytester.makepyfile(**{"tests/test_t": "def test_t():\n    pass\n"})
    result = pytester.runpytest("tests", "--rprofile")
    assert result.ret == 0
    assert set(_stats_files(pytester.path / "prof")) == {"tests_test_t.py__test_t.prof",
                                                          "combined.prof"}


def test_pytest_profiling_tracing_too_is_a_usage_error(pytester):
    pytest.importorskip("pytest_profiling")
    result = pytester.runpytest("--rprofile", "--profile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rprofile: pytest-profiling's --profile *"])


def test_xdist_workers_write_their_tests_files_and_the_controller_the_merge(pytester):
    pytest.importorskip("xdist")
    _counted_suite(pytester)
    result = pytester.runpytest_subprocess("-n", "2", "--rprofile")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    _check_counts(pytester, pytester.path / "prof")
    out = result.stdout.str()
    assert out.count("rprofile: hottest functions of the 3 slowest tests") == 1
    result.stdout.fnmatch_lines(["7 stats files in prof, merged in prof/combined.prof"])


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names")
def test_file_names_are_safe_and_distinct():
    from rprofile.pytest_run.session import file_stem

    ids = ["a/b.py::t", "a/b.py::t[1]", "a/b.py::t[1 ]", "a/b.py::t[é]", "a/b.py::t[../x]",
           "a/b.py::t[" + "x" * 300 + "]", "../up.py::t"]
    stems = [file_stem(i) for i in ids]
    assert len(set(stems)) == len(stems)
    for stem in stems:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}", stem), stem
    assert stems[0] == "a_b.py__t"
    assert file_stem("a/b.py::t", digest=True) != "a_b.py__t"


def test_a_sampled_test_without_a_stack_sample_writes_no_file(tmp_path):
    # A test shorter than an interval may get a read but no stack sample; Stats of it is
    # empty without an error on 3.15 (as its pstats makes one of a profiler), so the plugin
    # asks the samples themselves, and writes no file pstats would refuse.
    from rprofile.pytest_run.session import _Sampled

    class Unsampled:
        threads = [(42, 42, "MainThread", 0, 0, 0, 0)]  # read, never counted

        def stats(self):
            return object()  # 3.15: an empty Stats, no TypeError

        def dump_stats(self, path):
            open(path, "wb").close()

    unit = _Sampled(rate=100)
    unit._sampler = Unsampled()
    assert unit.write(str(tmp_path / "t.prof")) is False
    assert not (tmp_path / "t.prof").exists()
    Unsampled.threads = [(42, 42, "MainThread", 3, 0, 0, 0)]
    assert unit.write(str(tmp_path / "t.prof")) is True
