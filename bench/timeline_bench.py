"""Timeline recording cost and export speed: rprofile's `Profile(timeline=True)` against
viztracer, run by hand, never a pass/fail test.

    python bench/timeline_bench.py [--rounds 7] [--workload mixed|fib|builtins]
    python bench/timeline_bench.py --instructions [--scale 4] [--workload ...]
    python bench/timeline_bench.py --modes viztracer,rprofile-timeline-alt   # an A/B run

Workload: recursion (fib) and/or a loop of builtin calls, 0.02 s bare, timed around the workload
in a fresh process per measurement, modes interleaved round by round:

- `none`, `cProfile`, `rprofile` (no timeline), `rprofile-timeline`, `rprofile-timeline-rss`
  (with `rss=True`: the RSS read by a background thread every 10 ms);
- `viztracer` (installed from PyPI into bench/.build/py3.X/site on first use; C calls logged,
  as rprofile logs them);
- `rprofile-alt`, `rprofile-timeline-alt`: the same from another build of rprofile, unpacked
  into the folder RPROFILE_BENCH_ALT names (overhead.py's `rprofile-alt`), for A/B runs;
- `floor`, `floor+clock`: overhead.py's do-nothing hooks for the events cProfile uses, without
  and with a clock read per timed event: what any profiler fed those events costs at least.

Both recorders get a buffer large enough for every event, touched before the measured run
(rprofile allocates and writes it when the profiler is made; viztracer's is warmed by one run of
the workload that is then cleared). Printed: added nanoseconds per call (calls = the profile's
total calls, builtins included), the timeline's own cost (rprofile-timeline over rprofile),
and the exports: seconds per million events for the Chrome trace, speedscope and DataFrame,
bytes per event of each file, and viztracer's save() of its own JSON.

With `--instructions`, each mode runs once under valgrind's callgrind instead (counting only the
measured span, as bench/instructions.py does): instructions added over `none`, and as a ratio of
viztracer's, repeatable where the wall time is not.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchsite  # noqa: E402

SCALE = int(os.environ.get("RPROFILE_BENCH_SCALE", "1"))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def builtin_loop(n):
    data = [1, 2, 3]
    total = 0
    for i in range(n):
        total += len(data) + abs(-i)
    return total


WORKLOAD = os.environ.get("RPROFILE_BENCH_WORKLOAD", "mixed")


def workload():
    if WORKLOAD in ("mixed", "fib"):
        fib(25 - (SCALE > 1) * 4)
    if WORKLOAD in ("mixed", "builtins"):
        builtin_loop(200_000 // SCALE)


MODES = ["none", "cProfile", "rprofile", "rprofile-timeline", "rprofile-timeline-rss",
         "viztracer", "floor", "floor+clock"]
BUFFER = 2_000_000


class Span:
    """Times the measured span; under valgrind (`--instructions`) also counts only it."""

    def __init__(self, out):
        self.out = out
        self.marks = None
        if "RPROFILE_BENCH_COUNT" in os.environ:
            import overhead

            self.marks = overhead.Floor(os.environ["RPROFILE_BENCH_FLOOR"]).mod

    def __enter__(self):
        if self.marks:
            self.marks.start_counting()
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        self.out["elapsed"] = time.perf_counter() - self.t0
        if self.marks:
            self.marks.stop_counting()


def child(mode):
    alt = mode.endswith("-alt")
    if alt:
        # An earlier build, unpacked into RPROFILE_BENCH_ALT (as overhead.py's rprofile-alt).
        sys.path.insert(0, os.environ["RPROFILE_BENCH_ALT"])
        mode = mode[:-len("-alt")]
    import rprofile

    if alt:
        assert os.path.dirname(rprofile.__file__).startswith(os.environ["RPROFILE_BENCH_ALT"])

    out = {}
    calls_prof = None
    if mode == "none":
        with Span(out):
            workload()
    elif mode == "viztracer":
        sys.path.insert(0, os.environ["RPROFILE_BENCH_SITE"])
        from viztracer import VizTracer

        tracer = VizTracer(tracer_entries=BUFFER, verbose=0)
        tracer.start()
        workload()
        tracer.stop()
        tracer.clear()
        with Span(out):
            tracer.start()
            workload()
            tracer.stop()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "v.json")
            t0 = time.perf_counter()
            tracer.save(path)
            out["save"] = time.perf_counter() - t0
            out["save_bytes"] = os.path.getsize(path)
            with open(path) as f:
                out["save_events"] = sum(1 for e in json.load(f)["traceEvents"] if e.get("ph") == "X")
    else:
        if mode == "cProfile":
            import cProfile

            prof = cProfile.Profile()
        elif mode.startswith("floor"):
            import overhead

            prof = overhead.Floor(os.environ["RPROFILE_BENCH_FLOOR"], clock=mode == "floor+clock")
        else:
            prof = rprofile.Profile(timeline=mode.startswith("rprofile-timeline"),
                                    buffer_size=BUFFER, rss=mode.endswith("-rss"))
        with Span(out):
            prof.enable()
            workload()
            prof.disable()
        calls_prof = prof
        if mode == "rprofile-timeline" and not alt and "RPROFILE_BENCH_COUNT" not in os.environ:
            tl = prof.timeline
            n = len(tl)
            out["events"] = n
            out["dropped"] = tl.dropped
            with tempfile.TemporaryDirectory() as d:
                for name, method in (("chrome", tl.to_chrome_trace),
                                     ("speedscope", tl.to_speedscope)):
                    path = os.path.join(d, name + ".json")
                    t0 = time.perf_counter()
                    method(path)
                    out[name] = time.perf_counter() - t0
                    out[name + "_bytes"] = os.path.getsize(path)
            try:
                import pandas  # noqa: F401  (imported before the clock starts)
            except ImportError:
                pass
            else:
                t0 = time.perf_counter()
                tl.to_dataframe()
                out["dataframe"] = time.perf_counter() - t0
    if calls_prof is not None and mode.startswith("rprofile"):
        calls_prof.create_stats()
        out["calls"] = sum(v[1] for v in calls_prof.stats.values())
    print(json.dumps(out))


def measure(mode):
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode],
                         check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workload", choices=["mixed", "fib", "builtins"], default="mixed")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under valgrind instead of timing (one run per mode)")
    ap.add_argument("--scale", type=int, default=1,
                    help="with --instructions: run the workload 1/scale as long")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="modes to run (none, rprofile and rprofile-timeline always run); "
                         "`rprofile-alt` and `rprofile-timeline-alt` are the build unpacked "
                         "into RPROFILE_BENCH_ALT")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    os.environ["RPROFILE_BENCH_WORKLOAD"] = args.workload
    modes = ["none", "rprofile", "rprofile-timeline"]
    modes += [m for m in args.modes.split(",") if m and m not in modes]
    import overhead

    os.environ["RPROFILE_BENCH_FLOOR"] = overhead.build_floor()
    site = benchsite.ensure("viztracer")
    if site is None and "viztracer" in modes:
        modes.remove("viztracer")
    else:
        os.environ["RPROFILE_BENCH_SITE"] = site
    if args.instructions:
        return count_instructions(modes, args)
    runs = {m: [] for m in modes}
    for r in range(args.rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for m in order:
            runs[m].append(measure(m))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)

    def med(m, key):
        return statistics.median(x[key] for x in runs[m] if key in x)

    calls = med("rprofile", "calls")
    none = med("none", "elapsed")
    print("Python %s, workload %s, %d rounds, %d calls per run (builtins included), medians" % (
        sys.version.split()[0], args.workload, args.rounds, calls))
    print("%-22s %9s %8s %14s" % ("mode", "seconds", "slowdown", "added ns/call"))
    for m in modes:
        e = med(m, "elapsed")
        print("%-22s %9.3f %7.2fx %14s" % (
            m, e, e / none, "" if m == "none" else "%.1f" % ((e - none) / calls * 1e9)))
    rp, tl = med("rprofile", "elapsed"), med("rprofile-timeline", "elapsed")
    print("timeline recording alone (rprofile-timeline - rprofile): %.1f ns per call" % (
        (tl - rp) / calls * 1e9))
    if "rprofile-timeline-rss" in modes:
        print("RSS sampling (rprofile-timeline-rss - rprofile-timeline): %.1f ns per call" % (
            (med("rprofile-timeline-rss", "elapsed") - tl) / calls * 1e9))
    if "viztracer" in modes:
        vz = med("viztracer", "elapsed")
        for m in ("rprofile-timeline", "rprofile-timeline-alt", "floor", "floor+clock"):
            if m in modes:
                print("%s added time / viztracer's: %.2f" % (
                    m, (med(m, "elapsed") - none) / (vz - none)))
    events = med("rprofile-timeline", "events")
    print("exports of %d events (%d dropped):" % (events, med("rprofile-timeline", "dropped")))
    for key in ("chrome", "speedscope", "dataframe"):
        if any(key in x for x in runs["rprofile-timeline"]):
            s = med("rprofile-timeline", key)
            line = "  %-11s %.3f s per million events" % (key, s / events * 1e6)
            if key + "_bytes" in runs["rprofile-timeline"][0]:
                line += ", %.1f bytes per event" % (med("rprofile-timeline", key + "_bytes") / events)
            print(line)
    if "viztracer" in modes:
        n = med("viztracer", "save_events") * 2
        print("  viztracer save(): %.3f s per million events, %.1f bytes per event" % (
            med("viztracer", "save") / n * 1e6, med("viztracer", "save_bytes") / n))


def count_instructions(modes, args):
    import instructions

    modes = [m for m in modes if m != "rprofile-timeline-rss"]  # a thread: not repeatable
    c = {m: instructions.count(m, None, args.scale, os.environ["RPROFILE_BENCH_FLOOR"],
                               script=os.path.basename(__file__)) for m in modes}
    print("Python %s, workload %s at 1/%d, instructions in the measured span (millions)" % (
        sys.version.split()[0], args.workload, args.scale))
    print("%-22s %10s %10s %16s" % ("mode", "total", "added", "added/viztracer"))
    vz = c["viztracer"] - c["none"] if "viztracer" in c else None
    for m in modes:
        added = c[m] - c["none"]
        print("%-22s %10.1f %10s %16s" % (
            m, c[m] / 1e6, "" if m == "none" else "%.1f" % (added / 1e6),
            "" if m == "none" or not vz else "%.2f" % (added / vz)))


if __name__ == "__main__":
    main()
