"""Sampling: look at a program's stacks many times a second from outside it.

``Sampler`` samples a process (by default this one) from a native thread that never takes the
GIL, reading its threads' stacks as another process would (``process_vm_readv``); the sampled
program gets no hook. ``python -m rprofile.sampling run|attach`` is the command line that
Python 3.15's ``python -m profiling.sampling`` has, mapped onto ``python -m rprofile --sample``.
"""

import os
from typing import NamedTuple, Optional

from rprofile._rprofile import MAX_SAMPLING_RATE
from rprofile._rprofile import SamplerCore as _SamplerCore
from rprofile._rprofile import _write_pprof, _write_report

__all__ = ["Sampler", "SampledProcess", "Stall"]

MODES = ("wall", "cpu", "gil")


class SampledProcess(NamedTuple):
    """One process of a run with ``subprocesses=True``: its ``pid``, parent (``ppid``) and
    command line (``argv``, as last read: an exec'd program's); ``end``: why its sampling
    ended (``"exited"``, ``"stopped"``, ``"duration"``, ``"failed: ..."``), or for a process
    never read, why not (not Python, exited before it could be read, ...); ``exit_status``:
    its wait status when it was seen exited before its parent reaped it (``os.waitstatus_to_
    exitcode`` reads it), else None; ``sampler``: a stopped ``Sampler`` holding its samples
    alone (its outputs as any Sampler's), or None when it was never read."""

    pid: int
    ppid: int
    argv: list
    end: str
    exit_status: Optional[int]
    sampler: Optional["Sampler"]

    @property
    def samples(self):
        """Stack samples recorded, over its threads (0 when never read)."""
        if self.sampler is None:
            return 0
        return sum(t[3] for t in self.sampler.threads)

    @property
    def seconds(self):
        """What its samples stand for: samples x interval."""
        return self.samples / self.sampler.rate if self.sampler is not None else 0.0


class Stall(NamedTuple):
    """A stretch in which one thread ran without a break (see ``Sampler``'s ``stall``):
    ``thread`` (its name and ids, as the tables head it), ``start`` (seconds from the start of
    sampling), ``duration`` (seconds), ``samples`` (the ticks it took), and ``frames``: where
    it was, innermost frames heaviest first, as ``(function name, filename, line, samples)``."""

    thread: str
    start: float
    duration: float
    samples: int
    frames: list


def _check_blocking(pid, child_unwaited):
    """Refuses a blocking Sampler whose stops this process would deadlock on or take: its own
    threads, or (unless the caller waits for it apart) a child, whose waits see ptrace stops."""
    if pid == os.getpid():
        raise ValueError("blocking=True stops the target's threads for each read, and a "
                         "Sampler cannot stop the threads of its own process: sample another "
                         "process (pid=...), or leave blocking off")
    if child_unwaited:
        return
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return
    if ppid == os.getpid():
        raise ValueError("blocking=True cannot read a child of this process: its waits "
                         "(Popen.wait, os.waitpid) would take the ptrace stops meant for the "
                         "sampler; run it under `python -m rprofile --sample --blocking`")


class Sampler:
    """Samples the stacks of every thread of a process ``rate`` times a second.

    ``mode``: ``"wall"`` counts every thread at every sample, ``"cpu"`` only the threads on a
    CPU at that sample, ``"gil"`` only the thread holding the GIL. ``pid``: the process to
    sample (default: this one). ``duration``: stop by itself after that many seconds.
    ``all_threads=False``: only the process's main thread. ``subprocesses=True``: also every
    Python process it starts and those start (multiprocessing workers of any start method,
    ``subprocess`` running Python, ``os.fork()``), found from outside as they start, each read
    on the same clock into its own samples: the results are their merge (each thread under its
    process's pid) and ``processes()`` gives each one's. In ``wall`` and ``cpu`` modes each
    sample also reads whether each thread is on a CPU (``/proc``), which tells idle threads
    apart and gives ``print_lines()`` its CPU seconds.
    ``blocking=True`` (another process only, Linux): every thread of the target (and, with
    ``subprocesses``, of each process read) is stopped with ptrace for each read and resumed
    after it, so that no read is torn; the target is slower for it (see the README). It cannot
    be this process (its threads cannot stop themselves), nor a child of this process unless
    nothing here waits for that child while sampling (a wait would take the stops meant for the
    sampler; so would ``os.wait()`` or ``os.waitpid(-1, ...)`` for any child, which this
    process must not call meanwhile): ``python -m rprofile --sample --blocking`` runs a
    program so. ``start()``
    raises PermissionError when the target may not be stopped (another tracer holds it).
    ``record_last=S`` (seconds): a flight recorder; only the samples of the last S seconds are
    kept, each with its time (16 bytes a read and 16 a thread read: 29 MB for 10 minutes at
    1000 Hz over 2 threads, and at most twice that while buffers grow), and the results are
    theirs; ``recent(seconds)`` and
    ``dump_recent(path, seconds)`` give the last seconds while it runs or after (with
    ``subprocesses``, each process keeps its own last seconds: while it runs, or all it kept
    after).
    ``stall=MS``: keep every sample in time order (16 bytes a thread read, 16 a read) and
    find the stalls: each stretch of MS milliseconds or longer in which a thread ran without
    a break (on a CPU in cpu mode, holding the GIL in gil mode, away from its idle wait in
    wall mode: on a CPU, or off it anywhere but the function it waits in most); ``stalls`` and
    ``print_stalls()`` give them (with ``record_last``, those of the window kept). Not with
    ``subprocesses`` (ValueError).
    Use ``start()``/``stop()`` or ``with Sampler() as s: ...``; then ``print_stats()``,
    ``dump_stats(path)``, ``stats()`` (an ``rprofile.Stats``), ``print_lines()``, and the
    exporters ``write_collapsed``, ``write_speedscope``, ``write_flamegraph``, ``to_html``,
    ``dump_pprof``.
    """

    def __init__(self, rate=1000, mode="wall", *, pid=None, duration=None, all_threads=True,
                 subprocesses=False, blocking=False, record_last=None, stall=None,
                 _child_unwaited=False):
        if mode not in MODES:
            raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), mode))
        if not 0 < rate <= MAX_SAMPLING_RATE:
            raise ValueError("rate must be a number of samples a second in (0, %g], not %r"
                             % (MAX_SAMPLING_RATE, rate))
        self.rate = rate
        self.mode = mode
        self.pid = os.getpid() if pid is None else pid
        self.duration = duration
        self.all_threads = all_threads
        self.subprocesses = subprocesses
        if blocking:
            _check_blocking(self.pid, _child_unwaited)
        self.blocking = bool(blocking)
        if record_last is not None:
            if not record_last > 0:
                raise ValueError("record_last must be a number of seconds > 0, not %r"
                                 % (record_last,))
        if stall is not None and not stall > 0:
            raise ValueError("stall must be a number of milliseconds > 0, not %r" % (stall,))
        if subprocesses and stall is not None:
            raise ValueError("the stalls of a run are found in one process's samples in time "
                             "order: stall does not go with subprocesses")
        self.record_last = record_last
        self.stall = stall
        # What the flame graph's title names: the program, or the process.
        self.program = "pid %d" % self.pid
        self._core = None
        self._profile = None

    def start(self):
        """Starts sampling (the target's stacks are read once here: a process that cannot be
        read raises now)."""
        if self._core is not None:
            raise RuntimeError("this Sampler is already running")
        core = _SamplerCore(self.pid, float(self.rate), self.mode, self.duration,
                            self.mode != "gil", self.all_threads, bool(self.subprocesses),
                            self.blocking,
                            None if self.record_last is None else float(self.record_last),
                            self.stall is not None)
        core.start()
        self._core = core
        self._profile = None
        return self

    @property
    def reads(self):
        """Ticks read so far, readable while it samples (with ``subprocesses``: ticks at which
        any process was read); once stopped, the reads taken (``counts[1]``)."""
        if self._core is not None:
            return self._core.reads
        return 0 if self._profile is None else self.counts[1]

    @property
    def running(self):
        """Whether it is sampling (false once stopped, its duration passed or the target
        exited)."""
        return self._core is not None and self._core.running

    def stop(self):
        """Stops sampling, with one last read (not waiting for the next tick); the samples
        are kept for the outputs."""
        if self._core is None:
            raise RuntimeError("this Sampler is not running")
        core, self._core = self._core, None
        self._profile = core.stop()
        return self

    def recent(self, seconds=None):
        """A stopped ``Sampler`` holding the samples of the last ``seconds`` (None: all this one
        kept), while it runs (taken between two reads) or after; its outputs are any Sampler's.
        Without ``record_last``, ``seconds`` must be None: everything so far."""
        if seconds is not None:
            if self.record_last is None:
                raise ValueError("recent(seconds) needs a flight recorder: "
                                 "Sampler(record_last=...)")
            if not seconds >= 0:
                raise ValueError("seconds must be >= 0, not %r" % (seconds,))
            seconds = float(seconds)
        if self._core is not None:
            profile = self._core.recent(seconds)
        elif self.record_last is None:
            profile = self._samples()
        elif self.subprocesses:
            # The family's windows were merged at its end: what it kept, no shorter window.
            if seconds is not None:
                raise ValueError("after a run with subprocesses, recent() gives what each "
                                 "process kept; recent(seconds) is for while it runs")
            profile = self._samples()
        else:
            profile = self._samples().recent(seconds)
        window = Sampler(self.rate, self.mode, pid=self.pid, all_threads=self.all_threads)
        window.program = self.program
        window._profile = profile
        return window

    def dump_recent(self, file, seconds=None):
        """Writes the stats file (as ``dump_stats``) of the last ``seconds`` (see ``recent``)."""
        self.recent(seconds).dump_stats(file)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        if self._core is not None:
            self.stop()

    def _keep_within(self, ident, code):
        """Keeps, of the thread whose ident is `ident`, only the samples taken inside a frame of
        `code` (a code object), each stack from the frame below its innermost one; other
        threads' samples stay as they are."""
        self._profile = self._samples().within(ident, code.co_filename, code.co_name)

    def _samples(self):
        if self._profile is None:
            raise RuntimeError("no samples yet: start() and stop() the Sampler first")
        return self._profile

    # -- results ---------------------------------------------------------------------------

    def stats(self):
        """The samples as an ``rprofile.Stats`` (a ``SampledStats``, printed with Python 3.15's
        sampled headings): per function, ncalls = samples in which it was on the stack,
        primitive calls = samples in which it was running, times = samples x interval."""
        from rprofile.stats import Stats

        # Stats (which becomes a SampledStats, as for a sampled file) keeps pstats' sort keys.
        return Stats(self._samples())

    def print_stats(self, sort=-1):
        """Prints the stats table as ``cProfile.Profile.print_stats`` lays it out, its figures
        worded as samples (samples on the stack / running, their shares of all samples, the
        seconds they stand for); with ``subprocesses=True``, the merge's, then a line per
        process."""
        from rprofile.outputs.run import print_samples

        print(self.summary())
        print_samples(self.stats().strip_dirs().sort_stats(sort))
        if self.subprocesses:
            self.print_processes()

    def processes(self):
        """With ``subprocesses=True``: every process the run found, the sampled one first, in
        the order found, as ``SampledProcess`` tuples (``[]`` otherwise), as
        ``Profile.processes()`` lists a traced run's."""
        out = []
        for pid, ppid, argv, end, exit_status, profile in self._samples().processes:
            sampler = None
            if profile is not None:
                sampler = Sampler(self.rate, self.mode, pid=pid, all_threads=self.all_threads)
                sampler.program = " ".join(argv[1:]) or "pid %d" % pid
                sampler._profile = profile
            out.append(SampledProcess(pid, ppid, list(argv), end, exit_status, sampler))
        return out

    def print_processes(self, file=None):
        """Prints a line per process of a ``subprocesses=True`` run: pid, parent, command,
        samples and the seconds they stand for, and how it ended or why it was never read."""
        from rprofile.sampling import children as _sampled_processes

        _sampled_processes.print_summary(self.processes(), file=file)

    def dump_stats(self, file):
        """Writes the stats file (marshal, read by ``pstats.Stats`` and the tools on it)."""
        self._samples().dump_stats(file)

    def summary(self):
        """One line: samples taken of asked, threads, dropped reads, cut stacks, time."""
        return self._samples().summary()

    def print_lines(self, limit=20, width=None):
        """Prints, per thread, the lines that took most samples (self and cumulative, wall and
        CPU seconds)."""
        if width is None:
            import shutil

            width = shutil.get_terminal_size((100, 24)).columns
        print(self._samples().lines_report(width, limit), end="")

    def print_threads(self, width=None):
        """Prints each thread's samples: how many, on a CPU, idle (not counted by the mode, or
        read in no Python code), dropped (torn reads)."""
        if width is None:
            import shutil

            width = shutil.get_terminal_size((100, 24)).columns
        print(self._samples().threads_table(width).rstrip("\n"))

    def write_collapsed(self, file):
        """Writes flamegraph.pl's folded stacks, one line per distinct stack, thread first."""
        self._samples().write_collapsed(file)

    def write_speedscope(self, file):
        """Writes a speedscope file: one sampled profile per thread."""
        self._samples().write_speedscope(file, self.program)

    def write_flamegraph(self, file, *, lines=False):
        """Writes an interactive flame graph (SVG: click to zoom, Ctrl-F to search), callers
        above callees, a frame per function (`lines=True`: per function and line)."""
        self._samples().write_flamegraph(file, self.program, lines)

    def to_html(self, file, *, sort=None):
        """Writes one self-contained HTML report: the table, callers and callees, the flame
        graph of the sampled call paths, each thread's, and the hottest files' lines with
        their samples (the sources are read now). `sort`: a pstats sort key whose column the
        table opens sorted by; tottime by default."""
        from rprofile.stats import report_sort

        # A run that looked for stalls lists them (its window's, for a flight recorder's).
        stall = None
        if self.stall is not None and self._samples().recorded:
            stall = self.stall / 1000.0
        _write_report(file, None, self.program, [], sampled=self._samples(),
                      sort=report_sort(sort), stall=stall)

    def dump_pprof(self, file):
        """Writes a gzipped pprof profile (for ``go tool pprof``, Pyroscope, Parca): one
        sample per distinct thread and stack, frames at their sampled lines, values
        ``samples/count`` and the mode's nanoseconds (``wall``, ``cpu`` or ``gil``), the thread
        as the labels ``thread`` and ``thread_id``."""
        _write_pprof(file, sampled=self._samples(), comments=[self.program])

    @property
    def stalls(self):
        """The stalls of ``stall`` ms or longer, in the order they began, as ``Stall`` tuples
        (ValueError without ``stall``)."""
        return [Stall(title, start, duration, samples, frames)
                for _, title, start, duration, samples, frames
                in self._samples().stalls(self._stall_seconds())]

    def print_stalls(self, file=None):
        """Prints the stalls: when each began, how long it lasted, its thread, and where it
        was (the heaviest innermost frames, with their shares)."""
        import sys

        text = self._samples().stalls_report(self._stall_seconds())
        print(text, end="", file=sys.stdout if file is None else file)

    def _stall_seconds(self):
        if self.stall is None:
            raise ValueError("no stalls are looked for without Sampler(stall=MS)")
        return self.stall / 1000.0

    @property
    def threads(self):
        """``[(native_id, ident, name, samples, on_cpu, idle, dropped), ...]``."""
        return self._samples().threads

    @property
    def counts(self):
        """``(asked, taken, dropped, truncated)``."""
        return self._samples().counts
