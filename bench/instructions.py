"""Instruction counts of profiling overhead under valgrind's callgrind: repeatable where wall time
is noisy. Run by hand, never a pass/fail test (slow: a few minutes per interpreter).

    python bench/instructions.py [--workloads fib,oo,...] [--scale 20] [--modes rprofile,floor]

Runs the workloads of overhead.py, 1/scale as long, once per mode (none, cProfile, and the
modes asked for) under `valgrind --tool=callgrind`, counting only the measured span (callgrind
client requests from bench/floor.c around it), and prints per workload the instructions each
mode adds over `none`, with each one's as a ratio of cProfile's.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import overhead  # noqa: E402

MODES = ["rprofile", "floor", "floor+clock"]


def count(mode, workload, scale, floor_dir, script="overhead.py"):
    """Instructions in the measured span of `script --child mode [workload]` (a bench script
    whose child marks its span with the floor module's start/stop_counting)."""
    args = ["--child", mode] + ([workload] if workload else [])
    with tempfile.TemporaryDirectory() as d:
        # A fixed hash seed: with a random one, the workloads' own dict lookups moved by ~1 M
        # instructions between runs of one build (oo on 3.10: lookdict_unicode and the
        # allocator's frees), more than most changes of rprofile's hot path.
        env = dict(os.environ, RPROFILE_BENCH_SCALE=str(scale), RPROFILE_BENCH_COUNT="1",
                   RPROFILE_BENCH_FLOOR=floor_dir, PYTHONHASHSEED="0")
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             "--callgrind-out-file=" + os.path.join(d, "cg.%p"),
             sys.executable, os.path.join(HERE, script)] + args,
            check=True, capture_output=True, env=env)
        total = 0
        for path in glob.glob(os.path.join(d, "cg.*")):
            with open(path) as f:
                m = re.search(r"^totals: (\d+)", f.read(), re.M)
                if m:
                    total += int(m.group(1))
        return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(overhead.WORKLOADS))
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--modes", default=",".join(MODES),
                    help="modes of overhead.py to count besides none and cProfile")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    workloads = args.workloads.split(",")
    overhead.ensure_packages(workloads)
    floor_dir = overhead.build_floor()
    modes = ["none", "cProfile"] + [m for m in args.modes.split(",") if m not in ("none", "cProfile")]
    print("Python %s, workloads at 1/%d, instructions added over `none` (millions), and as a"
          " ratio of cProfile's" % (sys.version.split()[0], args.scale))
    print("%-11s %9s %9s" % ("workload", "none", "cProfile")
          + "".join(" %16s" % m for m in modes[2:]))
    for w in workloads:
        c = {m: count(m, w, args.scale, floor_dir) for m in modes}
        added = {m: c[m] - c["none"] for m in modes}
        print("%-11s %9.1f %9.1f" % (w, c["none"] / 1e6, added["cProfile"] / 1e6)
              + "".join(" %9.1f (%4.2f)" % (added[m] / 1e6, added[m] / added["cProfile"])
                        for m in modes[2:]))

if __name__ == "__main__":
    main()
