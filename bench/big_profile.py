"""Big profiles: memory per function and per edge, and the cost of turning a profile into stats.
Run by hand, never a pass/fail test.

    python bench/big_profile.py [--functions 50000] [--rounds 5]

A program of N distinct functions (made with exec), each called from two distinct callers, so
the profile has ~2N+1 functions and ~3N caller->callee edges. Each measurement is a fresh
process, modes interleaved:

- memory: the bytes the profiler has allocated for its data by the end of the run (the program's
  code objects exist before profiling starts): for cProfile, whose entries come from PyMem,
  tracemalloc's count; for rprofile, whose entries come from the C allocator, the growth of
  glibc's in-use bytes (mallinfo2), which includes the unused capacity of its growable arrays;
  reported as bytes per function and per edge together;
- create_stats + dump_stats: the time to build the stats dict and write the .prof file.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def malloc_in_use():
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
        ).split()]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def traced():
    import tracemalloc

    return tracemalloc.get_traced_memory()[0]


def build(n):
    src = []
    for i in range(n):
        src.append("def f%d(x):\n    return x + 1\n" % i)
        src.append("def a%d(x):\n    return f%d(x)\n" % (i, i))
        src.append("def b%d(x):\n    return f%d(x)\n" % (i, i))
    ns = {}
    exec(compile("".join(src), "big_program.py", "exec"), ns)
    callers = [ns["a%d" % i] for i in range(n)] + [ns["b%d" % i] for i in range(n)]

    def run():
        for c in callers:
            c(1)

    return run


def child(mode, n, what):
    import cProfile

    import rprofile

    run = build(n)
    run()  # warm: every code object and its caches exist before profiling
    prof = (cProfile if mode == "cProfile" else rprofile).Profile()
    if mode == "cProfile":
        import tracemalloc

        tracemalloc.start()
        measure = traced
    else:
        measure = malloc_in_use
    before = measure()
    prof.enable()
    run()
    after = measure()
    prof.disable()
    if mode == "cProfile":
        tracemalloc.stop()
    result = {"mem": after - before}
    if what == "dump":
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            prof.dump_stats(os.path.join(d, "out.prof"))
            result["dump"] = time.perf_counter() - t0
            result["functions"] = len(prof.stats)
            result["edges"] = sum(len(v[4]) for v in prof.stats.values())
    print(json.dumps(result))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, n, what = args.child
        return child(mode, int(n), what)

    modes = ["cProfile", "rprofile"]
    res = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in (modes if r % 2 == 0 else modes[::-1]):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", m,
                                  str(args.functions), "dump"],
                                 check=True, capture_output=True, text=True).stdout
            res[m].append(json.loads(out))
    first = res["cProfile"][0]
    items = first["functions"] + first["edges"]
    print("Python %s, %d distinct functions in the program, %d rows and %d edges in the "
          "profile, %d rounds (medians)" % (sys.version.split()[0], 3 * args.functions,
                                            first["functions"], first["edges"], args.rounds))
    med = {m: {k: statistics.median(x[k] for x in res[m]) for k in ("mem", "dump")}
           for m in modes}
    for m in modes:
        print("%-9s memory %6.1f bytes per function+edge   create_stats+dump_stats %.3f s" % (
            m, med[m]["mem"] / items, med[m]["dump"]))
    print("rprofile/cProfile: memory %.2f, create_stats+dump_stats %.2f (speed-up %.1fx)" % (
        med["rprofile"]["mem"] / med["cProfile"]["mem"],
        med["rprofile"]["dump"] / med["cProfile"]["dump"],
        med["cProfile"]["dump"] / med["rprofile"]["dump"]))


if __name__ == "__main__":
    main()
