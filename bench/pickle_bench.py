"""Pickled profiles: pickling and unpickling an rprofile.Stats, and a profiler's snapshot,
against `pickle` on the same stats dict. Run by hand, never a pass/fail test.

    python bench/pickle_bench.py [--rounds 5] [--scale 1.0] [--functions 33334]
                                 [--modes dict,Stats,Stats-sorted,snapshot-dict,snapshot]

Inputs:
- bench/stats_bench.py's synthetic profile: 100,000 functions and 1,000,000 caller edges at
  scale 1 (made by that script on first use, into bench/.build/stats/);
- a program of 3 x --functions distinct functions (bench/big_profile.py's, each `f` called
  from its own `a` and `b`) profiled by rprofile.Profile in the measuring process.

Modes (what is pickled):
- dict: `pstats.Stats(file).stats`, the stats dict as marshal.load gives it (its key tuples
  shared, as pickle's memo then shares them too): the anchor of the Stats modes;
- Stats: `rprofile.Stats(file)`;
- Stats-sorted: the same after `sort_stats('cumulative')` and `calc_callees()`, so the payload
  carries the sort order and the callee lists are remade on arrival;
- snapshot-dict: the profiler's stats dict (`prof.stats`): the anchor of the snapshot;
- snapshot: `prof._take_snapshot()`, the native object `create_stats` keeps.

Each measurement is a fresh process timing only its span (perf_counter): `dumps` builds the
input (untimed), then `pickle.dumps(obj, protocol)`, and writes the bytes to a file; `loads`
reads that file (untimed) and times `pickle.loads`, as a receiving process would. Modes are
interleaved round by round (the order rotates). Also reported: the pickle's size, and each
side's peak memory over its baseline (ru_maxrss after less before the timed call). In the first
round the loads child checks that what it got equals the original (its stats dict, its
marshal bytes for a snapshot).
"""

import argparse
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ["dict", "Stats", "Stats-sorted", "snapshot-dict", "snapshot"]
ANCHOR = {"dict": "dict", "Stats": "dict", "Stats-sorted": "dict",
          "snapshot-dict": "snapshot-dict", "snapshot": "snapshot-dict"}


def synthetic(scale):
    sys.path.insert(0, HERE)
    import stats_bench

    return stats_bench.synthetic(scale)


def profiled_program(n):
    """A profiler that ran big_profile.py's program of 3n functions."""
    sys.path.insert(0, HERE)
    import big_profile

    import rprofile

    run = big_profile.build(n)
    prof = rprofile.Profile()
    prof.enable()
    run()
    prof.disable()
    return prof


def make_input(mode, path, n):
    if mode == "dict":
        import pstats

        return pstats.Stats(path).stats
    if mode in ("Stats", "Stats-sorted"):
        from rprofile import Stats

        st = Stats(path)
        if mode == "Stats-sorted":
            st.sort_stats("cumulative").calc_callees()
        return st
    prof = profiled_program(n)
    snap = prof._take_snapshot()
    return snap.to_dict() if mode == "snapshot-dict" else snap


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child_dumps(mode, path, n, out, protocol):
    obj = make_input(mode, path, n)
    before = peak()
    t0 = time.perf_counter()
    data = pickle.dumps(obj, protocol)
    elapsed = time.perf_counter() - t0
    grown = peak() - before
    with open(out, "wb") as f:
        f.write(data)
    return {"dumps": elapsed, "size": len(data), "dumps_mem": grown}


def child_loads(mode, path, n, src, check):
    with open(src, "rb") as f:
        data = f.read()
    before = peak()
    t0 = time.perf_counter()
    obj = pickle.loads(data)
    elapsed = time.perf_counter() - t0
    result = {"loads": elapsed, "loads_mem": peak() - before}
    if check:
        if mode.startswith("snapshot"):
            # The program is made again here: the same functions, the same calls.
            want = profiled_program(n)._take_snapshot().to_dict()
            got = obj if mode == "snapshot-dict" else obj.to_dict()
            same = {k: v[:2] + (len(v[4]),) for k, v in got.items()} == \
                   {k: v[:2] + (len(v[4]),) for k, v in want.items()}
        else:
            from rprofile import Stats

            want = Stats(path).stats
            same = (obj if mode == "dict" else obj.stats) == want
        result["same"] = same
    return result


def run_child(*args):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--functions", type=int, default=33_334)
    ap.add_argument("--protocol", type=int, default=pickle.HIGHEST_PROTOCOL)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        side, mode, path, n, file, extra = args.child
        if side == "dumps":
            res = child_dumps(mode, path, int(n), file, int(extra))
        else:
            res = child_loads(mode, path, int(n), file, extra == "check")
        print(json.dumps(res))
        return

    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error("unknown mode %r (modes: %s)" % (m, ", ".join(MODES)))
    path = synthetic(args.scale)
    info = json.load(open(path + ".json"))
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            shift = r % len(modes)
            for m in modes[shift:] + modes[:shift]:
                file = os.path.join(d, m + ".pickle")
                one = run_child("dumps", m, path, str(args.functions), file, str(args.protocol))
                one.update(run_child("loads", m, path, str(args.functions), file,
                                     "check" if r == 0 else "-"))
                os.unlink(file)
                res[m].append(one)
            print("round %d done" % (r + 1), file=sys.stderr)

    print("Python %s, pickle protocol %d, %d rounds (medians, min-max)"
          % (sys.version.split()[0], args.protocol, args.rounds))
    print("Stats modes: %s, %d functions, %d caller edges; snapshot modes: a program of %d "
          "functions" % (os.path.basename(path), info["functions"], info["edges"],
                         3 * args.functions))
    med = {m: {k: statistics.median(x[k] for x in res[m]) for k in res[m][0] if k != "same"}
           for m in modes}
    print("%-14s %-22s %-22s %8s %10s %10s   %s" % (
        "mode", "dumps (ms)", "loads (ms)", "MB", "dumps MiB", "loads MiB", "same"))
    for m in modes:
        rng = lambda k: "%.0f (%.0f-%.0f)" % (1000 * med[m][k], 1000 * min(x[k] for x in res[m]),
                                               1000 * max(x[k] for x in res[m]))
        print("%-14s %-22s %-22s %8.1f %10.0f %10.0f   %s" % (
            m, rng("dumps"), rng("loads"), med[m]["size"] / 1e6, med[m]["dumps_mem"] / 2**20,
            med[m]["loads_mem"] / 2**20, res[m][0].get("same")))
    print("ratios to the anchor (mode / anchor; below 1 is faster or smaller):")
    print("%-14s %-8s %8s %8s %8s" % ("mode", "anchor", "dumps", "loads", "size"))
    for m in modes:
        a = ANCHOR[m]
        if a == m or a not in med:
            continue
        print("%-14s %-8s %8.2f %8.2f %8.2f" % (
            m, a[:8] if a == "dict" else "snap-d", med[m]["dumps"] / med[a]["dumps"],
            med[m]["loads"] / med[a]["loads"], med[m]["size"] / med[a]["size"]))


if __name__ == "__main__":
    main()
