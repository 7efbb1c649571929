"""Profiling overhead: rprofile against cProfile, run by hand, never a pass/fail test.

    python bench/overhead.py [--rounds 7] [--workloads fib,oo,...] [--modes none,cProfile,rprofile]

Each measurement is a fresh process that imports everything, then times only the workload
(perf_counter around it) with the profiler enabled for that span. Modes are interleaved round
by round (the order rotates) so that drift of a noisy machine hits all modes alike. Printed per
workload: the median time of each mode with min and max, the slowdown over `none`, and
rprofile's added time as a ratio of cProfile's ((rprofile - none) / (cProfile - none)).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

# ---------------------------------------------------------------- workloads (each ~0.1-0.5 s bare)


def w_fib():
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    fib(30)


def w_oo():
    class Vec:
        __slots__ = ("x", "y")

        def __init__(self, x, y):
            self.x, self.y = x, y

        def add(self, other):
            return Vec(self.x + other.x, self.y + other.y)

        def norm2(self):
            return self.x * self.x + self.y * self.y

    acc = Vec(0, 0)
    for i in range(600_000):
        acc = acc.add(Vec(i, -i))
        acc.norm2()


def w_builtins():
    data = []
    for i in range(700_000):
        data.append(len(str(i)))
        max(i, 3)
        isinstance(i, int)
    sorted(data)
    sum(data)


def w_generators():
    def gen(n):
        for i in range(n):
            yield i * 2

    def chain(n):
        yield from gen(n)

    for _ in range(300):
        sum(chain(5_000))


def w_json_re():
    doc = {"k%d" % i: [i, str(i), {"x": i * 1.5}] for i in range(200)}
    pat = re.compile(r"k(\d+)")
    for _ in range(400):
        text = json.dumps(doc)
        back = json.loads(text)
        for key in back:
            pat.match(key)


WORKLOADS = {
    "fib": w_fib,
    "oo": w_oo,
    "builtins": w_builtins,
    "generators": w_generators,
    "json_re": w_json_re,
}

MODES = ["none", "cProfile", "rprofile"]


def make_profiler(mode):
    if mode == "none":
        return None
    if mode == "cProfile":
        import cProfile

        return cProfile.Profile()
    if mode == "rprofile":
        import rprofile

        return rprofile.Profile()
    raise SystemExit("unknown mode %r" % mode)


def child(mode, workload):
    func = WORKLOADS[workload]
    prof = make_profiler(mode)
    if prof is None:
        t0 = time.perf_counter()
        func()
        elapsed = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        prof.enable()
        func()
        prof.disable()
        elapsed = time.perf_counter() - t0
    print(json.dumps({"elapsed": elapsed}))


def measure(mode, workload):
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mode, workload],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["elapsed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--child", nargs=2, metavar=("MODE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)

    workloads = args.workloads.split(",")
    modes = args.modes.split(",")
    times = {(w, m): [] for w in workloads for m in modes}
    for r in range(args.rounds):
        for w in workloads:
            order = modes[r % len(modes):] + modes[: r % len(modes)]
            for m in order:
                times[w, m].append(measure(m, w))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)

    print("Python %s, %d rounds, medians (min-max) in seconds" % (
        sys.version.split()[0], args.rounds))
    head = "%-11s" % "workload" + "".join("%-26s" % m for m in modes)
    if {"none", "cProfile", "rprofile"} <= set(modes):
        head += "rprofile/cProfile added"
    print(head)
    for w in workloads:
        med = {m: statistics.median(times[w, m]) for m in modes}
        row = "%-11s" % w
        for m in modes:
            cell = "%.3f (%.3f-%.3f)" % (med[m], min(times[w, m]), max(times[w, m]))
            if m != "none" and "none" in med:
                cell += " %.2fx" % (med[m] / med["none"])
            row += "%-26s" % cell
        if {"none", "cProfile", "rprofile"} <= set(modes):
            added_c = med["cProfile"] - med["none"]
            added_r = med["rprofile"] - med["none"]
            row += "%.2f" % (added_r / added_c) if added_c > 0 else "n/a"
        print(row)


if __name__ == "__main__":
    main()
