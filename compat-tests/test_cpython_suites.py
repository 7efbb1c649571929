"""CPython's own cProfile test suite, run against rprofile in place of cProfile.

The suites are the ones shipped with the interpreter running pytest, found from that interpreter
(``sysconfig``'s stdlib directory + ``test``): ``test/test_cprofile.py`` (3.15:
``test/test_profiling/test_tracing_profiler.py``, the suite of ``profiling.tracing``, which
cProfile now is), ``test/test_profile.py`` and their helper ``test/profilee.py``. Nothing is copied, so every Python version is checked
against its own cProfile's expectations (the golden ``pstats`` output of the tick-timer program in
``profilee.py``, the calling-convention labels, ``run``/``runctx``, the command line, ...).

How a CPython case is run against rprofile:

* ``test_cprofile.CProfileTest`` (which also inherits every ``test_profile.ProfileTest`` body) is
  subclassed with ``profilerclass = rprofile.Profile`` and ``profilermodule = rprofile``; its
  expected output stays cProfile's ``_ProfileOutput``.
* Interpreter subprocesses the suite starts with ``-m cProfile`` (or ``-m profiling.tracing``)
  are started with ``-m rprofile`` instead, and every subprocess a case starts is checked to have run rprofile.
* A case that imports ``_lsprof`` gets a ``_lsprof`` module whose ``Profiler`` is rprofile's
  native base class (the counterpart of ``_lsprof.Profiler``, which it names itself after).
Each case becomes one pytest test, ``test_cpython_case[<module>.<class>.<method>]``, that runs the
unittest case and fails with its tracebacks if it fails. Cases that cannot apply to rprofile are
skipped with the reason; behaviour that rprofile gets wrong is ``xfail(strict=True)`` with the
reason, so that a fix shows up as an XPASS failure and the mark gets removed.
"""

import contextlib
import importlib
import os
import sys
import sysconfig
import types
import unittest
from unittest import mock

import pytest

from support import run_unittest_case

import rprofile
from rprofile import _rprofile

STDLIB_TEST_DIR = os.path.join(sysconfig.get_paths()["stdlib"], "test")
# cProfile's suite, by version: its file and module.
_CPROFILE_SUITES = [("test_cprofile.py", "test.test_cprofile"),
                    (os.path.join("test_profiling", "test_tracing_profiler.py"),
                     "test.test_profiling.test_tracing_profiler")]
_CPROFILE_FILE, _CPROFILE_MODULE = next(
    (suite for suite in _CPROFILE_SUITES
     if os.path.isfile(os.path.join(STDLIB_TEST_DIR, suite[0]))), _CPROFILE_SUITES[0])
# The suite's name in the keys and test ids below ("test_cprofile" up to 3.14).
CPROFILE = _CPROFILE_MODULE.rpartition(".")[2]
_SUITE_FILES = (_CPROFILE_FILE, "test_profile.py", "profilee.py")

_missing = [f for f in _SUITE_FILES if not os.path.isfile(os.path.join(STDLIB_TEST_DIR, f))]
if _missing:
    pytest.skip(
        "this interpreter ships without CPython's test suite (%s missing from %s)"
        % (", ".join(_missing), STDLIB_TEST_DIR),
        allow_module_level=True,
    )

# Import as attributes of module objects only: a TestCase class bound at this module's top level
# would be collected by pytest and run against cProfile itself.
cpython_test_cprofile = importlib.import_module(_CPROFILE_MODULE)
import test.test_profile as cpython_test_profile  # noqa: E402

for _mod, _file in ((cpython_test_cprofile, _CPROFILE_FILE),
                    (cpython_test_profile, "test_profile.py")):
    if not os.path.samefile(os.path.abspath(_mod.__file__),
                            os.path.join(STDLIB_TEST_DIR, _file)):
        raise ImportError(
            "%s was imported from %s, not from this interpreter's stdlib test directory %s "
            "(is another 'test' package shadowing it on sys.path?)"
            % (_mod.__name__, _mod.__file__, STDLIB_TEST_DIR)
        )


# ---------------------------------------------------------------------------------------------
# The suite's classes, pointed at rprofile
# ---------------------------------------------------------------------------------------------


class RProfileCProfileTest(cpython_test_cprofile.CProfileTest):
    """test_cprofile.CProfileTest (with all of test_profile.ProfileTest's bodies) on rprofile."""

    __test__ = False  # run through test_cpython_case below, not collected by pytest directly
    profilerclass = rprofile.Profile
    profilermodule = rprofile


class RProfileTestCommandLine(cpython_test_cprofile.TestCommandLine):
    """test_cprofile.TestCommandLine on ``python -m rprofile``."""

    __test__ = False


# (CPython module, class name) -> class to run, for every TestCase class the two modules define.
ADAPTED_CLASSES = {
    (CPROFILE, "CProfileTest"): RProfileCProfileTest,
    (CPROFILE, "TestCommandLine"): RProfileTestCommandLine,
    # The pure-Python profile module's own class: not run (see NOT_APPLICABLE_CLASSES).
    ("test_profile", "ProfileTest"): cpython_test_profile.ProfileTest,
}

NOT_APPLICABLE_CLASSES = {
    ("test_profile", "ProfileTest"): (
        "test_profile.ProfileTest is the suite of the pure-Python 'profile' module: its golden "
        "output is profile's (':0(max)'-style labels, timings shifted by profile's own per-event "
        "accounting) and its profilermodule is 'profile'. Every one of its test bodies runs "
        "against rprofile as %s.CProfileTest.<same name>, which inherits them with "
        "cProfile's expectations." % CPROFILE
    ),
}


# ---------------------------------------------------------------------------------------------
# Per-case decisions
# ---------------------------------------------------------------------------------------------


def _not_applicable(module, cls_name, name):
    """The reason a CPython case cannot apply to rprofile, or None."""
    if (module, cls_name) in NOT_APPLICABLE_CLASSES:
        return NOT_APPLICABLE_CLASSES[module, cls_name]
    return None


XFAIL = {}


# Cases whose body imports _lsprof to exercise the profiler type directly; they get rprofile's
# native base class as _lsprof.Profiler.
LSPROF_CASES = {
    (CPROFILE, "CProfileTest", "test_bad_counter_during_dealloc"),
    (CPROFILE, "CProfileTest", "test_evil_external_timer"),
}



# ---------------------------------------------------------------------------------------------
# Adaptations
# ---------------------------------------------------------------------------------------------


class _Subprocesses:
    """Wraps the script_helper functions the suites start interpreters with: ``-m cProfile``
    becomes ``-m rprofile``, and every module run with -m is recorded."""

    HELPERS = ("assert_python_ok", "assert_python_failure")

    def __init__(self):
        self.modules_run = []

    def wrap(self, helper):
        def wrapper(*args, **env_vars):
            args = list(args)
            for i, arg in enumerate(args[:-1]):
                if arg == "-m":
                    if args[i + 1] in ("cProfile", "profiling.tracing"):
                        args[i + 1] = "rprofile"
                    self.modules_run.append(args[i + 1])
                    break
            return helper(*args, **env_vars)

        return wrapper

    @contextlib.contextmanager
    def patched(self):
        with contextlib.ExitStack() as stack:
            for module in (cpython_test_cprofile, cpython_test_profile):
                for name in self.HELPERS:
                    if hasattr(module, name):
                        stack.enter_context(
                            mock.patch.object(module, name, self.wrap(getattr(module, name)))
                        )
            yield self


@contextlib.contextmanager
def _lsprof_as_rprofile():
    """``import _lsprof`` gives a module whose Profiler is rprofile's native base class."""
    fake = types.ModuleType("_lsprof", "rprofile's native classes, standing in for _lsprof")
    fake.Profiler = _rprofile.Profiler
    fake.profiler_entry = rprofile.profiler_entry
    fake.profiler_subentry = rprofile.profiler_subentry
    with mock.patch.dict(sys.modules, {"_lsprof": fake}):
        yield


# ---------------------------------------------------------------------------------------------
# The pytest tests: one per CPython case
# ---------------------------------------------------------------------------------------------


def _suite_classes():
    """Every TestCase class defined in the two CPython modules, as (module, class name, class)."""
    for module in (cpython_test_cprofile, cpython_test_profile):
        short = module.__name__.rpartition(".")[2]
        for name, obj in sorted(vars(module).items()):
            if (isinstance(obj, type) and issubclass(obj, unittest.TestCase)
                    and obj.__module__ == module.__name__):
                yield short, name, obj


def _case_params():
    loader = unittest.TestLoader()
    params = []
    for module, cls_name, cls in _suite_classes():
        for name in loader.getTestCaseNames(cls):
            key = (module, cls_name, name)
            case_id = "%s.%s.%s" % key
            marks = []
            reason = _not_applicable(*key)
            if reason is not None:
                marks.append(pytest.mark.skip(reason="not applicable to rprofile: " + reason))
            elif key in XFAIL:
                marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[key]))
            params.append(pytest.param(key, id=case_id, marks=marks))
    return params




@pytest.mark.parametrize("key", _case_params())
def test_cpython_case(key, tmp_path, monkeypatch):
    module, cls_name, name = key
    cls = ADAPTED_CLASSES.get((module, cls_name))
    if cls is None:
        pytest.fail(
            "CPython's %s defines a test class %s that this file does not know: decide how it "
            "runs against rprofile (ADAPTED_CLASSES) or why it cannot (NOT_APPLICABLE_CLASSES)"
            % (module, cls_name)
        )
    if cls is RProfileCProfileTest:
        assert cls.profilerclass is rprofile.Profile and cls.profilermodule is rprofile

    # CPython's suites write TESTFN files in the current directory (regrtest runs them in a
    # scratch one).
    monkeypatch.chdir(tmp_path)
    subprocesses = _Subprocesses()
    with contextlib.ExitStack() as stack:
        stack.enter_context(subprocesses.patched())
        if key in LSPROF_CASES:
            stack.enter_context(_lsprof_as_rprofile())
        run_unittest_case(cls(name))

    # A case meant for the command line must have run rprofile's, never cProfile's or profile's.
    assert all(m == "rprofile" for m in subprocesses.modules_run), subprocesses.modules_run
    if cls is RProfileTestCommandLine:
        assert subprocesses.modules_run, "the command-line case started no `-m rprofile` process"
