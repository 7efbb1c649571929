"""The sampler following child processes (issue 28, `--sample --subprocesses`), run by hand,
never a pass/fail test:

    python bench/sampling_children.py [--rounds 5] [--quick] [--parts cost,slowdown]
                                      [--raw FILE] [--other PYTHON]

1. `cost`: the sampler's own CPU per round, a round being one read of every process of the
   family at a tick. The target (`--idle N`) is a parent that forks N-1 children; each of the
   N processes sleeps in a loop 20 Python frames deep, so that the sampler has the CPU it asks
   for and a read costs what it costs, not a wait for a core. Modes: `single` (`--sample
   --pid`, the parent only, as before issue 28) and `follow` (`--sample --subprocesses --pid`),
   with 1 and 5 processes, attached for D1 and D2 seconds at 1000 Hz: user+sys CPU (wait4)
   over the rounds (the reads of the parent), all-in and marginal between the two durations
   ((cpu(D2) - cpu(D1)) / (rounds(D2) - rounds(D1)), per round). `--other PYTHON` adds
   `single` run by another interpreter's rprofile (`other`: an older build, say), 1 process,
   interleaved with the rest: whether the single-process reads cost what they cost before.
2. `slowdown`: what following costs the program. The target (`--pool`) starts a fork Pool(4)
   (its workers running), says `ready`, waits for `go`, then maps threads_bench's task (fib(27)
   and 140,000 small-object method calls, ~0.1 s) over 16 items and times that map
   (perf_counter), and its CPU with its workers' (RUSAGE_SELF + RUSAGE_CHILDREN once the pool
   is joined). Modes: `none`; `attach@HZ` (`--sample --pid`: the parent, which waits in
   pool.map); `follow@HZ` (`--sample --subprocesses --pid`: the parent and its 4 workers), at
   100 and 1000 Hz; attached before `go`. Rounds interleaved, the order rotating; medians and
   the fastest run, as ratios to `none`; the sampler's CPU (wait4) beside.

rprofile is the one the running interpreter imports. Needs permission to read another
process's memory (root, or kernel.yama.ptrace_scope 0).
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
import threads_bench  # noqa: E402
from sampling import depth, number, reap  # noqa: E402

DEPTH = 20
POOL = 4
TASKS = 16
QUICK_TASKS = 4

# ---------------------------------------------------------------- the targets (run as programs)


def idle(stack):
    """Recurses until `stack` frames deep, then sleeps there in a loop until killed."""
    if depth() < stack:
        return idle(stack)
    while True:
        time.sleep(0.01)


def target_idle(processes):
    for _ in range(processes - 1):
        if os.fork() == 0:
            idle(DEPTH)
    print("ready", flush=True)
    idle(DEPTH)


def pid_of(_):
    return os.getpid()


def task(_):
    threads_bench.task()


def target_pool(tasks):
    import multiprocessing

    pool = multiprocessing.get_context("fork").Pool(POOL)
    started = set()
    while len(started) < POOL:
        started.update(pool.map(pid_of, range(4 * POOL), chunksize=1))
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the target expected `go`")
    t0 = time.perf_counter()
    pool.map(task, range(tasks), chunksize=1)
    elapsed = time.perf_counter() - t0
    pool.close()
    pool.join()
    cpu = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        cpu += ru.ru_utime + ru.ru_stime
    print(json.dumps({"elapsed": elapsed, "cpu": cpu}), flush=True)


# ---------------------------------------------------------------- running

# "Sampled 3998 of 4000 ticks (...) over 4.012 s: 5 processes, ..."
SUMMARY = re.compile(r"Sampled ([\d,]+) of ([\d,]+) ticks.*?: (?:(\d+) processes, )?")


def sampler_cmd(pid, rate, follow, out, duration=None, python=sys.executable):
    cmd = [python, "-m", "rprofile", "--sample", "--rate", str(rate), "--pid",
           str(pid), "-o", out]
    if follow:
        cmd.append("--subprocesses")
    return cmd + (["--duration", str(duration)] if duration else [])


def rounds_of(stderr):
    """(rounds, reads, asked): reads of the parent (one per round), of every process, and the
    ticks asked of every process, from the summary line."""
    m = SUMMARY.search(stderr)
    if not m:
        raise SystemExit("no summary line in:\n" + stderr)
    processes = int(m.group(3) or 1)
    return number(m.group(1)) / processes, number(m.group(1)), number(m.group(2))


def cost_run(processes, follow, duration, tmp, python=sys.executable):
    # A session of its own, so that its forked children go with it.
    target = subprocess.Popen([sys.executable, HERE, "--idle", str(processes)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        if target.stdout.readline().strip() != "ready":
            raise SystemExit("the idle target did not start")
        out = os.path.join(tmp, "cost.prof")
        sampler = subprocess.Popen(sampler_cmd(target.pid, 1000, follow, out, duration, python),
                                   stderr=subprocess.PIPE, text=True)
        err = sampler.stderr.read()
        status, cpu = reap(sampler, 60 + duration)
        if status != 0:
            raise SystemExit("the sampler failed:\n" + err)
        rounds, reads, asked = rounds_of(err)
        return {"cpu": cpu, "rounds": rounds, "reads": reads, "asked": asked}
    finally:
        os.killpg(target.pid, 9)
        target.wait()


def slowdown_run(mode, tasks, tmp):
    kind, _, rate = mode.partition("@")
    target = subprocess.Popen([sys.executable, HERE, "--pool", str(tasks)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    sampler = None
    try:
        if target.stdout.readline().strip() != "ready":
            raise SystemExit("the pool target did not start")
        if kind != "none":
            out = os.path.join(tmp, "slow.prof")
            sampler = subprocess.Popen(sampler_cmd(target.pid, int(rate), kind == "follow", out),
                                       stderr=subprocess.PIPE, text=True)
            # Attached: it says so on its first line.
            sampler.stderr.readline()
            time.sleep(0.3)
        target.stdin.write("go\n")
        target.stdin.flush()
        figures = json.loads(target.stdout.readline())
        target.wait(timeout=60)
        if sampler is not None:
            err = sampler.stderr.read()
            status, cpu = reap(sampler, 60)
            if status != 0:
                raise SystemExit("the sampler failed:\n" + err)
            figures["sampler_cpu"] = cpu
            figures["rounds"], figures["reads"], figures["asked"] = rounds_of(err)
        return figures
    finally:
        for p in (target, sampler):
            if p is not None and p.returncode is None:
                p.kill()


# ---------------------------------------------------------------- report

def median(runs, key):
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def report_cost(results, durations):
    d1, d2 = durations
    print("\nSampler cost per round at 1000 Hz, idle processes 20 frames deep, attached for "
          "%g s and %g s (medians):\n" % (d1, d2))
    print("| mode | processes | %g s run: CPU s (%% of a core) | rounds (reads of every "
          "process, of ticks asked) | us CPU per round, all-in | us CPU per round, marginal | "
          "us per process read, marginal |" % d2)
    print("|---|---|---|---|---|---|---|")
    anchor = None
    for (mode, n), runs in results.items():
        long = [r[d2] for r in runs]
        margins = [(r[d2]["cpu"] - r[d1]["cpu"]) / (r[d2]["rounds"] - r[d1]["rounds"])
                   for r in runs if r[d2]["rounds"] > r[d1]["rounds"]]
        margin = statistics.median(margins) * 1e6
        allin = statistics.median(r["cpu"] / r["rounds"] for r in long) * 1e6
        if anchor is None:
            anchor = margin
        print("| %s | %d | %.3f (%.0f%%) | %s (%s of %s) | %.1f | %.1f | %.1f |"
              % (mode, n, median(long, "cpu"), 100 * median(long, "cpu") / d2,
                 "{:,.0f}".format(median(long, "rounds")), "{:,.0f}".format(median(long, "reads")),
                 "{:,.0f}".format(median(long, "asked")), allin, margin, margin / n))
    print("\n(marginal per round as a ratio to `single`, 1 process: %s)"
          % ", ".join("%s/%d %.2f" % (mode, n, statistics.median(
              (r[d2]["cpu"] - r[d1]["cpu"]) / (r[d2]["rounds"] - r[d1]["rounds"])
              for r in runs) * 1e6 / anchor) for (mode, n), runs in results.items()))


def report_slowdown(results, tasks):
    print("\nTarget slowdown: fork Pool(%d) mapping threads_bench.task over %d items, timed "
          "around pool.map (medians):\n" % (POOL, tasks))
    print("| mode | map wall s, median (min-max) | slowdown, medians | slowdown, fastest | "
          "target CPU s (workers included) | CPU slowdown | sampler CPU s | rounds | reads "
          "(asked) |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = results["none"]
    b_med, b_min = median(base, "elapsed"), min(r["elapsed"] for r in base)
    b_cpu = median(base, "cpu")
    for mode, runs in results.items():
        med, lo, hi = median(runs, "elapsed"), min(r["elapsed"] for r in runs), \
            max(r["elapsed"] for r in runs)
        cpu = median(runs, "cpu")
        rel = "" if mode == "none" else "%+.1f%%" % (100 * (med / b_med - 1))
        fast = "" if mode == "none" else "%+.1f%%" % (100 * (lo / b_min - 1))
        crel = "" if mode == "none" else "%+.1f%%" % (100 * (cpu / b_cpu - 1))
        scpu = median(runs, "sampler_cpu")
        rounds = median(runs, "rounds")
        print("| %s | %.3f (%.3f-%.3f) | %s | %s | %.3f | %s | %s | %s | %s |"
              % (mode, med, lo, hi, rel, fast, cpu, crel,
                 "-" if scpu is None else "%.3f" % scpu,
                 "-" if rounds is None else "{:,.0f}".format(rounds),
                 "-" if rounds is None else "{:,.0f} ({:,.0f})".format(
                     median(runs, "reads"), median(runs, "asked"))))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--idle":
        return target_idle(int(sys.argv[2]))
    if len(sys.argv) > 2 and sys.argv[1] == "--pool":
        return target_pool(int(sys.argv[2]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", default="cost,slowdown")
    ap.add_argument("--raw", default=None)
    ap.add_argument("--other", default=None, metavar="PYTHON")
    args = ap.parse_args()
    rounds = 1 if args.quick else args.rounds
    durations = (0.5, 1.0) if args.quick else (1.0, 4.0)
    tasks = QUICK_TASKS if args.quick else TASKS
    parts = args.parts.split(",")
    raw = {}
    print("Python %s, %s, load average %s" % (sys.version.split()[0], os.path.dirname(
        __import__("rprofile").__file__), open("/proc/loadavg").read().split()[0]))
    with tempfile.TemporaryDirectory() as tmp:
        if "cost" in parts:
            configs = [("single", 1), ("follow", 1), ("single", 5), ("follow", 5)]
            if args.other:
                configs.insert(1, ("other", 1))
            cost = {c: [] for c in configs}
            for i in range(rounds):
                order = configs[i % len(configs):] + configs[:i % len(configs)]
                for mode, n in order:
                    python = args.other if mode == "other" else sys.executable
                    run = {d: cost_run(n, mode == "follow", d, tmp, python) for d in durations}
                    cost[(mode, n)].append(run)
            raw["cost"] = {"%s/%d" % k: v for k, v in cost.items()}
            report_cost(cost, durations)
        if "slowdown" in parts:
            modes = ["none", "attach@100", "follow@100", "attach@1000", "follow@1000"]
            slow = {m: [] for m in modes}
            for i in range(rounds):
                for mode in modes[i % len(modes):] + modes[:i % len(modes)]:
                    slow[mode].append(slowdown_run(mode, tasks, tmp))
            raw["slowdown"] = slow
            report_slowdown(slow, tasks)
    print("\nload average after: %s" % open("/proc/loadavg").read().split()[0])
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(raw, f, indent=1, default=str)


if __name__ == "__main__":
    main()
