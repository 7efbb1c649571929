"""The command line's sampling runs: start a program and sample it from outside, or attach to a
running process; then print the table (or write -o) and the other outputs asked for."""

import copy
import os
import signal
import sys
import time

from rprofile.sampling import children as _sampled_processes
from rprofile.outputs.run import asked_sort, print_samples, write_outputs
from rprofile.sampling import Sampler

# How long a started program may take to load its interpreter before it is sampled.
STARTUP_SECONDS = 10.0


def _attach_when_ready(proc, options):
    """A started Sampler on the program of `proc` once its interpreter is loaded; None if it
    ended first. Until the dynamic loader has mapped libpython the process is not yet Python."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            return _sampler(options, proc.pid).start()
        except (ValueError, OSError) as exc:
            # A refusal to block is final; anything else may be a program still starting.
            refused = isinstance(exc, PermissionError) and _refused(exc)
            if refused or (proc.poll() is None and time.monotonic() > deadline):
                raise
        if proc.poll() is not None:
            return None
        time.sleep(0.001)


def _sampler(options, pid):
    sampler = Sampler(options.rate, options.mode, pid=pid, duration=options.duration,
                      all_threads=getattr(options, "all_threads", True),
                      subprocesses=getattr(options, "subprocesses", False),
                      blocking=getattr(options, "blocking", False),
                      record_last=getattr(options, "record_last", None),
                      stall=getattr(options, "stall", None),
                      _child_unwaited=True)
    sampler.program = getattr(options, "program", sampler.program)
    return sampler


def run_program(command, options):
    """Runs `command` (a list: the interpreter and its arguments), sampling it until it exits;
    returns its exit status (as a shell gives it: 128 + n for a signal n)."""
    import subprocess  # here: an attach (--pid) starts no program and need not import it

    proc = subprocess.Popen(command)
    options.program = " ".join(command[1:])
    # Ctrl-C reaches the program (same process group); we stay to report what was collected.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    dumping = None
    try:
        sampler = _attach_when_ready(proc, options)
        if sampler is not None:
            dumping = _dump_on_signal(sampler, options)
        if sampler is not None and sampler.blocking:
            # Ptrace stops are reported to every thread's waits here: the program is waited
            # for by /proc until the sampler has let go of it.
            _wait_by_proc(proc.pid, sampler)
            sampler.stop()
        status = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        if dumping is not None:
            signal.signal(signal.SIGUSR1, dumping)
    if sampler is None:
        print("rprofile: the program ended before its interpreter could be sampled",
              file=sys.stderr)
    else:
        if not sampler.blocking:
            sampler.stop()
        if not report(sampler, options):
            return 1
    return 128 - status if status < 0 else status


def _say_bound(options):
    """Says what a flight recorder keeps, and its memory at the chosen rate."""
    from rprofile._rprofile import _RECORDING_BYTES

    mark, tick = _RECORDING_BYTES
    reads = options.rate * options.record_last

    def mb(n):
        return "%.1f MB" % (n / 1e6) if n >= 1e6 else "%d KB" % round(n / 1e3)

    print("rprofile: keeping the last %g s (kill -USR1 %d writes them now): at %g Hz, %s for "
          "the reads and %s a thread sampled, at most twice that while buffers grow"
          % (options.record_last, os.getpid(), options.rate, mb(reads * tick), mb(reads * mark)),
          file=sys.stderr, flush=True)


def _dump_on_signal(sampler, options):
    """Makes SIGUSR1 to this process write the outputs of what the run kept so far (a flight
    recorder: its last seconds), each beside its file and named with the time; the table is
    printed when no file is asked for. Returns the handler it replaced."""

    if getattr(options, "record_last", None) is not None:
        _say_bound(options)

    def dump(signum, frame):
        try:
            recent = sampler.recent()
        except RuntimeError:
            return  # the run just ended: its outputs come at the end
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dumped = copy.copy(options)
        dumped.stall = None  # the stalls come at the end
        for name in _FILE_OUTPUTS:
            setattr(dumped, name, _stamped(getattr(options, name, None), stamp))
        report(recent, dumped)
        if dumped.outfile is not None:
            print("rprofile: wrote %s" % dumped.outfile, file=sys.stderr, flush=True)

    return signal.signal(signal.SIGUSR1, dump)


# The outputs that are files, as the options name them.
_FILE_OUTPUTS = ("outfile", "collapsed", "speedscope", "flamegraph", "html", "pprof")


def _stamped(path, stamp):
    """FILE-STAMP.EXT beside FILE.EXT (-2, -3, ... after it when taken); None for None."""
    if path is None:
        return None
    stem, ext = os.path.splitext(path)
    if path.endswith(".pb.gz"):
        stem, ext = path[:-len(".pb.gz")], ".pb.gz"
    candidate, n = "%s-%s%s" % (stem, stamp, ext), 1
    while os.path.exists(candidate):
        n += 1
        candidate = "%s-%s-%d%s" % (stem, stamp, n, ext)
    return candidate


def _refused(exc):
    """Whether a PermissionError is the sampler's own refusal to block (it says why), not
    the system's plain EPERM."""
    return exc.strerror is not None and exc.strerror != os.strerror(exc.errno or 1)


def _wait_by_proc(pid, sampler):
    """Waits until process `pid` (this process's child) has exited, by its /proc state, or
    the sampler has ended, without a wait system call."""
    while sampler.running:
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in (b"Z", b"X"):
            return
        time.sleep(0.01)


def attach(pid, options):
    """Samples process `pid` until Ctrl-C, `--duration`, or its exit (with --subprocesses,
    until it and every process it started exited); it keeps running unchanged. Returns 0, or 1
    when an output could not be written."""
    sampler = _sampler(options, pid).start()
    until = "for %g s" % options.duration if options.duration else "until it exits or Ctrl-C"
    print("rprofile: sampling process %d at %g Hz (%s mode%s) %s" % (
          pid, options.rate, options.mode, ", blocking" if sampler.blocking else "", until),
          file=sys.stderr, flush=True)
    dumping = _dump_on_signal(sampler, options)
    try:
        _wait(sampler, options)
    finally:
        signal.signal(signal.SIGUSR1, dumping)
    sampler.stop()
    return 0 if report(sampler, options) else 1


def _wait(sampler, options):
    """Waits for the run's end (Ctrl-C, --duration, the target's exit). On a terminal, a line
    on stderr rewritten in place says how long it has sampled, so that a long attach is seen
    to be alive; never in a file or a pipe."""
    tty = sys.stderr.isatty()
    start = last = time.monotonic()
    shown = ""
    try:
        while sampler.running:
            time.sleep(0.05)
            now = time.monotonic()
            if tty and now - last >= 0.25:
                last = now
                shown = "rprofile: sampled %.1f s at %g Hz (%s mode): %d samples%s" % (
                    now - start, options.rate, options.mode, sampler.reads,
                    "" if options.duration else ", Ctrl-C to stop")
                sys.stderr.write("\r" + shown)
                sys.stderr.flush()
    except KeyboardInterrupt:
        pass
    if shown:
        sys.stderr.write("\n")
        sys.stderr.flush()


def report(sampler, options):
    """The outputs asked for (a table, beside the files, unless -o or a report file takes its
    place; --lines under it); the stats table when no -o. With --subprocesses, the merge of the
    processes and a line per process (or, `options.apart`, each process's own outputs).
    Returns False when a file could not be written (it was saved in the temporary directory)."""
    if getattr(options, "apart", False) and sampler.processes():
        return _report_apart(sampler, options)
    html = getattr(options, "html", None)
    pprof = getattr(options, "pprof", None)
    processes = sampler.processes()
    written = write_outputs([
        ("collapsed", options.collapsed, sampler.write_collapsed),
        ("speedscope", options.speedscope, sampler.write_speedscope),
        ("flamegraph", options.flamegraph, lambda p: sampler.write_flamegraph(
            p, lines=getattr(options, "flamegraph_lines", False))),
        ("html", html, lambda p: sampler.to_html(p, sort=asked_sort(options))),
        ("pprof", pprof, sampler.dump_pprof),
        ("outfile", options.outfile, sampler.dump_stats)])
    # A report file (HTML, pprof) takes the table's place, as -o does.
    to_file = options.outfile is not None or html is not None or pprof is not None
    printed = not to_file and getattr(options, "table", True)
    if to_file:
        folder = None
        if options.outfile is not None and processes:
            folder = _sampled_processes.folder_for(options.outfile)
            _sampled_processes.save(processes, folder)
        print(sampler.summary(), file=sys.stderr)
        _sampled_processes.print_summary(processes, folder, file=sys.stderr)
    elif printed:
        if getattr(options, "summary", True):
            print(sampler.summary())
        stats = sampler.stats().strip_dirs().sort_stats(options.sort)
        print_samples(stats, *([options.rows] if getattr(options, "rows", None) else []))
        # Several processes' main threads alone are told apart by the lines per process.
        read = sum(p.sampler is not None for p in processes)
        if len(sampler.threads) > max(1, read):
            sampler.print_threads()
        _sampled_processes.print_summary(processes)
    if options.lines:
        if printed:
            print()
        sampler.print_lines(options.limit)
    if getattr(options, "stall", None) is not None:
        if printed:
            print()
        sampler.print_stalls(file=None if printed else sys.stderr)
    end = sampler._samples().end
    if end.startswith("failed"):
        print("rprofile: sampling ended early: %s" % end[len("failed: "):], file=sys.stderr)
    return written


def _report_apart(sampler, options):
    """Python 3.15's `--subprocesses` (`python -m rprofile.sampling`): the target's outputs as
    without it, and every other process's in files of its own, named with its pid: FILE_PID.EXT
    for an output file, profile.PID.pstats for the printed table."""
    root, *children = sampler.processes()
    written = True
    if root.sampler is not None:
        written = report(root.sampler, options)
    for p in children:
        if p.sampler is None or not p.samples:
            continue
        outputs = [("outfile", options.outfile, p.sampler.dump_stats),
                   ("collapsed", options.collapsed, p.sampler.write_collapsed),
                   ("flamegraph", options.flamegraph, lambda f, p=p: p.sampler.write_flamegraph(
                       f, lines=getattr(options, "flamegraph_lines", False)))]
        outputs = [(name, _with_pid(path, p.pid), write) for name, path, write in outputs]
        if getattr(options, "table", False) and options.outfile is None:
            outputs.append(("outfile", os.path.abspath("profile.%d.pstats" % p.pid),
                            p.sampler.dump_stats))
        written &= write_outputs(outputs)
    return written


def _with_pid(path, pid):
    """FILE_PID.EXT for FILE.EXT (None for None)."""
    if path is None:
        return None
    stem, ext = os.path.splitext(path)
    return "%s_%d%s" % (stem, pid, ext)


def program_command(module, args):
    """The command that runs the program as `python [-m] ...` would, with this interpreter."""
    return [sys.executable] + (["-m"] if module else []) + list(args)


def check_pid(parser, pid):
    if pid <= 0:
        parser.error("--pid must be a process id > 0, not %d" % pid)
    if pid == os.getpid():
        parser.error("--pid names this process; use rprofile.Sampler() in the program instead")


def explain(exc, pid):
    """The one-line usage error for a process that cannot be sampled."""
    import errno

    what = "process %d" % pid if pid is not None else "the program"
    if isinstance(exc, ProcessLookupError):
        return "%s: no such process" % what
    if isinstance(exc, PermissionError) and _refused(exc):
        return exc.strerror
    if isinstance(exc, PermissionError) or getattr(exc, "errno", None) == errno.EPERM:
        return ("not permitted to read %s's memory (ptrace access): run rprofile as the "
                "process's user, or as root or with CAP_SYS_PTRACE%s"
                % (what, _yama_hint()))
    return str(exc)


def _yama_hint():
    """What Yama asks for, where it is on and restricts attaching to non-children."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except (OSError, ValueError):
        return ""
    if scope == 0:
        return ""
    return ("; Yama's ptrace_scope is %d here: to attach to a process that is not rprofile's "
            "child as its user, set it to 0 (sysctl kernel.yama.ptrace_scope=0)" % scope)
