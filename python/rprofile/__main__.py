"""python -m rprofile [-o output_file_path] [-s sort] [-m module | scriptfile] [arg] ...

The command line of ``python -m cProfile``, with four mendings: ``sys.exit(n)`` in the
profiled program keeps its exit status n; a missing script or module, and an output path that
could not be written, are usage errors (exit status 2) before the program runs rather than a
traceback. Stats are written (or printed) in every case, also when the program raises.
"""

import importlib.machinery
import importlib.util
import io
import os
import sys

from rprofile.outputs.run import asked_sort as _asked_sort
from rprofile._rprofile import MAX_SAMPLING_RATE
from rprofile.outputs.run import check_writable as _check_writable
from rprofile.outputs.run import print_memory as _print_memory
from rprofile.outputs.run import print_thread_summary as _print_thread_summary
from rprofile.outputs.run import write_outputs as _write_outputs
from rprofile.outputs.run import write_timeline as _write_timeline
from rprofile.outputs.types import profile_keywords as _profile_keywords

USAGE = "rprofile [-o output_file_path] [-s sort] [-m module | scriptfile] [arg] ..."

# pstats.Stats.sort_arg_dict_default's keys (tests/test_cli.py holds them equal on each
# version): importing pstats for them would cost every start, a sampler's attach too, ~15 ms.
SORT_KEYS = ("calls", "cumtime", "cumulative", "filename", "line", "module", "name", "ncalls",
             "nfl", "pcalls", "stdname", "time", "tottime")


def _parser():
    from optparse import OptionParser

    parser = OptionParser(usage=USAGE, prog="rprofile",
                          epilog="rprofile dump --pid PID prints what every thread of a running "
                                 "process is doing now (rprofile dump --help).")
    parser.allow_interspersed_args = False
    parser.add_option("-o", "--outfile", dest="outfile",
                      help="Save stats to <outfile>", default=None)
    parser.add_option("-s", "--sort", dest="sort",
                      help="Sort order when printing to stdout, based on pstats.Stats class",
                      # cProfile's default changed from standard name to cumulative in 3.11.
                      default=2 if sys.version_info >= (3, 11) else -1,
                      choices=list(SORT_KEYS))
    parser.add_option("-m", dest="module", action="store_true",
                      help="Profile a library module", default=False)
    parser.add_option("--threads", dest="threads", action="store_true", default=False,
                      help="Profile every thread, each on its own call stack, and print a "
                           "per-thread summary (also with -o)")
    parser.add_option("--async", dest="async_aware", action="store_true", default=False,
                      help="Count a coroutine as one call from start to return, its awaits "
                           "inside its cumulative time")
    parser.add_option("--clock", dest="clock", default=None,
                      choices=["wall", "cpu", "thread_cpu"],
                      help="Clock to time with: wall (default), cpu (process CPU time) or "
                           "thread_cpu (the running thread's CPU time); cpu and thread_cpu "
                           "read by a system call per event, adding ~20x the default's overhead")
    parser.add_option("--timeline", dest="timeline", default=None, metavar="TRACE_JSON",
                      help="Record every call and return and write them as Chrome trace-event "
                           "JSON (for Perfetto or chrome://tracing)")
    parser.add_option("--speedscope", dest="speedscope", default=None, metavar="OUT_JSON",
                      help="Record every call and return and write them in speedscope's format")
    parser.add_option("--memory", dest="memory", action="store_true", default=False,
                      help="Charge every allocation to the function that made it and print "
                           "the functions by net bytes allocated (also with -o)")
    parser.add_option("--types", dest="types", action="store_true", default=False,
                      help="Python 3.13+: count the objects created and destroyed by type and "
                           "by the function that made them, and print the types by objects "
                           "still alive (also with -o); built-in types left out")
    parser.add_option("--types-builtins", dest="types_builtins", action="store_true",
                      default=False, help="With --types: count built-in types too (int, str, "
                                          "tuple, dict, ...)")
    parser.add_option("--types-only", dest="types_only", default=None, metavar="NAMES",
                      help="With --types: count only these types (comma-separated, qualified "
                           "pkg.mod.Class or plain Class names)")
    parser.add_option("--types-gc", dest="types_gc", action="store_true", default=False,
                      help="With --types: collect garbage before the final counts, so that "
                           "objects in reference cycles count as destroyed")
    parser.add_option("--no-calls", dest="calls", action="store_false", default=True,
                      help="With --types: profile no call, count objects alone (each charged to "
                           "the frames running when it was made): the least cost; prints the "
                           "types alone")
    parser.add_option("--types-json", dest="types_json", default=None, metavar="OUT_JSON",
                      help="With --types: also write the types, with the functions that made "
                           "their objects, as JSON")
    parser.add_option("--rss", dest="rss", action="store_true", default=False,
                      help="With --timeline: sample the process's resident memory every 10 ms "
                           "into the trace")
    parser.add_option("--buffer-size", dest="buffer_size", type="int", default=1_000_000,
                      help="Events the timeline keeps (the newest; default 1000000)")
    parser.add_option("--subprocesses", dest="subprocesses", action="store_true",
                      default=False,
                      help="Profile every Python process the program starts (subprocess, "
                           "multiprocessing, concurrent.futures, os.fork) with the same "
                           "options; print the merged table, then one line per process. With "
                           "-o FILE the merge goes to FILE and each process's stats to "
                           "FILE.processes/PID-NAME.prof. With --sample they are sampled, "
                           "found from outside")
    parser.add_option("--sample", dest="sample", action="store_true", default=False,
                      help="Sample instead of tracing: read the program's stacks from outside "
                           "it, --rate times a second; the program runs with no hook (about "
                           "1-3% slower at 1000 Hz, the sampler taking its own CPU beside it)")
    parser.add_option("--rate", dest="rate", type="float", default=1000.0, metavar="HZ",
                      help="With --sample: samples a second (default 1000)")
    parser.add_option("--mode", dest="mode", default="wall", choices=["wall", "cpu", "gil"],
                      help="With --sample: wall counts every thread at every sample, cpu only "
                           "threads on a CPU, gil only the thread holding the GIL")
    parser.add_option("--pid", dest="pid", type="int", default=None,
                      help="Attach to this running Python process until Ctrl-C or --duration; "
                           "it keeps running. With --sample it is sampled from outside; "
                           "without, the exact profiler runs inside it (Python 3.14+, through "
                           "sys.remote_exec; the same Python version as rprofile's) and is "
                           "removed after: -o, -s, --html, --pprof as for a script")
    parser.add_option("--blocking", dest="blocking", action="store_true", default=False,
                      help="With --sample: stop the program's threads (ptrace) for each "
                           "sample, so that no read is torn (none dropped); the program runs "
                           "slower for it. Use it when the summary reports many torn reads")
    parser.add_option("--duration", dest="duration", type="float", default=None,
                      metavar="SECONDS", help="With --sample or --pid: stop after this long")
    parser.add_option("--record-last", dest="record_last", type="float", default=None,
                      metavar="SECONDS",
                      help="With --sample: a flight recorder; keep only the samples of the "
                           "last SECONDS (each read costs 16 bytes and 16 more a thread: "
                           "1000 Hz over 2 threads for 600 s is 29 MB, at most twice that "
                           "while buffers grow). The outputs are of that window, written at "
                           "the end and, named with the time, each time rprofile gets SIGUSR1")
    parser.add_option("--stall", dest="stall", type="float", default=None, metavar="MS",
                      help="With --sample: report each stretch of MS milliseconds or longer "
                           "in which a thread ran without a break (on a CPU in cpu mode, "
                           "holding the GIL in gil mode, away from its idle wait in wall "
                           "mode): when, how long, which thread, and where. Keeps every "
                           "sample in time order (16 bytes a read and 16 a thread)")
    parser.add_option("--lines", dest="lines", action="store_true", default=False,
                      help="With --sample: per thread, the lines that took most samples, with "
                           "wall and CPU seconds")
    parser.add_option("--limit", dest="limit", type="int", default=20,
                      help="With --lines: lines shown per thread (default 20)")
    parser.add_option("--collapsed", dest="collapsed", default=None, metavar="FILE",
                      help="With --sample: write folded stacks (flamegraph.pl's input)")
    parser.add_option("--flamegraph", dest="flamegraph", default=None, metavar="SVG",
                      help="With --sample: write an interactive flame graph (a frame per "
                           "function)")
    parser.add_option("--flamegraph-lines", dest="flamegraph_lines", action="store_true",
                      default=False, help="With --flamegraph: a frame per function and line")
    parser.add_option("--html", dest="html", default=None, metavar="REPORT_HTML",
                      help="Write one self-contained HTML report (table, callers and callees, "
                           "flame graph; sampled lines with --sample) instead of printing "
                           "the table")
    parser.add_option("--pprof", dest="pprof", default=None, metavar="FILE",
                      help="Write a gzipped pprof profile (go tool pprof, Pyroscope, Parca) "
                           "instead of printing the table")
    return parser


def _load_what_cprofile_has():
    """Imports what ``python -m cProfile`` has imported when the program starts (``pstats`` and
    through it ``dataclasses``, ``inspect``, ``ast``, ``typing``, ...): a program that imports
    them then finds them loaded, as under cProfile, and its profile holds no import of them
    that cProfile's does not."""
    if sys.version_info >= (3, 15):
        # cProfile is profiling.tracing's front there; its command line is that package's.
        import profiling.tracing.__main__  # noqa: F401
    else:
        import _lsprof  # noqa: F401
        import profile  # noqa: F401
        import runpy  # noqa: F401
    import pstats  # noqa: F401


def _module_target(parser, modname):
    # Only the top-level package is looked up here: finding a submodule would import its parent
    # before profiling starts, and the profile would miss that import.
    top = modname.partition(".")[0]
    try:
        found = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    if not top or not found:
        parser.error("No module named %r" % modname)
    import runpy

    code = "run_module(modname, run_name='__main__')"
    return code, {"run_module": runpy.run_module, "modname": modname}


def _script_target(parser, progname):
    try:
        with io.open_code(progname) as fp:
            source = fp.read()
    except OSError as exc:
        parser.error("can't open file %r: %s" % (progname, exc.strerror or exc))
    sys.path.insert(0, os.path.dirname(progname))
    if sys.version_info >= (3, 15):
        code = compile(source, progname, "exec", module="__main__")
    else:
        code = compile(source, progname, "exec")
    if sys.version_info >= (3, 14):
        return code, _main_module(progname).__dict__
    if sys.version_info >= (3, 12):
        spec = importlib.machinery.ModuleSpec(name="__main__", loader=None, origin=progname)
        globs = {"__spec__": spec, "__file__": spec.origin, "__name__": spec.name,
                 "__package__": None, "__cached__": None}
    else:
        globs = {"__file__": progname, "__name__": "__main__",
                 "__package__": None, "__cached__": None}
    return code, globs


def _main_module(progname):
    """3.14+ (gh-140729): the script runs in a real module, sys.modules["__main__"] from now
    on, without a spec as when run directly, so that multiprocessing's spawn and forkserver
    children find its functions."""
    spec = importlib.machinery.ModuleSpec(name="__main__", loader=None, origin=progname)
    module = importlib.util.module_from_spec(spec)
    sys.modules["__main__"] = module
    module.__dict__.update({"__spec__": None, "__file__": spec.origin, "__name__": spec.name,
                            "__package__": None})
    if sys.version_info < (3, 15):
        module.__cached__ = None
    return module


def main():
    if sys.argv[1:2] == ["dump"]:
        # `rprofile dump --pid PID`: a command of its own (py-spy's and 3.15's name); a script
        # named dump runs as ./dump.
        from rprofile.sampling import dump

        sys.exit(dump.main(sys.argv[2:]))
    if sys.argv[1:2] == ["top"]:
        # `rprofile top`: the live view (py-spy's name); a script named top runs as ./top.
        from rprofile.sampling import top

        sys.exit(top.main(sys.argv[2:]))
    from rprofile import Profile

    parser = _parser()
    if not sys.argv[1:]:
        parser.print_usage()
        sys.exit(2)
    options, args = parser.parse_args()
    if options.flamegraph_lines and options.flamegraph is None:
        parser.error("--flamegraph-lines needs --flamegraph")
    if options.pid is not None and not options.sample:
        from rprofile import _remote_profile

        return _remote_profile.main(parser, options, args)
    if options.sample or options.pid is not None:
        return _main_sampled(parser, options, args)
    for name in ("rate", "mode", "duration", "lines", "collapsed", "flamegraph", "blocking",
                 "record_last", "stall"):
        if getattr(options, name) != parser.defaults[name]:
            parser.error("--%s needs --sample" % name.replace("_", "-"))
    sys.argv[:] = args
    # The profiled program may chdir, so the output path is fixed now.
    for name in ("outfile", "timeline", "speedscope", "html", "pprof", "types_json"):
        if getattr(options, name) is not None:
            setattr(options, name, os.path.abspath(getattr(options, name)))
    if not args:
        parser.error("no module name given" if options.module else "no script given")
    if (options.types_builtins or options.types_only or options.types_gc
            or options.types_json or not options.calls) and not options.types:
        parser.error("--types-builtins, --types-only, --types-gc, --types-json and --no-calls "
                     "need --types")
    if not options.calls:
        for name in ("outfile", "html", "pprof", "timeline", "speedscope", "memory", "threads",
                     "async_aware"):
            if getattr(options, name) != parser.defaults[name]:
                parser.error("--no-calls profiles no call: it does not go with %s"
                             % ("-o" if name == "outfile" else "--" + name.replace("_aware", "")))
    if options.rss and options.timeline is None:
        parser.error("--rss needs --timeline (the samples are counters in the trace)")
    if options.threads and options.clock == "cpu":
        # The process's CPU clock advances with every thread's work, so each thread's calls
        # would be charged the others' CPU time too.
        parser.error("--threads with --clock cpu charges each thread the whole process's CPU "
                     "time; use --clock thread_cpu")
    for name in ("outfile", "timeline", "speedscope", "html", "pprof", "types_json"):
        _check_writable(parser, getattr(options, name))
    title = _report_title(options.module, args)

    _load_what_cprofile_has()
    if options.module:
        code, globs = _module_target(parser, args[0])
    else:
        code, globs = _script_target(parser, args[0])
    folder = _processes_folder(parser, options)

    try:
        timeline = options.timeline is not None or options.speedscope is not None
        prof = Profile(options.clock, threads=options.threads, async_aware=options.async_aware,
                       timeline=timeline, buffer_size=options.buffer_size,
                       memory=options.memory, rss=options.rss, subprocesses=folder or False,
                       **_types_options(options))
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    run = prof.runctx
    if folder is not None:
        run = _own_main(prof, options.module, args, code, globs)
    exit_request = lookup_error = None
    cli_pid = os.getpid()
    written = True  # every output file written (else one was saved elsewhere: exit status 1)
    try:
        try:
            run(code, globs, None)
        except SystemExit as exc:
            exit_request = exc
        except ImportError as exc:
            if not (options.module and _module_not_found(exc)):
                raise
            lookup_error = exc
        finally:
            if lookup_error is not None:
                pass  # nothing ran: no stats to show
            elif folder is not None and os.getpid() != cli_pid:
                pass  # a fork child leaving the program: it ends as the program has it end
            else:
                if folder is not None:
                    from rprofile.children import traced as _traced_children

                    _traced_children.save_own(prof)
                if options.outfile is not None:
                    written = _write_outputs([("outfile", options.outfile, prof.dump_stats)])
                elif options.html is None and options.pprof is None and options.calls:
                    prof.print_stats(options.sort)
                if folder is not None and (options.outfile is not None or options.html
                                           is not None or options.pprof is not None):
                    _print_processes(prof, options, folder)  # (print_stats prints them)
                # Asked for by name, so printed also when -o takes the stats table's place.
                if options.threads:
                    _print_thread_summary(prof)
                if options.memory:
                    _print_memory(prof.memory_stats() or {})
                if options.types:
                    prof.print_types()
            if lookup_error is None and os.getpid() == cli_pid:
                written &= _write_timeline(prof, options)
                written &= _write_outputs([
                    ("html", options.html,
                     lambda path: prof.to_html(path, title, sort=_asked_sort(options))),
                    ("pprof", options.pprof, lambda path: prof.dump_pprof(path, title)),
                    ("types_json", options.types_json, prof.dump_types)])
    except BrokenPipeError as exc:
        # Nothing more can be written; avoid "Exception ignored" at shutdown.
        sys.stdout = None
        sys.exit(exc.errno)
    finally:
        if folder is not None and options.outfile is None and os.getpid() == cli_pid:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    if lookup_error is not None:
        parser.error(str(lookup_error))
    if not written:
        sys.exit(1)
    if exit_request is not None:
        raise exit_request
    return parser


def _processes_folder(parser, options):
    """With --subprocesses: the folder for every process's stats file, made ready (next to
    -o, kept; else temporary); None without."""
    if not options.subprocesses:
        return None
    from rprofile.children import files as _processes

    if options.outfile is None:
        return _processes.temporary_folder()
    folder = _processes.folder_for(options.outfile)
    try:
        _processes.prepare_folder(folder)
    except OSError as exc:
        parser.error("cannot write the processes' files in %s: %s"
                     % (folder, exc.strerror or exc))
    return folder


def _own_main(prof, module, args, code, globs):
    """With --subprocesses, runctx with the program as sys.modules["__main__"], as `python
    script.py` or `python -m module` has it: multiprocessing pickles the program's functions
    by reference to __main__, and its spawn and forkserver children import the program from
    __main__'s file or module name."""
    from rprofile.children import traced as _traced_children

    _traced_children.name_this_process(_report_title(module, args),
                                       args[0] if module else os.path.basename(args[0]))
    if module:
        # runpy's own __main__ module (its alter_sys), as `python -m` has it.
        globs["alter_sys"] = True
        code = "run_module(modname, run_name='__main__', alter_sys=alter_sys)"
        return lambda _code, g, l: prof.runctx(code, g, l)

    if sys.modules["__main__"].__dict__ is globs:  # 3.14+: already the program's __main__
        return prof.runctx

    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(globs, __spec__=None)  # a script's __main__ has no spec
    main.__dict__.setdefault("__builtins__", __builtins__)

    def run(code, _globs, locals):
        saved = sys.modules.get("__main__")
        sys.modules["__main__"] = main
        try:
            prof.runctx(code, main.__dict__, locals)
        finally:
            sys.modules["__main__"] = saved

    return run


def _print_processes(prof, options, folder):
    """The per-process lines, naming the folder where the files are kept (with -o)."""
    from rprofile.children import files as _processes

    listed = prof.processes()
    kept = folder if options.outfile is not None else None
    _processes.print_summary(listed, folder=kept, this_pid=os.getpid())


SAMPLED_OUTPUTS = ("outfile", "speedscope", "collapsed", "flamegraph", "html", "pprof")


def _cannot_sample(message):
    """A process that cannot be sampled (it does not exist, is not Python, may not be read):
    one line, exit status 2; not a usage error, so no usage line."""
    print("rprofile: error: %s" % message, file=sys.stderr)
    sys.exit(2)


def _types_options(options):
    """Profile's keywords for --types and its filters (none without it)."""
    if not options.types:
        return {}
    return _profile_keywords([options.types_only or ""], options.types_builtins,
                             options.types_gc, options.calls)


def _main_sampled(parser, options, args):
    """`--sample`: run the program (or attach to --pid) and sample it from outside. Bad
    options are usage errors, as the tracer's are (the usage line, the error, exit status 2)."""
    from rprofile.sampling import run as _sampled_run

    defaults = parser.defaults
    for name in ("threads", "async_aware", "clock", "timeline", "memory", "rss", "types",
                 "types_builtins", "types_only", "types_gc", "types_json", "calls"):
        if getattr(options, name) != defaults[name]:
            flag = "no-calls" if name == "calls" else name.replace("_aware", "")
            parser.error("--%s traces; it does not go with --sample" % flag.replace("_", "-"))
    if not options.rate > 0:
        parser.error("--rate must be a number of samples a second > 0, not %g" % options.rate)
    if options.rate > MAX_SAMPLING_RATE:
        parser.error("--rate must be at most %g samples a second (a read takes tens of "
                     "microseconds), not %g" % (MAX_SAMPLING_RATE, options.rate))
    if options.duration is not None and not options.duration > 0:
        parser.error("--duration must be a number of seconds > 0, not %g" % options.duration)
    if options.limit <= 0:
        parser.error("--limit must be > 0")
    if options.record_last is not None:
        if not options.record_last > 0:
            parser.error("--record-last must be a number of seconds > 0, not %g"
                         % options.record_last)
    if options.stall is not None and not options.stall > 0:
        parser.error("--stall must be a number of milliseconds > 0, not %g" % options.stall)
    if options.stall is not None and options.subprocesses:
        parser.error("--stall reads one process in time order: it does not go with "
                     "--subprocesses (rprofile top --subprocesses --stall shows them live)")
    for name in SAMPLED_OUTPUTS:
        if getattr(options, name) is not None:
            setattr(options, name, os.path.abspath(getattr(options, name)))
            _check_writable(parser, getattr(options, name))
    if options.subprocesses and options.outfile is not None:
        _processes_folder(parser, options)
    try:
        if options.pid is not None:
            if args:
                parser.error("--pid samples a running process: no program to start (%s)"
                             % args[0])
            _sampled_run.check_pid(parser, options.pid)
            status = _sampled_run.attach(options.pid, options)
        else:
            if not args:
                parser.error("no module name given" if options.module else "no script given")
            if options.module:
                _module_target(parser, args[0])
            elif not os.path.isfile(args[0]):
                parser.error("can't open file %r: No such file or directory" % args[0])
            status = _sampled_run.run_program(
                _sampled_run.program_command(options.module, args), options)
    except BrokenPipeError as exc:
        sys.stdout = None
        sys.exit(exc.errno)
    except (ValueError, OSError) as exc:
        _cannot_sample(_sampled_run.explain(exc, options.pid))
    sys.exit(status)


def _report_title(module, args):
    """What the HTML report is titled: the program as it was run."""
    if not args:
        return "profile"
    return " ".join((["-m", args[0]] if module else [os.path.basename(args[0])]) + args[1:])


def _module_not_found(exc):
    """Whether runpy raised `exc` because the -m target (a submodule, or a package without
    __main__) does not exist, as opposed to an ImportError from the program's own code."""
    import runpy

    lookup = getattr(runpy, "_get_module_details", None)
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return lookup is not None and tb is not None and tb.tb_frame.f_code is lookup.__code__


if __name__ == "__main__":
    # The program sees this module as sys.modules["__main__"]; under cProfile that is a
    # top-level module, whose empty __package__ tools such as click read to name the program.
    __package__ = ""
    main()
