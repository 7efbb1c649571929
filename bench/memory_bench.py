"""Memory attribution cost: rprofile's `Profile(memory=True)` against tracemalloc and memray,
run by hand, never a pass/fail test.

    python bench/memory_bench.py [--rounds 7]

An allocation-heavy workload (small tuples, strings, lists and dicts made and dropped; ~0.1 s
bare) is timed in a fresh process per measurement, modes interleaved round by round:

- `none`; `rprofile` (no memory tracking) and `rprofile-memory`, both with builtins=False so
  that the function calls cost the same in both; `rprofile-timeline` and
  `rprofile-memory-timeline` (timeline=True, a buffer that drops nothing), whose difference
  beyond the first two is what putting allocations and frees on the timeline costs;
- `tracemalloc` (`tracemalloc.start(1)`: one frame, the cheapest setting);
- `memray` (`memray.Tracker(..., trace_python_allocators=True)`, so that it sees what pymalloc
  serves, as rprofile and tracemalloc do; installed from PyPI into bench/.build/py3.X/site).

Printed: nanoseconds added per allocation, the allocations being those rprofile charged in the
same workload: rprofile-memory over rprofile (the attribution alone), and each tool over `none`.
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

MODES = ["none", "rprofile", "rprofile-memory", "rprofile-timeline", "rprofile-memory-timeline",
         "tracemalloc", "memray"]
# Enough events that nothing is dropped (the buffer is allocated before the timed part).
BUFFER = 4_000_000


def churn(n):
    out = []
    for i in range(n):
        t = (i, str(i), [i, i + 1])
        d = {"a": t, "b": str(i) * 3}
        out.append(d)
        if len(out) > 1000:
            out.clear()
    return len(out)


def workload():
    churn(60_000)


def child(mode):
    out = {}
    if mode == "none":
        t0 = time.perf_counter()
        workload()
        out["elapsed"] = time.perf_counter() - t0
    elif mode == "tracemalloc":
        import tracemalloc

        t0 = time.perf_counter()
        tracemalloc.start(1)
        workload()
        tracemalloc.stop()
        out["elapsed"] = time.perf_counter() - t0
    elif mode == "memray":
        sys.path.insert(0, benchsite.site_dir())
        import memray

        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            with memray.Tracker(os.path.join(d, "m.bin"), trace_python_allocators=True):
                workload()
            out["elapsed"] = time.perf_counter() - t0
    else:
        import rprofile

        prof = rprofile.Profile(builtins=False, memory="memory" in mode,
                                timeline="timeline" in mode, buffer_size=BUFFER)
        t0 = time.perf_counter()
        prof.enable()
        workload()
        prof.disable()
        out["elapsed"] = time.perf_counter() - t0
        stats = prof.memory_stats()
        if stats is not None:
            out["allocations"] = sum(m.allocations for m in stats.values())
        if prof.timeline is not None:
            out["dropped"] = prof.timeline.dropped
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    modes = [m for m in MODES if m != "memray" or benchsite.ensure("memray")]
    runs = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes[r % len(modes):] + modes[:r % len(modes)]:
            res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", m],
                                 check=True, capture_output=True, text=True)
            runs[m].append(json.loads(res.stdout.strip().splitlines()[-1]))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)
    med = {m: statistics.median(x["elapsed"] for x in runs[m]) for m in modes}
    allocs = statistics.median(x["allocations"] for x in runs["rprofile-memory"])
    print("Python %s, %d rounds, %d allocations charged per run, medians" % (
        sys.version.split()[0], args.rounds, allocs))
    for m in modes:
        line = "%-25s %.3f s  %.2fx" % (m, med[m], med[m] / med["none"])
        if m != "none":
            line += "   %.1f ns per allocation over none" % ((med[m] - med["none"]) / allocs * 1e9)
        print(line)
    print("memory attribution alone (rprofile-memory - rprofile): %.1f ns per allocation" % (
        (med["rprofile-memory"] - med["rprofile"]) / allocs * 1e9))
    extra = (med["rprofile-memory-timeline"] - med["rprofile-memory"]
             - (med["rprofile-timeline"] - med["rprofile"]))
    print("memory events on the timeline (memory-timeline - memory - (timeline - rprofile)): "
          "%.1f ns per allocation" % (extra / allocs * 1e9))
    if any(x.get("dropped") for m in modes for x in runs[m]):
        print("(some runs dropped timeline events: BUFFER is too small)")


if __name__ == "__main__":
    main()
