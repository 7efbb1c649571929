"""CPython's own pstats test suite, run against rprofile.Stats in place of pstats.Stats.

The suite is the one shipped with the interpreter running pytest (``sysconfig``'s stdlib
directory + ``test/test_pstats.py``, with its data file ``test/pstats.pck``); nothing is copied,
so every Python version is checked against its own pstats' expectations.

How a CPython case is run against rprofile: ``test_pstats`` refers to the class as
``pstats.Stats`` through its module global ``pstats``, and to ``SortKey`` as a global imported
from pstats. For the duration of a case both globals are replaced: ``pstats`` by a copy of the
pstats module whose ``Stats`` is ``rprofile.Stats`` (and whose ``SortKey`` is ``rprofile.SortKey``),
``SortKey`` by ``rprofile.SortKey``. The real pstats module is left alone.

Cases whose body profiles something with ``cProfile`` run twice: with the suite's cProfile
(``[cProfile]``), and with the test module's ``cProfile`` global replaced by rprofile
(``[rprofile]``), so that rprofile.Stats also reads what rprofile.Profile / rprofile.run wrote.

Each case becomes one pytest test, ``test_cpython_pstats_case[<class>.<method>-<profiler>]``.
Cases that cannot apply are skipped with the reason; nothing is marked xfail.

``RPROFILE_STATS_SELFTEST=1`` puts pstats.Stats itself in place of rprofile.Stats, to check this
harness without rprofile.Stats.
"""

import inspect
import os
import sysconfig
import types
import unittest
from unittest import mock

import pytest

from support import run_unittest_case

import rprofile

SELFTEST = os.environ.get("RPROFILE_STATS_SELFTEST", "") not in ("", "0")

STDLIB_TEST_DIR = os.path.join(sysconfig.get_paths()["stdlib"], "test")
_SUITE_FILES = ("test_pstats.py", "pstats.pck")

_missing = [f for f in _SUITE_FILES if not os.path.isfile(os.path.join(STDLIB_TEST_DIR, f))]
if _missing:
    pytest.skip(
        "this interpreter ships without CPython's test suite (%s missing from %s)"
        % (", ".join(_missing), STDLIB_TEST_DIR),
        allow_module_level=True,
    )

# Imported as a module attribute only: a TestCase class bound at this module's top level would
# be collected by pytest and run against pstats itself.
import pstats  # noqa: E402
import test.test_pstats as cpython_test_pstats  # noqa: E402

if not os.path.samefile(os.path.dirname(os.path.abspath(cpython_test_pstats.__file__)),
                        STDLIB_TEST_DIR):
    raise ImportError(
        "%s was imported from %s, not from this interpreter's stdlib test directory %s "
        "(is another 'test' package shadowing it on sys.path?)"
        % (cpython_test_pstats.__name__, cpython_test_pstats.__file__, STDLIB_TEST_DIR)
    )

if SELFTEST:
    IMPL_STATS = pstats.Stats
    IMPL_SORTKEY = pstats.SortKey
    IMPL_MODULE = pstats
else:
    try:
        IMPL_STATS = rprofile.Stats
        IMPL_SORTKEY = rprofile.SortKey
        import rprofile.stats as IMPL_MODULE
    except (AttributeError, ImportError) as exc:
        raise ImportError(
            "rprofile.Stats is not available in this build (%s); set RPROFILE_STATS_SELFTEST=1 "
            "to check this test file against pstats itself" % exc
        ) from exc


def _pstats_for_the_suite():
    """A stand-in for the suite's ``pstats`` global: pstats' namespace, with rprofile's Stats
    and SortKey, and rprofile.stats' version of any other name it defines."""
    fake = types.ModuleType("pstats", "pstats, with rprofile.Stats in place of pstats.Stats")
    fake.__dict__.update({k: v for k, v in vars(pstats).items()
                          if k not in ("__name__", "__doc__", "__loader__", "__spec__")})
    fake.Stats = IMPL_STATS
    fake.SortKey = IMPL_SORTKEY
    for name in ("add_callers",):
        if hasattr(IMPL_MODULE, name):
            setattr(fake, name, getattr(IMPL_MODULE, name))
        else:
            delattr(fake, name)  # a case using it must be marked not applicable
    return fake


# ---------------------------------------------------------------------------------------------
# Per-case decisions
# ---------------------------------------------------------------------------------------------

KNOWN_CLASSES = {"AddCallersTestCase", "StatsTestCase", "LazyImportTest"}


def _ensure_lazy_imports_of_rprofile(imported_module, modules_to_block):
    """The suite's ``ensure_lazy_imports`` (3.14+) for the module standing in for pstats:
    importing ``rprofile.stats`` in a fresh interpreter must not import `modules_to_block`.
    CPython's helper runs ``python -S``, where an installed rprofile is not importable; this
    one keeps site-packages and checks that nothing blocked is loaded before the import."""
    import subprocess
    import sys

    assert imported_module == "pstats", imported_module
    script = (
        "import sys\n"
        "blocked = set(%r)\n"
        "before = blocked & sys.modules.keys()\n"
        "import rprofile.stats\n"
        "after = blocked & sys.modules.keys()\n"
        "assert not before, 'imported at startup: %%s' %% before\n"
        "assert not after, 'imported by rprofile.stats: %%s' %% after\n"
    ) % (sorted(modules_to_block),)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _not_applicable(cls_name, name):
    """The reason a CPython case cannot apply to rprofile.Stats, or None."""
    if cls_name == "AddCallersTestCase" and not hasattr(IMPL_MODULE, "add_callers"):
        return (
            "AddCallersTestCase tests pstats.add_callers, a module-level helper that merges two "
            "callers dicts; it is not part of the Stats API and rprofile.stats does not define "
            "it (the merging it does is covered by test_stats_compat's add() tests)"
        )
    return None


def _uses_cprofile(cls, name):
    """True if the case's body (or its setUp) profiles with the suite's cProfile global."""
    sources = [inspect.getsource(getattr(cls, name))]
    if "setUp" in vars(cls):
        sources.append(inspect.getsource(cls.setUp))
    return any("cProfile." in src for src in sources)


# ---------------------------------------------------------------------------------------------
# The pytest tests: one per CPython case (and profiler)
# ---------------------------------------------------------------------------------------------


def _suite_classes():
    for name, obj in sorted(vars(cpython_test_pstats).items()):
        if (isinstance(obj, type) and issubclass(obj, unittest.TestCase)
                and obj.__module__ == cpython_test_pstats.__name__):
            yield name, obj


def _case_params():
    loader = unittest.TestLoader()
    params = []
    for cls_name, cls in _suite_classes():
        for name in loader.getTestCaseNames(cls):
            profilers = ["cProfile", "rprofile"] if _uses_cprofile(cls, name) else ["-"]
            for profiler in profilers:
                case_id = "%s.%s" % (cls_name, name)
                if profiler != "-":
                    case_id += "-" + profiler
                marks = []
                reason = _not_applicable(cls_name, name)
                if reason is not None:
                    marks.append(pytest.mark.skip(reason="not applicable to rprofile: " + reason))
                params.append(pytest.param(cls_name, name, profiler, id=case_id, marks=marks))
    return params




@pytest.mark.parametrize("cls_name, name, profiler", _case_params())
def test_cpython_pstats_case(cls_name, name, profiler, tmp_path, monkeypatch):
    if cls_name not in KNOWN_CLASSES:
        pytest.fail(
            "CPython's test_pstats defines a test class %s that this file does not know: decide "
            "how it runs against rprofile.Stats or why it cannot" % cls_name
        )
    cls = getattr(cpython_test_pstats, cls_name)
    # The suite writes its temporary files with tempfile; run it in a scratch directory anyway.
    monkeypatch.chdir(tmp_path)
    fake = _pstats_for_the_suite()
    patches = [mock.patch.object(cpython_test_pstats, "pstats", fake),
               mock.patch.object(cpython_test_pstats, "SortKey", IMPL_SORTKEY)]
    if profiler == "rprofile":
        patches.append(mock.patch.object(cpython_test_pstats, "cProfile", rprofile))
    if hasattr(cpython_test_pstats, "ensure_lazy_imports") and not SELFTEST:
        patches.append(mock.patch.object(cpython_test_pstats, "ensure_lazy_imports",
                                         _ensure_lazy_imports_of_rprofile))
    for p in patches:
        p.start()
    try:
        assert cpython_test_pstats.pstats.Stats is IMPL_STATS
        run_unittest_case(cls(name))
    finally:
        for p in reversed(patches):
            p.stop()
    assert cpython_test_pstats.pstats is pstats
