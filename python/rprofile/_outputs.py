"""What a profiled run writes beside its stats table, for the command line (``python -m
rprofile``) and the IPython magics (``%rprofile``) alike: output paths checked before the
program runs, the timeline's files, the per-thread summary and the memory table."""

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


def asked_sort(options):
    """The -s key given on the command line, for the HTML report's table; None when -s was
    not given (its default is an int, -1 or 2, and a key given is a str)."""
    sort = getattr(options, "sort", None)
    return sort if isinstance(sort, str) else None


def write_timeline(prof, options):
    """Writes the timeline's files that `options` name (``timeline``: Chrome trace,
    ``speedscope``), and says on stderr what a full buffer dropped."""
    timeline = prof.timeline
    if timeline is None:
        return
    if options.timeline is not None:
        timeline.to_chrome_trace(options.timeline)
    if options.speedscope is not None:
        timeline.to_speedscope(options.speedscope)
    kept, dropped, rss_kept, rss_dropped = timeline._counts()
    if dropped:
        print("rprofile: the timeline kept the last %d events; %d earlier ones were dropped "
              "(--buffer-size)" % (kept, dropped), file=sys.stderr)
    if rss_dropped:
        print("rprofile: the timeline kept the last %d RSS samples; %d earlier ones were "
              "dropped (--buffer-size)" % (rss_kept, rss_dropped), file=sys.stderr)


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
