"""What a profiled run writes beside its stats table, for the command line (``python -m
rprofile``) and the IPython magics (``%rprofile``) alike: output paths checked before the
program runs, the files written after it (said on stderr; one that cannot be written is saved in
the temporary directory instead), the timeline's files, the per-thread summary, the memory
table and the table of a sampled profile."""

import os
import sys


def check_writable(parser, path):
    """Refuses, before the program runs, an output path that could not be written at its end."""
    if path is None:
        return
    parent = os.path.dirname(path) or "."
    if os.path.isdir(path):
        problem = "is a directory"
    elif not os.path.isdir(parent):
        problem = "no such directory: %s" % parent
    elif not os.access(path if os.path.exists(path) else parent, os.W_OK):
        problem = "permission denied"
    else:
        return
    parser.error("cannot write %s: %s" % (path, problem))


# What an output is saved as in the temporary directory when its path has no extension.
SUFFIXES = {"outfile": ".prof", "timeline": ".json", "speedscope": ".json", "html": ".html",
            "pprof": ".pb.gz", "collapsed": ".txt", "flamegraph": ".svg", "types_json": ".json"}


def write_outputs(outputs):
    """Writes, after the run, each output of `outputs`: ``(name, path, write)`` with `name` a
    key of SUFFIXES, `path` None when not asked for, ``write(path)`` writing it. Each file
    written is said on stderr (``rprofile: wrote PATH``) but -o's, which cProfile writes
    silently. A write that fails (a full disk, a device that refuses) is one line naming the
    error and the file in the temporary directory the output was written to instead, so the
    run is not lost. Returns False when one failed (the command line then exits with status
    1)."""
    written = True
    for name, path, write in outputs:
        if path is None:
            continue
        try:
            write(path)
        except OSError as exc:
            written = False
            print("rprofile: cannot write %s: %s; %s"
                  % (path, exc.strerror or exc, _save_elsewhere(name, path, write)),
                  file=sys.stderr, flush=True)
            continue
        if name != "outfile":
            print("rprofile: wrote %s" % path, file=sys.stderr, flush=True)
    return written


def _save_elsewhere(name, path, write):
    """Writes the output that could not go to `path` to a new file in the temporary
    directory, and says where (or why it could not be written there either)."""
    import tempfile

    stem, ext = os.path.splitext(os.path.basename(path))
    if path.endswith(".pb.gz"):
        stem, ext = stem[:-3], ".pb.gz"
    try:
        fd, saved = tempfile.mkstemp(prefix="rprofile-%s-" % (stem or name),
                                     suffix=ext or SUFFIXES[name])
        os.close(fd)
        write(saved)
    except OSError as exc:
        return "it could not be saved in %s either: %s" % (tempfile.gettempdir(),
                                                          exc.strerror or exc)
    return "saved in %s instead" % saved


def print_samples(stats, *amount):
    """Prints a sampled profile's table (`stats`: an rprofile ``SampledStats``, sorted) with
    its figures worded as samples, as Python 3.15's ``profiling.sampling`` prints its own: the
    samples taken and the seconds they stand for, then per function its samples on the stack /
    running and their shares of all samples. (``SampledStats.print_stats`` prints what 3.15's
    pstats prints, "function calls" and per-call columns included: pstats' report with
    sampled column titles.) `amount`: print_stats' restrictions."""
    if stats._engine() is None:
        return stats.print_stats(*amount)
    out = stats._out()
    samples = stats.prim_calls
    out.write("%s %d sample%s in %.3f seconds\n\n"
              % (" " * 8, samples, "" if samples == 1 else "s", stats.total_tt))
    _, listing = stats.get_print_list(amount)
    if listing:
        out.write(stats._core.sample_title())
        stats._check(stats._core.write_sample_lines(out, listing, samples))
        out.write("\n\n")
    return stats


def asked_sort(options):
    """The -s key given on the command line, for the HTML report's table; None when -s was
    not given (its default is an int, -1 or 2, and a key given is a str)."""
    sort = getattr(options, "sort", None)
    return sort if isinstance(sort, str) else None


def write_timeline(prof, options):
    """Writes the timeline's files that `options` name (``timeline``: Chrome trace,
    ``speedscope``) as `write_outputs` does, and says on stderr what a full buffer dropped.
    Returns False when one could not be written."""
    timeline = prof.timeline
    if timeline is None:
        return True
    written = write_outputs([("timeline", options.timeline, timeline.to_chrome_trace),
                             ("speedscope", options.speedscope, timeline.to_speedscope)])
    kept, dropped, rss_kept, rss_dropped = timeline._counts()
    if dropped:
        which = ("last", "earlier") if timeline.when_full == "keep_newest" else ("first", "later")
        print("rprofile: the timeline kept the %s %d events; %d %s ones were dropped "
              "(--buffer-size)" % (which[0], kept, dropped, which[1]), file=sys.stderr)
    if rss_dropped:
        print("rprofile: the timeline kept the last %d RSS samples; %d earlier ones were "
              "dropped (--buffer-size)" % (rss_kept, rss_dropped), file=sys.stderr)
    return written


def print_memory(memory, limit=30):
    """Under the table: the functions of `memory` (``Profile.memory_stats()``) by net bytes
    allocated (allocated and not freed while profiling), largest first."""
    from pstats import func_std_string

    rows = sorted(memory.items(), key=lambda kv: (-kv[1].net, -kv[1].allocated,
                                                 func_std_string(kv[0])))
    print("   Memory (bytes; net = allocated - freed while profiling, frees charged to the "
          "allocating function):")
    print("%14s %14s %14s %14s %12s  function" % ("net", "peak", "allocated", "freed",
                                                 "allocations"))
    for func, m in rows[:limit]:
        print("%14d %14d %14d %14d %12d  %s" % (m.net, m.peak, m.allocated, m.freed,
                                                m.allocations, func_std_string(func)))
    if len(rows) > limit:
        print("   ... %d more functions" % (len(rows) - limit))
    print()


def print_thread_summary(prof):
    """Under the table: each thread's calls and time, busiest first."""
    rows = []
    for (name, ident), stats in prof.thread_stats().items():
        calls = sum(v[1] for v in stats.values())
        primitive = sum(v[0] for v in stats.values())
        busy = sum(v[2] for v in stats.values())
        rows.append((busy, name, ident, calls, primitive))
    if not rows:
        return
    rows.sort(key=lambda r: (-r[0], r[1]))
    width = max(len(r[1]) for r in rows)
    print("   Threads (tottime summed over the thread's functions):")
    for busy, name, ident, calls, primitive in rows:
        print("   %s  ident %-16d %10d calls (%d primitive)  %.3f seconds"
              % (name.ljust(width), ident, calls, primitive, busy))
    print()
