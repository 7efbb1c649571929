"""`--blocking` against the default (non-blocking) sampler, with py-spy (which blocks by
default) as the anchor; run by hand, never a pass/fail test.

    python bench/blocking.py [--rounds 5] [--rates 100,1000] [--seconds 1.5] [--raw FILE]

Two targets, each this file run as a program that times its own work span (perf_counter),
prints `ready` and waits for `go` on stdin, so that startup and attaching are outside the span:
`generators` (tests/sampled_programs/generators.py's loop: generators resumed by `for`,
`sum()`, `next()` and `yield from`, switching frames every few microseconds) and `calls`
(threads_bench.py's task: recursive fib and small-object method calls). Per target and rate,
modes `none`, `nonblocking` and `blocking` (`python -m rprofile --sample --pid PID
[--blocking] -o FILE`), and `py-spy` (`py-spy record --pid`, its default: the target paused for
each sample) when py-spy is installed beside this interpreter. Runs are interleaved round by
round (the order rotating); figures are medians over the rounds:

- slowdown: the target's work span over the bare one's (same round's `none`);
- dropped: rprofile's torn reads dropped over its reads, from its summary line;
- target stopped: a blocking run's own count of how long the target was stopped per sample
  (from the first thread interrupted to the last resumed), and in all over the work span: the
  part of the slowdown that the pauses are, which a loaded machine does not blur as it blurs
  the wall times;
- sampler CPU per sample: the CPU time of the sampling thread (`/proc/PID/task/TID/schedstat`,
  the thread named `rprofile-sample`; for py-spy, all its threads), read every 20 ms while it
  runs, over the samples it took (rprofile's summary; py-spy's `Samples:` count): startup and
  writing the output are left out.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))

# ---------------------------------------------------------------- the targets (run as programs)


def generators_step():
    """One round of tests/sampled_programs/generators.py's loop (its functions, loaded by
    running it for 0 seconds)."""
    import runpy

    argv, sys.argv = sys.argv, ["generators.py", "0"]
    try:
        ns = runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests",
                                         "sampled_programs", "generators.py"))
    finally:
        sys.argv = argv
    return lambda: ns["by_for"](50) + ns["by_sum"](50) + ns["by_next"](50)


def target(kind, seconds, reps):
    import threads_bench

    step = generators_step() if kind == "generators" else threads_bench.task
    if reps is None:
        # Calibration: the number of steps that take `seconds` bare.
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < 0.5:
            step()
            n += 1
        print(max(1, int(n * seconds / (time.perf_counter() - start))))
        return
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    print(json.dumps({"wall": time.perf_counter() - t0, "reps": reps}), flush=True)


# ---------------------------------------------------------------- one run


def thread_cpu(pid, names):
    """ns of CPU of `pid`'s threads whose name is in `names` (None: every thread)."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if names is None or comm in names:
            total += ns
    return total


def run_once(kind, mode, rate, reps):
    """{wall, dropped, taken, cpu_us} of one run of `kind` under `mode` at `rate`."""
    tgt = subprocess.Popen([sys.executable, HERE, "--target", kind, "--reps", str(reps)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert tgt.stdout.readline().strip() == "ready"
    sampler, out = None, tempfile.mktemp(prefix="rprofile-blocking-")
    if mode in ("nonblocking", "blocking"):
        cmd = [sys.executable, "-m", "rprofile", "--sample", "--pid", str(tgt.pid), "--rate",
               str(rate), "-o", out]
        cmd += ["--blocking"] if mode == "blocking" else []
        sampler = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        sampler.stderr.readline()  # "sampling process ...": it holds the target now
        names = {"rprofile-sample"}
    elif mode == "py-spy":
        cmd = [shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable),
               "py-spy"), "record", "--pid", str(tgt.pid), "--rate", str(rate), "--format",
               "raw", "--output", out]
        sampler = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        time.sleep(0.5)
        names = None
    tgt.stdin.write("go\n")
    tgt.stdin.flush()
    cpu = 0
    while tgt.poll() is None and sampler is not None:
        now = thread_cpu(sampler.pid, names)
        cpu = max(cpu, now or 0)
        time.sleep(0.02)
    result = json.loads(tgt.stdout.readline())
    tgt.wait()
    if sampler is not None:
        out_text, err = sampler.communicate(timeout=120)
        err = err or out_text
        if mode == "py-spy":
            taken = re.search(r"Samples: (\d+)", err)
            result["taken"] = int(taken.group(1)) if taken else 0
        else:
            m = re.search(r"Sampled (\d+) of \d+ ticks.*?(\d+) dropped", err)
            result["taken"], dropped = int(m.group(1)), int(m.group(2))
            result["dropped"] = dropped / max(1, result["taken"])
            paused = re.search(r"([\d.]+) us on average, ([\d.]+) s in all", err)
            if paused:
                result["pause_us"] = float(paused.group(1))
                result["paused"] = float(paused.group(2)) / result["wall"]
        result["cpu_us"] = cpu / 1000 / max(1, result["taken"])
    if os.path.exists(out):
        os.unlink(out)
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=["generators", "calls"])
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rates", default="100,1000")
    ap.add_argument("--raw", default=None, help="write every run's figures as JSON here")
    args = ap.parse_args()
    if args.target:
        return target(args.target, args.seconds, args.reps)
    pyspy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    modes = ["none", "nonblocking", "blocking"] + (["py-spy"] if os.path.exists(pyspy) else [])
    rates = [float(r) for r in args.rates.split(",")]
    cases = [(k, m, r) for k in ("generators", "calls") for r in rates for m in modes]
    runs = {c: [] for c in cases}
    reps = {k: int(subprocess.run([sys.executable, HERE, "--target", k, "--seconds",
                                   str(args.seconds)], capture_output=True, text=True,
                                  check=True).stdout) for k in ("generators", "calls")}
    for rnd in range(args.rounds):
        order = cases[rnd % len(cases):] + cases[:rnd % len(cases)]
        for case in order:
            runs[case].append(run_once(case[0], case[1], case[2], reps[case[0]]))
        print("round %d done, load %.1f" % (rnd + 1, os.getloadavg()[0]), file=sys.stderr)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump({"%s %s %g" % c: v for c, v in runs.items()}, f)
    print("| target | rate Hz | mode | slowdown, median (min-max) | dropped reads | "
          "target stopped: µs a sample, share of its run | sampler CPU µs per sample | "
          "samples taken |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("generators", "calls"):
        for rate in rates:
            bare = runs[(kind, "none", rate)]
            for mode in modes:
                rs = runs[(kind, mode, rate)]
                slow = [r["wall"] / b["wall"] - 1 for r, b in zip(rs, bare)]
                med = statistics.median
                cells = ["%+.1f%% (%+.1f..%+.1f)" % (100 * med(slow), 100 * min(slow),
                                                     100 * max(slow)) if mode != "none"
                         else "%.3f s bare" % med(r["wall"] for r in rs)]
                cells.append("%.1f%%" % (100 * med(r["dropped"] for r in rs))
                             if "dropped" in rs[0] else "-")
                cells.append("%.0f, %.1f%%" % (med(r["pause_us"] for r in rs),
                                                100 * med(r["paused"] for r in rs))
                             if "pause_us" in rs[0] else "-")
                cells.append("%.1f" % med(r["cpu_us"] for r in rs) if "cpu_us" in rs[0] else "-")
                cells.append("%d" % med(r["taken"] for r in rs) if "taken" in rs[0] else "-")
                print("| %s | %g | %s | %s |" % (kind, rate, mode, " | ".join(cells)))


if __name__ == "__main__":
    sys.exit(main())
