"""rprofile's sampler beside Python 3.15's own (`python -m profiling.sampling`, PEP 799), on 3.15,
run by hand, never a pass/fail test (issue 35).

    python3.15 bench/sampling_315.py [--rounds 5] [--quick] [--work N] [--modes ...] [--raw FILE]

Run it with a 3.15 interpreter whose environment has rprofile (a release build). Each round runs
every mode once, in an order that rotates round by round (drift of a noisy machine hits all
alike); figures are medians over the rounds.

The target is this file run as a program (`--target`): one thread 20 Python frames deep calls
`heavy` and `light` in turn, which do fixed pure-Python work (3 units and 1 unit) and time
themselves with perf_counter; it prints, as JSON, the seconds each measured and its own work's
wall and thread CPU time. Modes (HZ: 1000, 10000):
- `none`: the target alone;
- `rprofile-run@HZ`: `python -m rprofile --sample --rate HZ -o F target`;
- `rprofile-attach@HZ`: the target run plainly, `python -m rprofile --sample --pid P` on it;
- `cpython-run@HZ`: `python -m profiling.sampling run -r HZ --pstats -o F target`;
- `cpython-attach@HZ`: `python -m profiling.sampling attach -r HZ --pstats -o F P`.
An attaching sampler is given ATTACH_WAIT seconds before the target starts its work.

Figures per mode: the target's work wall time and its slowdown against `none`; the samples each
sampler says it took; the sampler's CPU (every process of the mode, user+sys from wait4, less the
target's thread CPU over its work, less the same difference for `none`: what sampling added,
all-in: its startup, symbol lookup and writing the file) per sample; the share of samples each
gives `heavy` (cumulative samples of heavy / those of heavy and light, from the pstats file)
beside the share the target measured inside the functions.

`--parts cost` (with `slowdown`, the default, interleaved with it): the target spins in heavy and
light 20 frames deep until killed, and each sampler attaches (`rprofile --sample --pid P
--duration D`, `profiling.sampling attach -d D`) for 1 s and 4 s at 1 and 10 kHz: its own CPU
(wait4) per sample it took, all-in, and marginal between the two durations ((CPU(4 s) - CPU(1 s))
/ (samples(4 s) - samples(1 s)), per round), which leaves out starting, finding the runtime and
writing the file.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from sampling import med  # noqa: E402  (the median of what was measured, Nones left out)

DEPTH = 20
ROUNDS_OF_WORK = 40
QUICK_ROUNDS_OF_WORK = 12
UNIT = 20_000
ATTACH_WAIT = 1.0
RATES = (1000, 10000)
MODES = ["none"] + ["%s@%d" % (kind, rate) for rate in RATES for kind in (
    "rprofile-run", "rprofile-attach", "cpython-run", "cpython-attach")]


# ---------------------------------------------------------------- the target (run as a program)

SPENT = {"heavy": 0.0, "light": 0.0}


def heavy():
    t = time.perf_counter()
    x = 0
    for i in range(3 * UNIT):
        x += i * i
    SPENT["heavy"] += time.perf_counter() - t


def light():
    t = time.perf_counter()
    x = 0
    for i in range(UNIT):
        x += i * i
    SPENT["light"] += time.perf_counter() - t


def down(depth, rounds):
    if depth > 0:
        return down(depth - 1, rounds)
    for _ in range(rounds):
        for _ in range(5):
            heavy()
            light()


def busy():
    """The cost part's target: heavy and light 20 frames deep until killed."""
    print("ready", flush=True)
    down(DEPTH - 2, 10 ** 9)


def target(rounds, wait):
    if wait:
        print("ready", flush=True)
        sys.stdin.readline()
    wall, cpu = time.perf_counter(), time.thread_time()
    down(DEPTH - 2, rounds)  # <module>, down x 19, heavy or light: 20 frames deep
    print(json.dumps({**SPENT, "wall": time.perf_counter() - wall,
                      "cpu": time.thread_time() - cpu}), flush=True)


# ---------------------------------------------------------------- running the modes

RPROFILE_SUMMARY = re.compile(r"Sampled ([\d,]+) of ([\d,]+) ticks")
CPYTHON_SUMMARY = re.compile(r"Captured ([\d,]+) samples")


def cpu_of(rusage):
    return rusage.ru_utime + rusage.ru_stime


def wait_cpu(proc):
    """Waits for `proc`; the CPU it and the children it waited for used."""
    _, _, rusage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return cpu_of(rusage)


def sampler_cmd(kind, rate, out, pid=None, prog=None, duration=None):
    py = sys.executable
    if duration is not None:
        flag = ["--duration"] if kind.startswith("rprofile") else ["-d"]
        return sampler_cmd(kind, rate, out, pid=pid) + flag + [str(duration)]
    if kind == "rprofile-run":
        return [py, "-m", "rprofile", "--sample", "--rate", str(rate), "-o", out, prog]
    if kind == "rprofile-attach":
        return [py, "-m", "rprofile", "--sample", "--rate", str(rate), "--pid", str(pid),
                "-o", out]
    if kind == "cpython-run":
        return [py, "-m", "profiling.sampling", "run", "-r", str(rate), "--pstats", "-o", out,
                prog]
    return [py, "-m", "profiling.sampling", "attach", "-r", str(rate), "--pstats", "-o", out,
            str(pid)]


def heavy_share(path):
    """Cumulative samples of heavy / those of heavy and light, from a pstats file."""
    import pstats

    samples = {"heavy": 0, "light": 0}
    for (_, _, name), (_, nc, _, _, _) in pstats.Stats(path).stats.items():
        if name in samples:
            samples[name] += nc
    total = samples["heavy"] + samples["light"]
    return samples["heavy"] / total if total else None


def run_mode(mode, rounds, tmp):
    kind, _, rate = mode.partition("@")
    rate = int(rate or 0)
    out = os.path.join(tmp, "out.pstats")
    if os.path.exists(out):
        os.remove(out)
    tgt = [sys.executable, HERE, "--target", str(rounds)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    res = {}
    if kind in ("none", "rprofile-run", "cpython-run"):
        cmd = tgt if kind == "none" else sampler_cmd(kind, rate, out, prog=HERE)
        if kind != "none":
            cmd += ["--target", str(rounds)]
        with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
            proc = subprocess.Popen(cmd, stdout=so, stderr=se, stdin=subprocess.DEVNULL, env=env)
            cpu = wait_cpu(proc)
            so.seek(0)
            se.seek(0)
            stdout, stderr = so.read(), se.read()
        report = stdout
    else:
        proc = subprocess.Popen(tgt + ["--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env=env)
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the target did not start")
        with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
            sampler = subprocess.Popen(sampler_cmd(kind, rate, out, pid=proc.pid), stdout=so,
                                       stderr=se, stdin=subprocess.DEVNULL, env=env)
            time.sleep(ATTACH_WAIT)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            report = proc.stdout.readline()
            proc.stdin.close()
            proc.stdout.close()
            cpu = wait_cpu(proc) + wait_cpu(sampler)
            so.seek(0)
            se.seek(0)
            stdout, stderr = so.read(), se.read()
    line = [x for x in report.splitlines() if x.startswith("{")]
    if not line:
        raise RuntimeError("%s: no report\n%s\n%s" % (mode, stdout[-2000:], stderr[-2000:]))
    spent = json.loads(line[-1])
    res.update(spent, tree_cpu=cpu, truth=spent["heavy"] / (spent["heavy"] + spent["light"]))
    text = stdout + stderr
    m = (RPROFILE_SUMMARY if kind.startswith("rprofile") else CPYTHON_SUMMARY).search(text)
    if kind != "none":
        if not m:
            raise RuntimeError("%s: no sample count\n%s" % (mode, text[-2000:]))
        res["samples"] = int(m.group(1).replace(",", ""))
        res["share"] = heavy_share(out)
    return res


COST_DURATIONS = (1, 4)
COST_MODES = ["%s@%d" % (kind, rate) for rate in RATES
              for kind in ("rprofile-attach", "cpython-attach")]


def cost_run(mode, duration, tmp):
    """A sampler attached to the busy target for `duration` s: its CPU (wait4) and samples."""
    kind, _, rate = mode.partition("@")
    out = os.path.join(tmp, "cost.pstats")
    proc = subprocess.Popen([sys.executable, HERE, "--busy"], stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the busy target did not start")
        with tempfile.TemporaryFile("w+") as so:
            sampler = subprocess.Popen(
                sampler_cmd(kind, int(rate), out, pid=proc.pid, duration=duration),
                stdout=so, stderr=so, stdin=subprocess.DEVNULL,
                env=dict(os.environ, PYTHONWARNINGS="ignore"))
            cpu = wait_cpu(sampler)
            so.seek(0)
            text = so.read()
    finally:
        proc.kill()
        proc.wait()
    m = (RPROFILE_SUMMARY if kind.startswith("rprofile") else CPYTHON_SUMMARY).search(text)
    if not m:
        raise RuntimeError("%s: no sample count\n%s" % (mode, text[-2000:]))
    return {"cpu": cpu, "samples": int(m.group(1).replace(",", ""))}


def cost_table(results):
    d1, d2 = COST_DURATIONS
    lines = ["| sampler | rate Hz | %d s attached: samples taken | CPU s | µs CPU per sample, "
             "all-in | µs CPU per sample, marginal (%d s vs %d s) |" % (d2, d2, d1),
             "|" + "---|" * 6]
    for mode in COST_MODES:
        kind, _, rate = mode.partition("@")
        long_, short = results[(mode, d2)], results[(mode, d1)]
        marginal = [1e6 * (a["cpu"] - b["cpu"]) / (a["samples"] - b["samples"])
                    for a, b in zip(long_, short) if a["samples"] > b["samples"]]
        lines.append("| %s | %s | %d | %.3f | %.1f | %s |" % (
            kind, rate, med([r["samples"] for r in long_]), med([r["cpu"] for r in long_]),
            med([1e6 * r["cpu"] / r["samples"] for r in long_]),
            "-" if not marginal else "%.1f" % med(marginal)))
    return "\n".join(lines)


# ---------------------------------------------------------------- the table

def table(results, modes):
    base_wall = med([r["wall"] for r in results["none"]])
    base_extra = med([r["tree_cpu"] - r["cpu"] for r in results["none"]])
    head = ("| mode | target work wall s | slowdown | samples taken | sampler CPU s | "
            "µs CPU per sample | heavy's share: sampled (measured) |")
    lines = [head, "|" + "---|" * 7]
    for mode in modes:
        rs = results[mode]
        wall = med([r["wall"] for r in rs])
        row = [mode, "%.3f" % wall, "-" if mode == "none" else "%+.1f%%" % (
            100 * (wall / base_wall - 1))]
        if mode == "none":
            row += ["-", "-", "-"]
        else:
            added = [r["tree_cpu"] - r["cpu"] - base_extra for r in rs]
            per = [1e6 * a / r["samples"] for a, r in zip(added, rs) if r["samples"]]
            row += ["%d" % med([r["samples"] for r in rs]), "%.3f" % med(added),
                    "%.1f" % med(per)]
        share = med([r.get("share") for r in rs])
        truth = med([r["truth"] for r in rs])
        row.append("%s (%.3f)" % ("-" if share is None else "%.3f" % share, truth))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def table_note():
    return "Cost: one thread busy 20 frames deep, each sampler attached for %s s:" % (
        " and ".join(map(str, COST_DURATIONS)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--wait", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--parts", default="slowdown,cost")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--work", type=int, default=ROUNDS_OF_WORK,
                    help="rounds of heavy+light x 5 the target does (default %d)" % ROUNDS_OF_WORK)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--raw")
    args = ap.parse_args()
    if args.busy:
        return busy()
    if args.target is not None:
        return target(args.target, args.wait)
    if sys.version_info < (3, 15):
        sys.exit("sampling_315.py: run it with Python 3.15 (it compares with its sampler)")
    modes = args.modes.split(",")
    if "none" not in modes:
        modes.insert(0, "none")
    rounds = 1 if args.quick else args.rounds
    work = QUICK_ROUNDS_OF_WORK if args.quick else args.work
    parts = args.parts.split(",")
    results = {m: [] for m in modes} if "slowdown" in parts else {}
    costs = {(m, d): [] for m in COST_MODES for d in COST_DURATIONS} if "cost" in parts else {}
    runs = list(results) + list(costs)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for run in runs[r % len(runs):] + runs[:r % len(runs)]:
                if run in costs:
                    res = cost_run(run[0], run[1], tmp)
                    costs[run].append(res)
                    print("round %d %s/%ds cpu %.3f samples %d" % (
                        r + 1, run[0], run[1], res["cpu"], res["samples"]), file=sys.stderr,
                        flush=True)
                    continue
                res = run_mode(run, work, tmp)
                results[run].append(res)
                print("round %d %-22s wall %.3f samples %s share %s" % (
                    r + 1, run, res["wall"], res.get("samples", "-"), res.get("share", "-")),
                    file=sys.stderr, flush=True)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump({"slowdown": results,
                       "cost": {"%s/%ds" % k: v for k, v in costs.items()}}, f, indent=1)
    print("Python %s, %d round(s), load average %.1f before, %.1f after" % (
        sys.version.split()[0], rounds, load0, os.getloadavg()[0]))
    if results:
        print(table(results, modes))
    if costs:
        print()
        print(table_note(), cost_table(costs), sep="\n")


if __name__ == "__main__":
    main()
