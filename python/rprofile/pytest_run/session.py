"""What ``pytest --rprofile`` does during a run: each test's profile taken and written.

A test's profile is a tracer (``rprofile.Profile``) enabled for the phases it covers
(``--rprofile-phases``) and disabled in between, or a ``Sampler``. The hook wrappers are the
innermost (``trylast``), so pytest's own wrappers (output capture, logging, warnings) stay
out of the profile. Files are written when pytest has finished with the test, so that the
durations pytest reports (``--durations``) do not include the writing.

Under pytest-xdist each worker writes its tests' files and hands their names to the
controller, which alone writes the merge and prints the summary.
"""

import hashlib
import os
import re

import pytest

from rprofile import Profile
from rprofile.pytest_run import report as _pytest_report
from rprofile.sampling import Sampler

# A node id keeps its characters that are safe in a file name on every system; the others
# become "_". A node id whose only others are its separators ("/", "::") keeps that readable
# name; one with any other (parameters, spaces, non-ASCII) or a long one has a digest of the
# node id added, so that two tests never share a file, whichever worker writes it.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_PLAIN = re.compile(r"[A-Za-z0-9_./:-]*\Z")
_MAX_STEM = 100


def file_stem(nodeid, digest=False):
    """The name of a test's stats file, without its suffix."""
    stem = _UNSAFE.sub("_", nodeid).lstrip(".")
    if digest or not _PLAIN.match(nodeid) or len(stem) > _MAX_STEM:
        data = nodeid.encode("utf-8", "surrogatepass")
        stem = stem[:_MAX_STEM] + "-" + hashlib.blake2s(data, digest_size=4).hexdigest()
    return stem


class _Traced:
    """A tracer profile, enabled for each phase it covers."""

    def __init__(self, rate):
        self._prof = Profile()

    def resume(self):
        self._prof.enable()

    def pause(self, last):
        self._prof.disable()

    def finish(self):
        self._prof.disable()

    def write(self, path):
        self._prof.dump_stats(path)
        return True


class _Sampled:
    """A sampler, started at the first phase it covers and stopped after the last: starting
    one costs milliseconds (it finds the runtime and reads every stack), so between the phases
    of a test it samples on, through pytest's reporting of them."""

    def __init__(self, rate):
        self._sampler = Sampler(rate=rate)
        self._state = "new"

    def resume(self):
        if self._state == "new":
            self._sampler.start()
            self._state = "started"

    def pause(self, last):
        if last:
            self.finish()

    def finish(self):
        if self._state == "started":
            self._sampler.stop()
            self._state = "stopped"

    def write(self, path):
        # No sample (a test shorter than an interval): pstats reads no empty file. (Asked of
        # the samples: 3.15's pstats, as rprofile.Stats there, makes an empty Stats of them.)
        if not any(thread[3] for thread in self._sampler.threads):
            return False
        self._sampler.dump_stats(path)
        return True


class _Unit:
    """One profile to be written: a test's, or one phase's."""

    def __init__(self, nodeid, suffix):
        self.nodeid = nodeid
        self.suffix = suffix
        self.recorder = None
        self.running = False
        self.failed = False


class ProfilingSession:
    """The plugin registered by ``--rprofile``: its hooks run for every test."""

    def __init__(self, config, directory):
        opt = config.option
        self.config = config
        self.directory = directory
        self.phases = opt.rprofile_phases
        self.sampled = opt.rprofile_sample
        self.rate = opt.rprofile_rate
        self.worker = hasattr(config, "workerinput")
        self._make = _Sampled if self.sampled else _Traced
        self._pending = []   # units of the running test, written at its logfinish
        self._active = None  # the unit that the running phase records into
        self._stems = {}     # file stem: node id, so that two tests never share a file
        self.files = {}      # node id: [stats file, ...] written this session
        self.durations = {}  # node id: seconds pytest reported for its profiled phases
        self.problems = []   # (node id, message): profiles not taken or not written
        self.unsampled = 0   # tests or phases too short to have a sample
        self.combined = None
        self.html = None

    # -- recording ---------------------------------------------------------------------

    def _covers(self, when):
        return self.phases != "call" or when == "call"

    def _begin(self, nodeid, when):
        unit = self._active
        if unit is None or unit.nodeid != nodeid or self.phases == "each":
            suffix = "-" + when if self.phases == "each" else ""
            unit = _Unit(nodeid, suffix)
            self._pending.append(unit)
            self._active = unit
        if unit.failed:
            return
        try:
            if unit.recorder is None:
                unit.recorder = self._make(self.rate)
            unit.recorder.resume()
            unit.running = True
        except (OSError, RuntimeError, ValueError) as e:
            # Another profiler holds the interpreter's hook (a test's own cProfile on
            # 3.12+, say): this test goes unprofiled, the run goes on.
            self._fail(unit, "not profiled: %s" % e)

    def _fail(self, unit, problem):
        unit.failed = True
        unit.running = False
        self.problems.append((unit.nodeid, problem))

    def _end(self, when):
        unit = self._active
        if unit is None:
            return
        last = self.phases != "all" or when == "teardown"
        if unit.running:
            unit.running = False
            try:
                unit.recorder.pause(last)
            except (OSError, RuntimeError, ValueError) as e:
                self._fail(unit, "profile lost: %s" % e)
        if last:
            self._active = None

    def _phase(self, nodeid, when):
        """The three hook wrappers' body: the phase recorded if the profile covers it."""
        covered = self._covers(when)
        if covered:
            self._begin(nodeid, when)
        yield
        if covered:
            self._end(when)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item.nodeid, "setup")

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item.nodeid, "call")

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item.nodeid, "teardown")

    def pytest_runtest_logreport(self, report):
        # Under xdist the controller gets the workers' reports here too.
        if self._covers(report.when):
            self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + \
                report.duration

    def pytest_runtest_logfinish(self, nodeid):
        self._write_pending()

    # -- writing -----------------------------------------------------------------------

    def _write_pending(self):
        self._active = None
        pending, self._pending = self._pending, []
        for unit in pending:
            if unit.recorder is None or unit.failed:
                continue
            # Already stopped, unless the test was cut short (interrupted): then its
            # profile so far.
            unit.running = False
            try:
                unit.recorder.finish()
            except (OSError, RuntimeError, ValueError) as e:
                self._fail(unit, "profile lost: %s" % e)
                continue
            self._write(unit)

    def _write(self, unit):
        stem = file_stem(unit.nodeid)
        if self._stems.setdefault(stem, unit.nodeid) != unit.nodeid:
            stem = file_stem(unit.nodeid, digest=True)
        path = os.path.join(self.directory, stem + unit.suffix + ".prof")
        try:
            if not unit.recorder.write(path):
                self.unsampled += 1
                return
        except OSError as e:
            self.problems.append((unit.nodeid, "not written: %s" % e))
            return
        self.files.setdefault(unit.nodeid, []).append(path)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """pytest-xdist's controller: a worker's files and problems."""
        out = getattr(node, "workeroutput", {}).get("rprofile")
        if out:
            for nodeid, paths in out["files"].items():
                self.files.setdefault(nodeid, []).extend(paths)
            self.problems.extend(tuple(p) for p in out["problems"])
            self.unsampled += out["unsampled"]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        self._write_pending()
        if self.worker:
            self.config.workeroutput["rprofile"] = {
                "files": self.files, "problems": [list(p) for p in self.problems],
                "unsampled": self.unsampled}
            return
        self.combined, self.html, problems = _pytest_report.merge(self)
        self.problems.extend(problems)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.worker:
            _pytest_report.summary(self, terminalreporter)
