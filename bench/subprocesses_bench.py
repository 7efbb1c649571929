"""Profiling a multiprocessing pool: `python -m rprofile --subprocesses` against cProfile set
up by hand in each worker, run by hand, never a pass/fail test.

    python bench/subprocesses_bench.py [--rounds 9] [--workers 4] [--tasks 32] [--raw FILE]

The workload: a Pool of N workers (default 4; `fork` and `spawn`) mapping a call-heavy task
(recursive fib and small-object method calls) over 32 items; `single` runs the same 32 tasks
in one process, one after the other. Every run is a fresh process, timed from outside (`run`:
interpreter start to exit, with the pool's start, the profiles' saving and merging; `cpu`: the
CPU time, user and system, of the process and the workers it waited for) and inside (`map`:
the parent's wall time around creating the pool, `pool.map` and joining the workers, where
the workers' profiling overhead shows). On a busy machine `cpu` is the steadier figure: it
does not count time spent waiting for a CPU.

Modes:
- `none`: no profiler;
- `cProfile`: by hand, as one does without rprofile: a cProfile.Profile enabled in each worker
  by the Pool's initializer and dumped by a multiprocessing finalizer (the pool is closed and
  joined, so that the workers run their finalizers), one in the parent too; at the end the
  parent adds the workers' files to its own with pstats and writes the merge;
- `rprofile-by-hand`: the same recipe with rprofile.Profile in place of cProfile.Profile: the
  profiler's cost per event in each worker, with none of --subprocesses' own;
- `rprofile`: `python -m rprofile --subprocesses -o FILE` (every process profiled from its
  interpreter's start, saving its file; the parent merges them into FILE and prints the
  per-process lines).

Modes are interleaved round by round (the order rotates). Ratios are of added times (mode minus
`none`, medians), to cProfile's, per start method; `single` gives them in one process, which
`rprofile-by-hand`'s in a pool should match (the overhead in each child is the overhead of one
process); `rprofile` adds what following children costs (each child's start, its profiling from
interpreter start, its file, the merge). Each profiled run checks its merged file: the task is
called exactly `--tasks` times, fib exactly as many times as the tasks make.
"""

import argparse
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from threads_bench import Vec, fib, fib_calls  # noqa: E402  (the threads benchmark's workload)

FIB_N = 20
OO_ITERS = 20_000
MODES = ("none", "cProfile", "rprofile-by-hand", "rprofile")
KINDS = ("fork", "spawn", "single")


def task(i):
    fib(FIB_N)
    acc = Vec(0, 0)
    for j in range(OO_ITERS):
        acc = acc.add(Vec(i, j))
    return acc.x


# ---------------------------------------------------------------- by hand, in a worker

_worker_profile = None
_parent_profile = None


def _start_by_hand(folder, tool):
    from multiprocessing import util

    global _worker_profile
    if _parent_profile is not None:
        # A fork child inherits the parent's profiler, enabled: one profiler at a time.
        _parent_profile.disable()
    _worker_profile = _profiler_class(tool)()
    path = os.path.join(folder, "worker-%d.prof" % os.getpid())
    util.Finalize(None, _dump_by_hand, args=(path,), exitpriority=-100)
    _worker_profile.enable()


def _profiler_class(tool):
    if tool == "cProfile":
        import cProfile

        return cProfile.Profile
    import rprofile

    return rprofile.Profile


def _dump_by_hand(path):
    _worker_profile.disable()
    _worker_profile.dump_stats(path)


# ---------------------------------------------------------------- one run (a child process)

def child(kind, mode, tasks, workers, out, timing):
    """The program: the map (or the tasks in turn), timed; by hand, the profiling and the
    merge."""
    import multiprocessing
    import shutil

    global _parent_profile
    tool = mode.replace("-by-hand", "")
    folder = out + ".workers" if mode in ("cProfile", "rprofile-by-hand") else None
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)  # an earlier round's
        os.makedirs(folder)
        parent = _parent_profile = _profiler_class(tool)()
        parent.enable()
    start = time.perf_counter()
    if kind == "single":
        results = [task(i) for i in range(tasks)]
    else:
        ctx = multiprocessing.get_context(kind)
        init = (_start_by_hand, (folder, tool)) if folder is not None else (None, ())
        pool = ctx.Pool(workers, initializer=init[0], initargs=init[1])
        results = pool.map(task, range(tasks), chunksize=1)
        pool.close()
        pool.join()
    elapsed = time.perf_counter() - start
    assert len(results) == tasks
    if folder is not None:
        import pstats

        parent.disable()
        merged = pstats.Stats(parent)
        for path in glob.glob(os.path.join(folder, "*.prof")):
            merged.add(path)
        merged.dump_stats(out)
    with open(timing, "w") as f:
        json.dump({"map": elapsed}, f)


def run_once(kind, mode, args, scratch):
    out = os.path.join(scratch, "%s-%s.prof" % (kind, mode))
    timing = os.path.join(scratch, "timing.json")
    prog = [os.path.abspath(__file__), "--child", kind, mode, str(args.tasks),
            str(args.workers), out, timing]
    cmd = [sys.executable]
    if mode == "rprofile":
        cmd += ["-m", "rprofile", "--subprocesses", "-o", out]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd + prog, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.exit("%s %s failed:\n%s" % (kind, mode, done.stderr))
    with open(timing) as f:
        measured = json.load(f)
    if mode != "none":
        check(out, args.tasks)
    return {"run": wall, "cpu": cpu, "map": measured["map"]}


def check(path, tasks):
    import pstats

    stats = pstats.Stats(path).stats
    counts = {}
    for (_, _, name), row in stats.items():
        if name in ("task", "fib"):
            counts[name] = counts.get(name, 0) + row[1]
    expected = {"task": tasks, "fib": tasks * fib_calls(FIB_N)}
    if counts != expected:
        sys.exit("%s holds %r, not %r" % (path, counts, expected))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--raw", default=None, help="write every run's figures here (JSON)")
    args = parser.parse_args()
    cells = [(k, m) for k in KINDS for m in MODES]
    runs = {cell: [] for cell in cells}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            order = cells[r % len(cells):] + cells[:r % len(cells)]
            for kind, mode in order:
                runs[(kind, mode)].append(run_once(kind, mode, args, scratch))
            print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump({"%s %s" % cell: v for cell, v in runs.items()}, f)
    report(runs, args)


def report(runs, args):
    keys = ("map", "run", "cpu")
    med = {cell: {k: statistics.median(r[k] for r in v) for k in keys}
           for cell, v in runs.items()}
    print("Python %d.%d, %d rounds, %d workers, %d tasks (fib(%d) and %d method calls each)"
          % (sys.version_info[:2] + (args.rounds, args.workers, args.tasks, FIB_N, OO_ITERS)))
    print("%-8s %-18s %10s %10s %10s" % ("", "mode", "map s", "run s", "cpu s"))
    for kind in KINDS:
        for mode in MODES:
            m = med[(kind, mode)]
            print("%-8s %-18s %10.3f %10.3f %10.3f" % (kind, mode, m["map"], m["run"], m["cpu"]))
    print("\nadded time, to cProfile's (medians)")
    print("%-8s %-18s %10s %10s %10s" % ("", "mode", "map", "run", "cpu"))
    for kind in KINDS:
        for mode in MODES[2:]:
            ratios = []
            for k in keys:
                none = med[(kind, "none")][k]
                ratios.append((med[(kind, mode)][k] - none) / (med[(kind, "cProfile")][k] - none))
            print("%-8s %-18s %10.2f %10.2f %10.2f" % (kind, mode, *ratios))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, mode, tasks, workers, out, timing = sys.argv[2:8]
        child(kind, mode, int(tasks), int(workers), out, timing)
    else:
        main()
