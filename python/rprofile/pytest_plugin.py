"""The pytest plugin, ``pytest --rprofile[=DIR]`` (entry point ``rprofile`` of ``pytest11``).

pytest loads this module in every run where rprofile is installed; it only adds the options.
Unless ``--rprofile``, ``--rprofile-sample`` or ``--rprofile-html`` is given it registers
nothing more: no profiler, no file, no hook called per test. When asked, it checks the options
(a bad one is pytest's usage error) and registers the session that does the work
(``rprofile.pytest_run.session``). pytest-profiling's ``--profile`` and its options are left alone;
ours carry its names after ``--rprofile-`` where they do the same.
"""

import os

import pytest

DEFAULT_DIR = "prof"
PHASES = ("all", "call", "each")


def pytest_addoption(parser, pluginmanager):
    _leave_unrewritten(pluginmanager)
    group = parser.getgroup("rprofile", "profiling with rprofile")
    group.addoption(
        "--rprofile", nargs="?", const=DEFAULT_DIR, default=None, metavar="DIR",
        help="profile each test with rprofile's tracer: a stats file per test in DIR (default: "
             "prof) and their merge, DIR/combined.prof, then print the hottest functions of "
             "the slowest tests. Write --rprofile=DIR: a word after a bare --rprofile is "
             "taken as DIR.")
    group.addoption(
        "--rprofile-phases", choices=PHASES, default="all",
        help="what a test's profile covers. all (default): setup, call and teardown in one "
             "profile, so that the time spent in fixtures is in it (as with pytest-profiling); "
             "call: the test function alone; each: a profile per phase (NAME-setup.prof, "
             "NAME-call.prof, NAME-teardown.prof).")
    group.addoption(
        "--rprofile-sample", action="store_true",
        help="sample each test with rprofile.Sampler instead of tracing it: no hook in the "
             "tests, rows count samples (implies --rprofile).")
    group.addoption(
        "--rprofile-rate", type=float, default=1000.0, metavar="HZ",
        help="samples per second with --rprofile-sample (default: 1000).")
    group.addoption(
        "--rprofile-html", action="store_true",
        help="also write DIR/combined.html, the HTML report of the merge: table, callers "
             "and callees, flame graph (implies --rprofile).")
    group.addoption(
        "--rprofile-slowest", type=int, default=3, metavar="N",
        help="how many of the slowest tests have their hottest functions printed at the end "
             "(default: 3; 0: none).")
    group.addoption(
        "--rprofile-element-number", type=int, default=10, metavar="N",
        help="rows printed per test, by own time (default: 10), as pytest-profiling's "
             "--element-number.")
    group.addoption(
        "--rprofile-strip-dirs", action="store_true",
        help="print file names without their directories, as pytest-profiling's "
             "--strip-dirs.")


def _leave_unrewritten(pluginmanager):
    """pytest marks every module of a distribution with a pytest11 entry point for assertion
    rewriting, so all of rprofile would be imported through its hook in every run, which
    breaks ``runpy`` on them (pytest issue 9007) and writes pytest's own .pyc files beside
    them. The plugin has no assert to rewrite: rprofile is imported as without pytest (but
    for this module and the package's ``__init__``, imported already)."""
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set) and __package__ in marked:
        marked.discard(__package__)
        cache = getattr(hook, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()


def pytest_configure(config):
    opt = config.option
    if opt.rprofile is None and not opt.rprofile_sample and not opt.rprofile_html:
        return
    if not opt.rprofile_rate > 0:
        raise pytest.UsageError("--rprofile-rate: a number of samples per second above 0, "
                                "not %s" % opt.rprofile_rate)
    if opt.rprofile_slowest < 0:
        raise pytest.UsageError("--rprofile-slowest: a number of tests, 0 or more, not %d"
                                % opt.rprofile_slowest)
    if opt.rprofile_element_number < 1:
        raise pytest.UsageError("--rprofile-element-number: a number of rows, 1 or more, not %d"
                                % opt.rprofile_element_number)
    directory = _directory(config, opt.rprofile or DEFAULT_DIR)
    if opt.rprofile_sample:
        _check_sampler(opt.rprofile_rate)
    elif config.pluginmanager.hasplugin("profiling") and (
            getattr(opt, "profile", False) or getattr(opt, "profile_svg", False)):
        # One profile hook per interpreter: on 3.12+ the second profiler cannot start, before
        # that it silently takes the hook over from the first.
        raise pytest.UsageError("--rprofile: pytest-profiling's --profile traces the tests "
                                "too, and only one tracer can: give one of them (or "
                                "--rprofile-sample, which sets no hook)")

    from rprofile.pytest_run.session import ProfilingSession

    config.pluginmanager.register(ProfilingSession(config, directory), "rprofile-session")


def _directory(config, name):
    """DIR made absolute from where pytest was started (tests may change directory) and
    created; a usage error if it cannot be."""
    path = os.path.abspath(os.path.join(config.invocation_params.dir, name))
    if os.path.exists(path) and not os.path.isdir(path):
        raise pytest.UsageError(
            "--rprofile: %s is a file, not a directory (to name the directory write "
            "--rprofile=DIR; a word after a bare --rprofile is taken as DIR)" % name)
    if _given_apart(config, name) and os.path.isdir(path) and any(
            entry.endswith(".py") for entry in os.listdir(path)):
        raise pytest.UsageError(
            "--rprofile: %s holds Python files: to profile the tests in it, put it first "
            "(pytest %s --rprofile) or write --rprofile=DIR" % (name, name))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise pytest.UsageError("--rprofile: cannot make the directory %s: %s"
                                % (name, e.strerror or e)) from None
    return path


def _given_apart(config, name):
    """Whether DIR came as the word after a bare --rprofile on the command line, where a
    path to the tests is easily taken for it."""
    args = [str(a) for a in config.invocation_params.args]
    return any(a == "--rprofile" and b == name for a, b in zip(args, args[1:]))


def _check_sampler(rate):
    """Samples for an instant, so that a process that cannot be sampled here is a usage
    error now rather than a failure at the first test."""
    from rprofile.sampling import Sampler

    try:
        with Sampler(rate=rate):
            pass
    except (OSError, ValueError) as e:
        raise pytest.UsageError("--rprofile-sample: this process cannot be sampled: %s"
                                % e) from None
