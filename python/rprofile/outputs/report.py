"""HTML reports of profiles (the writing is native: ``src/report/``).

- ``write_profile(prof, path)``: a ``Profile``'s report, with its timeline's call paths, its
  threads and its memory when it recorded them (``Profile.to_html``, ``python -m rprofile
  --html``); ``profile_parts(prof)`` what goes into it (the notebook's inline report narrows
  it);
- ``stats_main(argv)``: ``python -m rprofile.stats --html report.html a.prof [b.prof ...]``
  (and/or ``--pprof out.pb.gz``: the files added up as a pprof profile) and ``--compare
  before.prof after.prof`` (with ``--html``, the comparison report; without, the largest
  changes as a table).

``Stats.to_html`` and ``Sampler.to_html`` call the native writer themselves.
"""

import os
import sys

from rprofile._rprofile import _compare_table, _write_report


def _title(argv):
    return " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv)) or "profile"


def write_profile(prof, path, title=None, sort="tottime"):
    """Writes the report of `prof` (an ``rprofile.Profile``, disabled first as
    ``create_stats`` does) at `path`, its table sorted at first by the column `sort`."""
    stats, extras = profile_parts(prof)
    _write_report(path, stats, title or _title(sys.argv), [], sort=sort, **extras)


def thread_cores(prof):
    """``{name: StatsCore}`` of each thread of `prof` (``threads=True``; disabled and its
    stats created), by ``threading``'s names; the threads that shared a name added up."""
    import threading

    threads = {}
    for ident, name, snapshot in prof._thread_snapshots():
        if name is None:
            # A program that never imported threading still has its main thread.
            main = ident == threading.main_thread().ident
            name = "MainThread" if main else "Thread-%d" % ident
        core = snapshot.stats_core()
        if name in threads:
            threads[name].add(core)  # a finished thread's name reused: added up
        else:
            threads[name] = core
    return threads


def profile_parts(prof, thread=None):
    """`(stats, extras)` of a report of `prof` (disabled first): its ``StatsCore``, and the
    keyword arguments of ``_write_report`` for its timeline's call paths (and the events its
    full buffer dropped), its threads (when
    more than one), its memory rows, largest net first, and its types. `thread`: one thread's
    snapshot (of a ``threads=True`` profile), whose calls alone are shown, with the memory rows
    of the functions it called."""
    prof.create_stats()
    info = prof._timeline_info()
    paths = prof._timeline_paths() if info is not None else None
    # (kept, capacity, dropped, when_full, rss kept, rss dropped): RSS samples are no calls.
    dropped = (info[0] - info[4], info[2] - info[5], info[3]) if info is not None else None
    threads = {}
    if thread is None:
        stats, merged = prof._result()
        if merged:
            # With subprocesses, this process and its children added up: their call paths
            # are estimated (only this process's timeline was recorded).
            paths = None
        threads = thread_cores(prof)
    else:
        stats = thread.stats_core()
    memory = []
    rows = prof.memory_stats() or {}
    if rows and thread is not None:
        called = thread.to_dict()
        rows = {func: m for func, m in rows.items() if func in called}
    for (file, line, name), m in sorted(rows.items(), key=lambda kv: -kv[1].net):
        memory.append((file, line, name, m.allocations, m.allocated, m.freed, m.net, m.peak))
    return stats, {"paths": paths, "dropped": dropped if paths is not None else None,
                   "threads": list(threads.items()) if len(threads) > 1 else [],
                   "memory": memory, "types": type_rows(prof)}


def type_rows(prof):
    """The rows of the report's Types tab (``types=True``), from ``prof.types_stats()``: every
    type, each with the functions that made its objects and the stacks that made its
    survivors (also in a thread's report: the objects are the process's)."""
    return [(name, t.created, t.destroyed, t.peak, t.peak_time, t.older_destroyed,
             [(file, line, func, created, alive)
              for (file, line, func), (created, alive) in t.functions.items()],
             [(alive, list(stack)) for stack, alive in t.stacks.items()])
            for name, t in (prof.types_stats() or {}).items()]


# -- python -m rprofile.stats --html / --pprof / --compare ------------------------------------

USAGE = ("usage: python -m rprofile.stats [FILE ...]\n"
         "       python -m rprofile.stats [--html REPORT.html] [--pprof OUT.pb.gz] FILE ...\n"
         "       python -m rprofile.stats [--html REPORT.html] --compare BEFORE AFTER")


def _error(message):
    print(USAGE, file=sys.stderr)
    print("rprofile.stats: error: %s" % message, file=sys.stderr)
    sys.exit(2)


def _parse(argv):
    """`(html, pprof, compare, files)` of the options, or None when there are none (the
    browser)."""
    if not any(a in ("--html", "--pprof", "--compare", "-h", "--help")
               or a.startswith(("--html=", "--pprof=")) for a in argv):
        return None
    outputs = {"--html": None, "--pprof": None}
    compare, files = False, []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(USAGE)
            print("\nWithout options: the interactive statistics browser of python -m pstats."
                  "\n--html writes one self-contained HTML report of the files (added "
                  "together);\n--pprof writes them (added together) as a gzipped pprof profile;"
                  "\n--compare compares AFTER with BEFORE, function by function.")
            sys.exit(0)
        option = a.split("=", 1)[0]
        if option in outputs:
            if "=" in a:
                outputs[option] = a.split("=", 1)[1]
            elif args:
                outputs[option] = args.pop(0)
            else:
                _error("%s needs a file name" % option)
        elif a == "--compare":
            compare = True
        elif a == "--":
            files.extend(args)
            break
        elif a.startswith("-") and a != "-":
            _error("unknown option %s" % a)
        else:
            files.append(a)
    return outputs["--html"], outputs["--pprof"], compare, files


def _check_output(path):
    parent = os.path.dirname(path) or "."
    if os.path.isdir(path):
        _error("cannot write %s: is a directory" % path)
    if not os.path.isdir(parent):
        _error("cannot write %s: no such directory: %s" % (path, parent))


def _load(Stats, name):
    if not os.path.exists(name):
        _error("cannot read %s: no such file" % name)
    if os.path.isdir(name):
        _error("cannot read %s: is a directory" % name)
    try:
        return Stats(name)
    except Exception as exc:  # one line, as for a bad path: the file is not a profile
        _error("cannot read %s: %s" % (name, exc))


def stats_main(argv, stats_class):
    """Runs the `--html` / `--pprof` / `--compare` command line over `stats_class`
    (``rprofile.Stats``) and returns True; False when `argv` has none (the browser runs
    then)."""
    parsed = _parse(argv)
    if parsed is None:
        return False
    html, pprof, compare, files = parsed
    if compare:
        if pprof is not None:
            _error("--pprof writes one profile; it does not go with --compare")
        if len(files) != 2:
            _error("--compare needs two files, BEFORE and AFTER (got %d)" % len(files))
    elif not files:
        _error("%s needs at least one stats file" % ("--html" if html is not None else "--pprof"))
    for path in (html, pprof):
        if path is not None:
            _check_output(path)
    loaded = [_load(stats_class, f) for f in files]
    if compare:
        before, after = loaded
        if html is None:
            import shutil

            width = shutil.get_terminal_size((120, 24)).columns
            print("Changes from %s to %s, largest change of tottime first:"
                  % (files[0], files[1]))
            print(_compare_table(before._html_core(), after._html_core(), 30, width))
            return True
        stats, before_stats = after, before
    else:
        stats, before_stats = loaded[0], None
        stats.add(*loaded[1:])
    for path, write in ((html, lambda p: stats.to_html(p, compare=before_stats)),
                        (pprof, stats.dump_pprof)):
        if path is None:
            continue
        try:
            write(path)
        except OSError as exc:
            _error("cannot write %s: %s" % (path, exc.strerror or exc))
        print("rprofile.stats: wrote %s" % path, file=sys.stderr)
    return True
