"""Profiling overhead on threads: rprofile(threads=True) against threads=False, cProfile and
yappi, run by hand, never a pass/fail test.

    python bench/threads_bench.py [--rounds 13] [--threads 4] [--modes none,cProfile,...] [--raw FILE]

The workload: N threads (default 4), each running the same call-heavy pure-Python task
(recursive fib and small-object method calls), created and started after profiling is enabled
and joined before it is disabled, timed (perf_counter) around the whole of it in a fresh
process. The `single` variant runs the same N tasks one after the other on the main thread.

Modes: `none`, `cProfile`, `rprofile` (threads=False), `rprofile-threads` (threads=True) and
`yappi` (wall clock, all threads; installed from PyPI into bench/.build/py3.X/site, and left
out where that fails), and `floor-threads`: overhead.py's do-nothing hook with the clock reads
(`floor+clock`) on every thread, what any profiler fed these events costs at least (per event
it is counted with rprofile-threads' calls); yappi's added time over it is the most that any
profiler could be ahead of yappi here. `rprofile-threads-alt` is rprofile-threads from another build, unpacked into the folder
RPROFILE_BENCH_ALT names (overhead.py's `rprofile-alt`), for A/B runs. Modes are interleaved round by round (the order rotates) so that drift
of a noisy machine hits all of them alike.

cProfile and rprofile with threads=False see only the enabling thread on 3.10/3.11, and one
stack fed by all threads on 3.12+, so their added time on the threaded workload is not the
same work as rprofile-threads' there. The threads-against-single comparison is therefore made
per event: rprofile-threads' added time on the threaded workload over the calls its profile
counted (pstats' total_calls), against rprofile's (threads=False) added time on the single
workload over its total_calls (the same tasks, so the same calls but for the few the threading
module makes).

This machine has spells (seconds long) in which everything runs up to ~1.8x slower; each child
times a fixed bit of plain Python before and after its run (the `speed probe`, printed as a
spread), and the ratios are given both from the medians and from each cell's fastest run.

Each rprofile-threads child checks its profile: the call counts of the task, fib and the Vec
methods must be exactly what the N tasks make (the child fails otherwise).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchsite  # noqa: E402

# ---------------------------------------------------------------- the workload (~0.3-0.4 s bare)

FIB_N = 27
OO_ITERS = 140_000


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Vec:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def add(self, other):
        return Vec(self.x + other.x, self.y + other.y)

    def norm2(self):
        return self.x * self.x + self.y * self.y


def task():
    fib(FIB_N)
    acc = Vec(0, 0)
    for i in range(OO_ITERS):
        acc = acc.add(Vec(i, -i))
        acc.norm2()


def fib_calls(n):
    a, b = 1, 1  # calls of fib(0), fib(1)
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return b if n >= 1 else a


def expected_calls(n_tasks):
    """Calls of the workload's own functions made by n_tasks tasks, keyed by function name."""
    return {
        "task": n_tasks,
        "fib": n_tasks * fib_calls(FIB_N),
        "__init__": n_tasks * (2 * OO_ITERS + 1),
        "add": n_tasks * OO_ITERS,
        "norm2": n_tasks * OO_ITERS,
    }


# Called first in each worker thread, if set (`floor-threads` on 3.10/3.11: a C profile hook is
# per thread).
THREAD_START = None


def worker():
    if THREAD_START is not None:
        THREAD_START()
    task()


def run_threaded(n):
    threads = [threading.Thread(target=worker, name="worker-%d" % i) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_single(n):
    for _ in range(n):
        task()


WORKLOADS = {"threaded": run_threaded, "single": run_single}

# ---------------------------------------------------------------- modes

MODES = ["none", "cProfile", "rprofile", "rprofile-threads", "yappi", "floor-threads"]
# Modes run on the single-thread variant: enough for the per-event comparison.
SINGLE_MODES = ["none", "rprofile", "rprofile-threads"]


def ensure_yappi():
    return benchsite.ensure("yappi")


class Yappi:
    def __init__(self):
        sys.path.insert(0, os.environ["RPROFILE_BENCH_SITE"])
        import yappi

        self.yappi = yappi
        yappi.set_clock_type("wall")

    def enable(self):
        self.yappi.start()

    def disable(self):
        self.yappi.stop()

    def total_calls(self):
        return sum(s.ncall for s in self.yappi.get_func_stats())


class FloorThreads:
    """overhead.py's `floor+clock` (a do-nothing hook for cProfile's events, reading the clock
    where a profiler must) on every thread: what any profiler fed these events costs at least,
    with no bookkeeping at all. sys.monitoring (3.12+) covers all threads at once; before, each
    worker installs the C hook as it starts."""

    def __init__(self):
        import overhead

        self.floor = overhead.Floor(os.environ["RPROFILE_BENCH_FLOOR"], clock=True)

    def enable(self):
        global THREAD_START
        self.floor.enable()
        if sys.version_info < (3, 12):
            THREAD_START = self.floor.enable

    def disable(self):
        global THREAD_START
        THREAD_START = None
        self.floor.disable()


def make_profiler(mode):
    if mode == "floor-threads":
        return FloorThreads()
    if mode in ("none", "cProfile", "rprofile"):
        import overhead  # the single-thread modes are overhead.py's

        return overhead.make_profiler(mode)
    if mode in ("rprofile-threads", "rprofile-threads-alt"):
        if mode.endswith("-alt"):
            # Another build, unpacked into RPROFILE_BENCH_ALT (overhead.py's rprofile-alt).
            sys.path.insert(0, os.environ["RPROFILE_BENCH_ALT"])
        import rprofile

        if mode.endswith("-alt"):
            assert os.path.dirname(rprofile.__file__).startswith(os.environ["RPROFILE_BENCH_ALT"])
        return rprofile.Profile(threads=True)
    if mode == "yappi":
        return Yappi()
    raise SystemExit("unknown mode %r" % mode)


def stats_calls(prof):
    """total_calls as pstats counts it (the sum of each row's number of calls), and the calls of
    the workload's own functions."""
    prof.create_stats()
    stats = prof.stats
    own = {}
    for (filename, _, name), row in stats.items():
        if filename == __file__ or os.path.abspath(filename) == os.path.abspath(__file__):
            own[name] = own.get(name, 0) + row[1]
    return sum(row[1] for row in stats.values()), own


def speed_probe():
    """Seconds a fixed bit of plain Python takes (best of 3): how fast the machine runs this
    process right now."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fib(18)
        best = min(best, time.perf_counter() - t0)
    return best


def child(mode, workload, n):
    func = WORKLOADS[workload]
    prof = make_profiler(mode)
    probe = speed_probe()
    if prof is None:
        t0 = time.perf_counter()
        func(n)
        elapsed = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        prof.enable()
        func(n)
        prof.disable()
        elapsed = time.perf_counter() - t0
    out = {"elapsed": elapsed, "probe": (probe + speed_probe()) / 2}
    if isinstance(prof, Yappi):
        out["calls"] = prof.total_calls()
    elif isinstance(prof, FloorThreads):
        pass  # no stats: per event it is measured with rprofile-threads' calls
    elif prof is not None:
        out["calls"], own = stats_calls(prof)
        want = expected_calls(n)
        own = {k: own.get(k, 0) for k in want}
        if mode.startswith("rprofile-threads") and own != want:
            raise SystemExit("rprofile-threads counted %r, expected %r" % (own, want))
        out["exact"] = own == want
    print(json.dumps(out))


def measure(mode, workload, n):
    res = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mode, workload, str(n)],
        capture_output=True, text=True,
    )
    if res.returncode != 0:
        raise SystemExit("%s on the %s workload failed (exit status %d):\n%s%s" % (
            mode, workload, res.returncode, res.stdout, res.stderr))
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=13)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--raw", help="also write every run's figures to this JSON file")
    ap.add_argument("--child", nargs=3, metavar=("MODE", "WORKLOAD", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], int(args.child[2]))

    modes = args.modes.split(",")
    if "floor-threads" in modes:
        import overhead

        os.environ["RPROFILE_BENCH_FLOOR"] = overhead.build_floor()
    if "yappi" in modes:
        folder = ensure_yappi()
        if folder is None:
            modes.remove("yappi")
        else:
            os.environ["RPROFILE_BENCH_SITE"] = folder
    cells = [("threaded", m) for m in modes] + [("single", m) for m in SINGLE_MODES if m in modes]
    res = {c: [] for c in cells}
    load0 = os.getloadavg()
    start = time.perf_counter()
    for r in range(args.rounds):
        order = cells[r % len(cells):] + cells[: r % len(cells)]
        for w, m in order:
            res[w, m].append(measure(m, w, args.threads))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)
    took = time.perf_counter() - start
    load1 = os.getloadavg()
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump({"%s/%s" % c: v for c, v in res.items()}, f)

    def med(c, key="elapsed"):
        return statistics.median(x[key] for x in res[c])

    print("Python %s, %d threads x (fib(%d) + %d Vec iterations), %d rounds in %.0f s, "
          "load average %.2f before, %.2f after (%d CPUs)" % (
              sys.version.split()[0], args.threads, FIB_N, OO_ITERS, args.rounds, took,
              load0[0], load1[0], os.cpu_count()))
    probes = [x["probe"] for v in res.values() for x in v]
    print("speed probe (fib(18), ms; the machine's speed from run to run): median %.3f, "
          "min %.3f, max %.3f" % tuple(1e3 * p for p in (
              statistics.median(probes), min(probes), max(probes))))
    print("medians (min-max) in seconds, slowdown over `none`; calls: the profile's total_calls")
    print("%-9s" % "workload" + "".join("%-30s" % m for m in modes))
    for w in ("threaded", "single"):
        row = "%-9s" % w
        for m in modes:
            if (w, m) not in res:
                row += "%-30s" % "-"
                continue
            xs = [x["elapsed"] for x in res[w, m]]
            cell = "%.3f (%.3f-%.3f)" % (med((w, m)), min(xs), max(xs))
            if m != "none" and (w, "none") in res:
                cell += " %.2fx" % (med((w, m)) / med((w, "none")))
            row += "%-30s" % cell
        print(row)
        row = "%-9s" % "  calls"
        for m in modes:
            calls = [x["calls"] for x in res.get((w, m), []) if "calls" in x]
            text = "-" if not calls else "{:,}".format(min(calls)) if min(calls) == max(calls) \
                else "{:,}-{:,}".format(min(calls), max(calls))
            row += "%-30s" % text
        print(row)
    exact = {c: all(x.get("exact") for x in v) for c, v in res.items()
             if c[1] not in ("none", "yappi", "floor-threads")}
    print("call counts of the workload's functions exact in every run%s: " % (
        "" if sys.version_info >= (3, 12) else " (threads=False: main thread only here)") + ", ".join(
        "%s/%s %s" % (w, m, "yes" if ok else "no") for (w, m), ok in exact.items()))
    if ("threaded", "none") not in res or ("single", "none") not in res:
        return

    # The comparisons, as ratios of added times: from the medians (in brackets the middle half,
    # quartiles, of the same ratio computed round by round; one bad round makes a min-max
    # meaningless, as a `none` run slowed by a neighbour leaves a round almost no added time),
    # and from each cell's fastest run: this machine has slow spells (the speed probe) that
    # slow everything by up to ~1.8x for seconds at a time, and the fastest of 13 runs is
    # nearly always outside them.
    def pick(c, how, rnd):
        xs = [x["elapsed"] for x in res[c]]
        return xs[rnd] if rnd is not None else statistics.median(xs) if how == "median" \
            else min(xs)

    def added(c, how="median", rnd=None):
        return pick(c, how, rnd) - pick((c[0], "none"), how, rnd)

    def per_event(c, how="median", rnd=None):
        counted = c if c[1] != "floor-threads" else (c[0], "rprofile-threads")
        return added(c, how, rnd) / statistics.median(x["calls"] for x in res[counted])

    rt, rs, rtt = ("threaded", "rprofile-threads"), ("single", "rprofile"), \
        ("threaded", "rprofile")
    rts, yt, ft = ("single", "rprofile-threads"), ("threaded", "yappi"), \
        ("threaded", "floor-threads")
    new_interp = sys.version_info >= (3, 12)
    # (label, target, measure, numerator cell, denominator cell, shown where possible)
    table = [
        ("rprofile-threads per event (threaded) / rprofile per event (single)", "<= 1.10",
         per_event, rt, rs, True),
        ("rprofile-threads / rprofile per event, both single", "", per_event, rts, rs, True),
        ("rprofile-threads / rprofile added, threaded", "<= 1.10", added, rt, rtt, new_interp),
        ("yappi / rprofile-threads added, threaded", ">= 3", added, yt, rt, True),
        ("yappi / floor-threads added, threaded (the most any profiler gets)", "", added, yt, ft,
         True),
        ("rprofile-threads / floor-threads added, threaded", "", added, rt, ft, True),
        ("yappi / rprofile-threads-alt added, threaded", ">= 3", added, yt,
         ("threaded", "rprofile-threads-alt"), True),
        ("rprofile-threads / rprofile-threads-alt added, threaded", "", added, rt,
         ("threaded", "rprofile-threads-alt"), True),
    ]
    comparisons = [
        (name, target,
         lambda h, r=None, f=f, a=a, b=b: f(a, h, r) / f(b, h, r))
        for name, target, f, a, b, shown in table if shown and a in res and b in res
    ]
    for how in ("median", "min"):
        line = "added ns per event (%s): " % ("medians" if how == "median" else "fastest runs")
        cells = [rt, rts, rs, ("threaded", "cProfile"), yt, ft,
                 ("threaded", "rprofile-threads-alt")]
        line += ", ".join("%s %s %.1f" % (c[1], c[0], 1e9 * per_event(c, how)) for c in cells
                          # threads=False sees only the main thread's calls on 3.10/3.11.
                          if c in res and (c != ("threaded", "cProfile")
                                           or sys.version_info >= (3, 12)))
        print(line)
    if comparisons:
        print("%-70s %-8s %-24s %s" % ("ratio", "target", "medians (round quartiles)",
                                        "fastest runs"))
        for name, target, f in comparisons:
            rounds = [f(None, r) for r in range(args.rounds)]
            q1, _, q3 = statistics.quantiles(rounds, n=4, method="inclusive") \
                if len(rounds) > 1 else rounds * 3
            print("%-70s %-8s %-24s %.2f" % (name, target, "%.2f (%.2f-%.2f)" % (
                f("median"), q1, q3), f("min")))


if __name__ == "__main__":
    main()
