"""``python -m rprofile.sampling run|attach``: the command line of Python 3.15's
``python -m profiling.sampling``, its main options mapped onto rprofile's sampler.

run [-m] target [args]   start the program and sample it
attach PID               sample a running process
-i/--interval USEC       microseconds between samples (default 100: 10,000 Hz)
-d/--duration SECONDS    stop sampling after this long (default 10)
-a/--all-threads         every thread (default: the main thread only)
--subprocesses           also every Python process the target starts, each one's output in a
                         file of its own named with its pid (FILE_PID.EXT, profile.PID.pstats)
--mode wall|cpu|gil      which threads a sample counts
--blocking               stop the target's threads for each sample (consistent stacks)
--pstats (default) | --collapsed | --flamegraph, with -o/--output FILE
--sort KEY, -l/--limit N, --no-summary   the printed table
"""

import argparse
import os
import sys
import types

from rprofile.sampling import run as _sampled_run
from rprofile._rprofile import MAX_SAMPLING_RATE

# 3.15's sort choices as pstats sort keys over rprofile's sampled stats (ncalls = cumulative
# samples, primitive calls = direct samples, times = samples x interval).
SORTS = {
    "nsamples": "pcalls",
    "tottime": "tottime",
    "cumtime": "cumulative",
    "sample-pct": "tottime",
    "cumul-pct": "cumulative",
    "nsamples-cumul": "calls",
    "name": "name",
}
DEFAULT_NAMES = {"pstats": "pstats.%d.pstats", "collapsed": "collapsed.%d.txt",
                 "flamegraph": "flamegraph.%d.svg"}


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m rprofile.sampling",
        description="Sample a process's stacks (the command line of Python 3.15's "
                    "profiling.sampling, on rprofile's sampler).")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a script or module and sample it")
    run.add_argument("-m", "--module", action="store_true",
                     help="run the target as a module (like python -m)")
    run.add_argument("target", help="script file or module name")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")
    attach = commands.add_parser("attach", help="sample a running process")
    attach.add_argument("pid", type=int, help="process id")
    for sub in (run, attach):
        sub.add_argument("-i", "--interval", type=int, default=100, metavar="MICROSECONDS",
                         help="time between samples (default 100)")
        sub.add_argument("-d", "--duration", type=float, default=10, metavar="SECONDS",
                         help="sampling duration (default 10)")
        sub.add_argument("-a", "--all-threads", action="store_true",
                         help="sample every thread, not just the main thread")
        sub.add_argument("--mode", choices=["wall", "cpu", "gil"], default="wall",
                         help="wall: every sample; cpu: threads on a CPU; gil: the GIL holder")
        sub.add_argument("--blocking", action="store_true",
                         help="stop the target's threads during each sample for consistent "
                              "stacks (slower target)")
        sub.add_argument("--subprocesses", action="store_true",
                         help="also profile the Python processes the target starts, each "
                              "one's output to a file named with its pid")
        formats = sub.add_mutually_exclusive_group()
        for name, what in (("pstats", "a pstats file with -o, else the table (default)"),
                           ("collapsed", "folded stacks for flame graph tools"),
                           ("flamegraph", "an interactive flame graph (SVG)")):
            formats.add_argument("--" + name, action="store_const", const=name,
                                 dest="format", help=what)
        sub.add_argument("-o", "--output", dest="outfile", default=None,
                         help="output file (default: the table on stdout for pstats, "
                              "FORMAT.PID.EXT for the others)")
        sub.add_argument("--sort", choices=sorted(SORTS), default=None,
                         help="sort order of the table (default: nsamples)")
        sub.add_argument("-l", "--limit", type=int, default=None,
                         help="rows of the table (default: 15)")
        sub.add_argument("--no-summary", action="store_true",
                         help="no summary line above the table")
        sub.set_defaults(format="pstats")
    return parser


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.interval <= 0:
        parser.error("--interval must be > 0 microseconds")
    if 1e6 / args.interval > MAX_SAMPLING_RATE:
        parser.error("--interval must be at least %g microseconds (a read takes tens of "
                     "microseconds)" % (1e6 / MAX_SAMPLING_RATE))
    if args.duration <= 0:
        parser.error("--duration must be > 0 seconds")
    if args.format != "pstats" and (args.sort or args.limit or args.no_summary):
        parser.error("--sort, --limit and --no-summary go with --pstats only")
    pid = args.pid if args.command == "attach" else None
    outfile = args.outfile
    if outfile is None and args.format != "pstats":
        outfile = DEFAULT_NAMES[args.format] % (pid if pid is not None else os.getpid())
    options = types.SimpleNamespace(
        rate=1e6 / args.interval, mode=args.mode, duration=args.duration, lines=False,
        limit=20, all_threads=args.all_threads, subprocesses=args.subprocesses,
        blocking=args.blocking,
        apart=args.subprocesses,
        outfile=outfile if args.format == "pstats" else None,
        collapsed=outfile if args.format == "collapsed" else None,
        flamegraph=outfile if args.format == "flamegraph" else None, speedscope=None,
        sort=SORTS[args.sort or "nsamples"],
        rows=args.limit if args.limit is not None else 15, summary=not args.no_summary,
        table=args.format == "pstats")
    for name in ("outfile", "collapsed", "flamegraph"):
        if getattr(options, name) is not None:
            setattr(options, name, os.path.abspath(getattr(options, name)))
    try:
        if pid is not None:
            _sampled_run.check_pid(parser, pid)
            return _sampled_run.attach(pid, options)
        if not args.module and not os.path.isfile(args.target):
            parser.error("can't open file %r: No such file or directory" % args.target)
        command = _sampled_run.program_command(args.module, [args.target] + args.args)
        return _sampled_run.run_program(command, options)
    except (ValueError, OSError) as exc:
        parser.error(_sampled_run.explain(exc, pid))


if __name__ == "__main__":
    sys.exit(main())
