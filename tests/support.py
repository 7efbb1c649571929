"""Helpers shared by the test suites (tests/ and compat-tests/ both have this folder on their
path, see pyproject.toml)."""


class Tick:
    """A counting timer: each call returns the next integer (1, 2, 3, ...), which makes
    cProfile deterministic and so lets its statistics be compared with rprofile's exactly."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n


def run_unittest_case(case):
    """Run one unittest case inside a pytest test: fail with its tracebacks, skip if it skipped
    itself (used to run CPython's own suites against rprofile)."""
    import pytest
    import unittest

    result = unittest.TestResult()
    case.run(result)
    problems = [
        "%s:\n%s" % (kind, traceback)
        for kind, entries in (("ERROR", result.errors), ("FAIL", result.failures))
        for _test, traceback in entries
    ]
    if result.unexpectedSuccesses:
        problems.append("unexpected success of a case CPython marks as an expected failure")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    if result.skipped:
        pytest.skip("skipped by CPython's suite itself: "
                    + "; ".join(reason for _test, reason in result.skipped))


def runcall_with_flags(prof, func, **kw):
    """prof.runcall(func), its enable() given the constructor's `subcalls`/`builtins` found in
    `kw`: from 3.14, as cProfile's, enable() sets both to True unless told otherwise, so the
    constructor's flags alone no longer count."""
    prof.enable(**{k: kw[k] for k in ("subcalls", "builtins") if k in kw})
    try:
        return func()
    finally:
        prof.disable()
