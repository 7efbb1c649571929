"""``rprofile top``: watch a running program live, as ``py-spy top`` and Python 3.15's
``profiling.sampling --live`` do: a full-screen view of its threads and hottest functions (or
lines), refreshed every second, over the last seconds or since the start. The program is
sampled from outside (the sampler's reads) and keeps running when the view is left."""

import argparse
import os
import shutil
import sys
import tempfile

from rprofile._rprofile import MAX_SAMPLING_RATE

__all__ = ["main"]

# The seconds of "the last seconds".
WINDOW = 5.0
# With --stall, the seconds of samples kept in time order (where the stalls are found).
STALL_MEMORY = 120


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m rprofile top",
        usage="python -m rprofile top (--pid PID | script.py [args] | -m module [args]) "
              "[--rate HZ] [--mode wall|cpu|gil] [--blocking] [--stall MS] [--subprocesses]",
        description="A live view of a Python program's threads and hottest functions, "
                    "refreshed every second (q quits and leaves the program running; ? lists "
                    "the keys).")
    p.add_argument("--pid", type=int, default=None, help="watch this running process")
    p.add_argument("-m", dest="module", default=None, metavar="MODULE",
                   help="run this module (as python -m) and watch it")
    p.add_argument("--rate", type=float, default=1000.0, metavar="HZ",
                   help="samples a second (default 1000)")
    p.add_argument("--mode", default="wall", choices=["wall", "cpu", "gil"],
                   help="wall: every thread; cpu: threads on a CPU; gil: the GIL's holder")
    p.add_argument("--blocking", action="store_true",
                   help="stop the program's threads (ptrace) for each sample, as py-spy top "
                        "does by default: no read is torn, and the shares of short functions "
                        "do not lean to their callers (the header's %% torn); the program "
                        "runs slower for it (see --sample's --blocking)")
    p.add_argument("--stall", type=float, default=None, metavar="MS",
                   help="show, as they happen, the stalls of the last %d s: each stretch of MS "
                        "milliseconds or longer in which a thread ran without a break (see "
                        "--sample's --stall)" % STALL_MEMORY)
    p.add_argument("--subprocesses", action="store_true",
                   help="also every Python process it starts, and those start: their threads "
                        "listed under their pids")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script and its arguments")
    return p


def main(argv=None):
    """The command line; returns the exit status: 0 after q, the program's own when it ends
    (a started program), 2 for a usage error or a process that cannot be read."""
    from rprofile.sampling import run as _run

    parser = _parser()
    options = parser.parse_args(argv)
    if not 0 < options.rate <= MAX_SAMPLING_RATE:
        parser.error("--rate must be a number of samples a second in (0, %g], not %g"
                     % (MAX_SAMPLING_RATE, options.rate))
    if options.pid is not None and (options.args or options.module):
        parser.error("--pid watches a running process: no program to start (%s)"
                     % (options.module or options.args[0]))
    if options.pid is None and options.module is None and not options.args:
        parser.error("give one of --pid PID, a script or -m module")
    if options.pid is not None:
        _run.check_pid(parser, options.pid)
    elif options.module is None and not os.path.isfile(options.args[0]):
        parser.error("can't open file %r: No such file or directory" % options.args[0])
    if options.stall is not None and not options.stall > 0:
        parser.error("--stall must be a number of milliseconds > 0, not %g" % options.stall)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        parser.error("top draws on a terminal, and this one's standard input or output is "
                     "not one; record with `python -m rprofile --sample` instead")
    options.duration = None
    options.record_last = WINDOW if options.stall is None else STALL_MEMORY
    # The stalls are shown as they happen, from each process's recent samples: the sampler
    # itself keeps none for the end (one process's would not be the family's).
    options.view_stall, options.stall = options.stall, None
    try:
        if options.pid is not None:
            return _watch_pid(options)
        return _watch_program(options)
    except (ValueError, OSError) as exc:
        print("rprofile top: error: %s" % _run.explain(exc, options.pid), file=sys.stderr)
        return 2


def _write_dump(pid, folder):
    """`d`: every thread's stack now, as `rprofile dump` prints it, in rprofile-dump-PID-N.txt
    (the first N free) in `folder`; its path."""
    from rprofile.sampling.dump import dump, format_dump

    text = format_dump(pid, dump(pid))
    n = 1
    while True:
        path = os.path.join(folder, "rprofile-dump-%d-%d.txt" % (pid, n))
        try:
            with open(path, "x") as f:
                f.write(text + "\n")
            return path
        except FileExistsError:
            n += 1


def _view(sampler, title, stall_ms):
    """The view, until q or the run's end, with the stalls of `stall_ms` or longer (None: no
    stalls); says what it wrote. Returns how it ended."""
    try:
        stall = None if stall_ms is None else stall_ms / 1000.0
        folder = os.getcwd()
        how, written = sampler._core.top(title, WINDOW, folder, stall,
                                         lambda: _write_dump(sampler.pid, folder))
    finally:
        if sampler.running or sampler._core is not None:
            sampler.stop()
    for path in written:
        print("rprofile: wrote %s" % path, file=sys.stderr)
    return how


def _watch_pid(options):
    from rprofile.sampling import run as _run

    sampler = _run._sampler(options, options.pid).start()
    how = _view(sampler, "pid %d" % options.pid, options.view_stall)
    if how == "quit":
        print("rprofile top: stopped watching process %d; it runs on" % options.pid,
              file=sys.stderr)
    else:
        print("rprofile top: process %d ended (or can no longer be read)" % options.pid,
              file=sys.stderr)
    return 0


def _watch_program(options):
    """Starts the program, its output kept in a file while the view holds the screen (and
    shown after it), and watches it."""
    import signal
    import subprocess

    from rprofile.sampling import run as _run

    module = options.module is not None
    args = ([options.module] if module else []) + list(options.args)
    command = _run.program_command(module, args)
    log = tempfile.NamedTemporaryFile(prefix="rprofile-top-", suffix=".log", delete=False)
    with log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sampler = _run._attach_when_ready(proc, options)
        how = "ended" if sampler is None else _view(sampler, " ".join(args), options.view_stall)
        if how == "quit" and proc.poll() is None:
            print("rprofile top: stopped watching; the program (pid %d) runs on, its output "
                  "going to %s" % (proc.pid, log.name), file=sys.stderr)
            return 0
        status = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    with open(log.name, "rb") as f:
        shutil.copyfileobj(f, sys.stdout.buffer)
    sys.stdout.flush()
    os.unlink(log.name)
    print("rprofile top: the program exited with status %d" % status, file=sys.stderr)
    return 128 - status if status < 0 else status
