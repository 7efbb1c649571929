"""The pprof export of a big profile: how long it takes to write and how big it is, against
the marshal stats file (`dump_stats`, the anchor) and the HTML report of the same stats. Run
by hand, never a pass/fail test.

    python bench/pprof_bench.py [--rounds 5] [--scale 1.0]

Input: bench/stats_bench.py's synthetic profile (100,000 functions and 1,000,000 caller edges
at scale 1), made on first use as bench/report_bench.py makes it.

Measured, each round in fresh processes, the three writers interleaved: the time of
`Stats(file).dump_stats(path)`, `.dump_pprof(path)` and `.to_html(path)` (the load not timed),
the whole command `python -m rprofile.stats --pprof path file` (interpreter start and load
included), the sizes, and where Go is installed the time `go tool pprof -top` takes to read
the pprof file and print its table.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from report_bench import print_table, setup

CHILD = """
import sys, time
from rprofile import Stats
st = Stats(sys.argv[1])
write = {"dump_stats": st.dump_stats, "dump_pprof": st.dump_pprof, "to_html": st.to_html}
t = time.perf_counter()
write[sys.argv[3]](sys.argv[2])
print(time.perf_counter() - t)
"""

WRITERS = (("dump_stats", "s.prof"), ("dump_pprof", "p.pb.gz"), ("to_html", "r.html"))


def write_time(prof, out, writer):
    return float(subprocess.run([sys.executable, "-c", CHILD, prof, out, writer], check=True,
                                capture_output=True, text=True).stdout)


def wall(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    args, prof = setup(__doc__.split("\n")[0])
    go = shutil.which("go")
    rows = {}

    def add(key, value):
        rows.setdefault(key, []).append(value)

    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            times = {}
            for writer, name in WRITERS:
                out = os.path.join(d, name)
                times[writer] = write_time(prof, out, writer)
                add("%s (s)" % writer, times[writer])
                add("%s size (MB)" % writer, os.path.getsize(out) / 1e6)
            add("dump_pprof / dump_stats (ratio)", times["dump_pprof"] / times["dump_stats"])
            pprof = os.path.join(d, "p.pb.gz")
            add("python -m rprofile.stats --pprof, whole command (s)",
                wall([sys.executable, "-m", "rprofile.stats", "--pprof", pprof, prof]))
            if go:
                add("go tool pprof -top, whole command (s)",
                    wall([go, "tool", "pprof", "-top", pprof]))
            print("round %d done" % (r + 1), file=sys.stderr)
    print_table(rows, args.rounds)


if __name__ == "__main__":
    main()
