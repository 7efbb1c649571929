"""The IPython magics: what `%rprofile` adds to a statement, as a ratio of what `%prun` adds on
the same statement. Run by hand, never a pass/fail test.

    python bench/magics_bench.py [--rounds 7] [--workloads fib,objects,tiny]

Each measurement is a fresh process: an `InteractiveShell` with `%load_ext rprofile`, the
workload's functions defined and its statement run once, the magic run once on `x = 1` (its
first run's set-up), then one timed run (perf_counter around the magic's call, as a cell would
run it). Modes, interleaved round by round (the order
rotates):

- `none`: the statement executed in the shell's namespace, no profiler;
- `prun`, `rprofile`: `%prun -q` and `%rprofile -q`: profiling, the stats and the printed
  table (%prun formats it also with -q), nothing shown;
- `prun-shown`, `rprofile-shown`: without -q, as in a notebook (the shell's display taken by
  IPython's capture_output): %prun's text; %rprofile's text and HTML report.

Printed per workload, for CPU time and then wall time: each mode's median (min-max)
milliseconds, the time it adds over `none`, and `rprofile/prun`: (rprofile - none) / (prun -
none), for -q and shown.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

WORKLOADS = {
    # ~250,000 Python calls.
    "fib": ("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n", "fib(25)"),
    # Methods, a generator and builtins.
    "objects": ("class P:\n    def __init__(self, i):\n        self.i = i\n"
                "    def key(self):\n        return str(self.i)[::-1]\n",
                "sorted((P(i) for i in range(100000)), key=P.key)"),
    # Next to nothing to profile: what the magic itself costs (stats, table, report).
    "tiny": ("", "x = sum(range(10))"),
}
MODES = ["none", "prun", "rprofile", "prun-shown", "rprofile-shown"]


def child(workload, mode):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "rprofile")
    setup, statement = WORKLOADS[workload]
    ip.run_cell(setup)
    code = compile(statement, "<string>", "exec")
    exec(code, ip.user_ns, ip.user_ns)  # warm
    magic = mode.split("-")[0]
    quiet = "" if mode.endswith("-shown") else "-q "
    line = quiet + statement
    with capture_output():
        if mode != "none":
            ip.run_line_magic(magic, quiet + "x = 1")  # its first run's imports and set-up
        start, cpu = time.perf_counter(), time.process_time()
        if mode == "none":
            exec(code, ip.user_ns, ip.user_ns)
        else:
            ip.run_line_magic(magic, line)
        took = {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}
    print(json.dumps(took))


def measure(workload, mode):
    out = subprocess.run([sys.executable, __file__, "--child", workload, mode],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    workloads = args.workloads.split(",")
    times = {(w, m): [] for w in workloads for m in MODES}
    for r in range(args.rounds):
        for w in workloads:
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for m in order:
                times[w, m].append(measure(w, m))
    import IPython

    print("Python %s, IPython %s, %d rounds, medians (min-max) in ms; + added over none"
          % (sys.version.split()[0], IPython.__version__, args.rounds))
    for clock in ("cpu", "wall"):
        print("%-13s" % (clock + " time") + "".join("%-28s" % m for m in MODES)
              + "rprofile/prun  shown: rprofile/prun")
        for w in workloads:
            ms = {m: [t[clock] * 1e3 for t in times[w, m]] for m in MODES}
            med = {m: statistics.median(ms[m]) for m in MODES}
            cells = []
            for m in MODES:
                added = "" if m == "none" else " %+.1f" % (med[m] - med["none"])
                cells.append("%-28s" % ("%.1f (%.1f-%.1f)%s"
                                        % (med[m], min(ms[m]), max(ms[m]), added)))

            def ratio(a, b):
                return (med[a] - med["none"]) / (med[b] - med["none"])

            print("%-13s" % w + "".join(cells) + "%-15.2f%.2f"
                  % (ratio("rprofile", "prun"), ratio("rprofile-shown", "prun-shown")))

if __name__ == "__main__":
    main()
