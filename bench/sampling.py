"""Sampling profilers side by side: rprofile's sampler against py-spy, with pyinstrument and
cProfile for scale, run by hand, never a pass/fail test (issue 26, "Speed").

    python bench/sampling.py [--rounds 7] [--quick] [--parts slowdown,cost] [--modes ...]
                             [--raw FILE]

Two measurements, their runs interleaved round by round (the order rotates) so that drift of a
noisy machine hits all of them alike; figures are medians over the rounds.

1. `slowdown`: what sampling costs the program sampled. The target is this file run as a
   program (`--target`): a call-heavy pure-Python workload (recursive fib and small-object
   method calls, ~2.5 s bare) that times itself with perf_counter (wall) and process_time (its
   own CPU), so interpreter startup and the samplers' attaching are outside the span. Each
   target prints `ready` and waits for `go` on stdin; an attaching sampler is started on it
   and given ATTACH_WAIT seconds first. Modes: `none`; `rprofile-attach@HZ` (`python -m
   rprofile --sample --pid`, the target run plainly); `rprofile-run@HZ` (`python -m rprofile
   --sample script.py`); `py-spy-nonblocking@HZ` and `py-spy@HZ` (`py-spy record --pid`, with
   and without `--nonblocking`: by default py-spy pauses the target for each sample); in the
   target itself `Sampler@HZ` (rprofile.Sampler), `pyinstrument` (its default 1 ms interval)
   and `cProfile`. The sampler's own CPU (user+sys, from wait4) is given beside: on 2 cores it
   competes with the target.
2. `cost`: the sampler's own CPU per sample. The target (`--busy`) spins at a 20-frame-deep
   Python stack in one thread; a sampler attaches for a fixed `--duration` (D1 and D2 seconds)
   and its user+sys CPU is divided by the samples it took (all-in: startup, symbol lookup and
   writing the output included) and, between the two durations, the marginal CPU of a sample
   ((cpu(D2) - cpu(D1)) / (taken(D2) - taken(D1)), per round). rprofile says how many samples
   it took of how many it was asked for; py-spy takes rate x duration samples however long
   that takes, so its wall time shows when it falls behind.

py-spy (0.4.x) and pyinstrument are pip-installed into bench/.build/py3.X/site (benchsite.py);
rprofile is the one the running interpreter imports. Modes whose tool is missing (rprofile
without its sampler, a tool that does not install) are left out with a message.
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
import threading
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
import benchsite  # noqa: E402
import threads_bench  # noqa: E402

# ---------------------------------------------------------------- the targets (run as programs)

# threads_bench.py's task: fib(27) and 140,000 small-object method calls, ~0.1 s on 3.12 here.
REPS = 24
QUICK_REPS = 2
BUSY_DEPTH = 20


def work(reps):
    for _ in range(reps):
        threads_bench.task()


def make_profiler(inproc, rate):
    """(start, stop) of the in-process profiler of a slowdown target; stop returns its extras."""
    if inproc == "none":
        return (lambda: None), (lambda: {})
    if inproc == "cProfile":
        import cProfile

        prof = cProfile.Profile()
        return prof.enable, lambda: prof.disable() or {}
    if inproc == "pyinstrument":
        sys.path.insert(0, os.environ["RPROFILE_BENCH_SITE"])
        from pyinstrument import Profiler

        prof = Profiler()  # its default interval, 1 ms

        def stop():
            session = prof.stop()
            return {"samples": session.sample_count if hasattr(session, "sample_count")
                    else None}

        return prof.start, stop
    if inproc == "Sampler":
        from rprofile import Sampler

        sampler = Sampler(rate=rate)

        def stop():
            sampler.stop()
            asked, taken, dropped, truncated = sampler.counts
            return {"asked": asked, "samples": taken, "dropped": dropped}

        return sampler.start, stop
    raise SystemExit("unknown in-process mode %r" % inproc)


def own_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def target_slowdown(inproc, reps, rate):
    """The slowdown target: waits for `go`, times the workload under the in-process profiler
    (if any), prints the figures as one JSON line."""
    start, stop = make_profiler(inproc, rate)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the target expected `go`")
    c0 = time.process_time()
    t0 = time.perf_counter()
    start()
    t1 = time.perf_counter()
    work(reps)
    t2 = time.perf_counter()
    extra = stop()
    t3 = time.perf_counter()
    cpu = time.process_time() - c0
    # start/stop: what the in-process profilers' own calls take of the span; own_cpu: all this
    # process used, for the run mode's sampler (its parent) to be told apart.
    print(json.dumps(dict(extra, elapsed=t3 - t0, cpu=cpu, start=t1 - t0, stop=t3 - t2,
                          own_cpu=own_cpu())), flush=True)


def depth():
    frame, n = sys._getframe(1), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def busy(stack):
    """Recurses until the stack (this frame included) is `stack` Python frames deep, then spins
    there until killed."""
    if depth() < stack:
        return busy(stack)
    print("ready", flush=True)
    x = 0
    while True:
        x = (x + 1) & 0xFFFF


# ---------------------------------------------------------------- modes

RATES = (100, 1000, 10000)
SLOWDOWN_MODES = (
    ["none"]
    + ["rprofile-attach@%d" % r for r in RATES]
    + ["rprofile-run@%d" % r for r in RATES]
    + ["py-spy-nonblocking@%d" % r for r in RATES]
    + ["py-spy@%d" % r for r in RATES]
    + ["Sampler@1000", "pyinstrument", "cProfile"]
    + ["rprofile-recorder@1000"]
)
COST_MODES = ["rprofile@1000", "py-spy-nonblocking@1000", "py-spy@1000",
              "rprofile@10000", "py-spy-nonblocking@10000", "py-spy@10000",
              "rprofile-recorder@1000"]
# `rprofile-recorder`: an attach that also keeps a flight recorder and looks for stalls.
RECORDER_FLAGS = ["--record-last", "60", "--stall", "200"]
# Seconds an attaching sampler gets before the target starts its timed span.
ATTACH_WAIT = 0.5
PYSPY = "py-spy>=0.4,<0.5"


def split(mode):
    kind, _, rate = mode.partition("@")
    return kind, int(rate) if rate else 0


class Tools:
    """Where each tool is (or why not): the interpreter with rprofile, py-spy, pyinstrument."""

    def __init__(self):
        self.python = sys.executable
        self.pyspy = benchsite.ensure_tool(PYSPY, "py-spy")
        self.site = benchsite.ensure("pyinstrument")
        if self.site is None:
            self.site = benchsite.site_dir()  # py-spy may still be there
        self.rprofile_cli = self._has("--sample", [self.python, "-m", "rprofile", "--help"])
        self.rprofile_api = subprocess.run(
            [self.python, "-c", "import rprofile; rprofile.Sampler"],
            capture_output=True).returncode == 0
        self.pyinstrument = subprocess.run(
            [self.python, "-c", "import sys; sys.path.insert(0, %r); import pyinstrument"
             % self.site], capture_output=True).returncode == 0

    @staticmethod
    def _has(word, cmd):
        res = subprocess.run(cmd, capture_output=True, text=True)
        return res.returncode == 0 and word in res.stdout

    def missing(self, mode):
        """Why a mode cannot run here, or None."""
        kind, _ = split(mode)
        if kind.startswith("rprofile") and not self.rprofile_cli:
            return "`python -m rprofile --sample` is not in this rprofile build"
        if kind == "Sampler" and not self.rprofile_api:
            return "rprofile.Sampler is not in this rprofile build"
        if kind.startswith("py-spy") and self.pyspy is None:
            return "py-spy did not install"
        if kind == "pyinstrument" and not self.pyinstrument:
            return "pyinstrument did not install"
        return None

    def versions(self):
        out = []
        for name, cmd in (
                ("rprofile", [self.python, "-c", "import rprofile, os; print("
                              "getattr(rprofile, '__version__', '?'), "
                              "os.path.dirname(rprofile.__file__))"]),
                ("py-spy", [self.pyspy or "false", "--version"]),
                ("pyinstrument", [self.python, "-c", "import sys; sys.path.insert(0, %r); "
                                  "import pyinstrument; print(pyinstrument.__version__)"
                                  % self.site])):
            res = subprocess.run(cmd, capture_output=True, text=True)
            out.append("%s %s" % (name, res.stdout.strip().replace("py-spy ", "")
                                  if res.returncode == 0 else "(missing)"))
        return ", ".join(out)

    def sampler_cmd(self, kind, rate, pid, out, duration=None):
        """The command of an attaching sampler."""
        if kind.startswith("rprofile"):
            cmd = [self.python, "-m", "rprofile", "--sample", "--rate", str(rate),
                   "--pid", str(pid), "-o", out]
            if kind == "rprofile-recorder":
                cmd += RECORDER_FLAGS
            return cmd + (["--duration", str(duration)] if duration else [])
        cmd = [self.pyspy, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
               "-o", out]
        if kind.startswith("py-spy-nonblocking"):
            cmd.append("--nonblocking")
        return cmd + (["--duration", str(duration)] if duration else [])


# ---------------------------------------------------------------- running and reaping

def reap(proc, timeout):
    """Waits for `proc` (at most `timeout` s, then kills it) and returns (exit status, its
    user+sys CPU seconds, its descendants' included): wait4 gives one child's own usage, which
    RUSAGE_CHILDREN would mix with the target's."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, ru = os.wait4(proc.pid, 0)
            break
        time.sleep(0.005)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return proc.returncode, ru.ru_utime + ru.ru_stime


class Watchdog:
    """Kills the processes of a run that hangs (a sampler that never lets go of its target)."""

    def __init__(self, seconds):
        self.procs = []
        self.timer = threading.Timer(seconds, self.fire)
        self.timer.daemon = True
        self.fired = False
        self.timer.start()

    def fire(self):
        self.fired = True
        for p in self.procs:
            if p.returncode is None:
                try:
                    p.kill()
                except OSError:
                    pass

    def cancel(self):
        self.timer.cancel()


# rprofile's summary line: "Sampled 3998 of 4000 ticks (wall mode, 1000 Hz) over 4.012 s: ...;
# 0 dropped (torn reads), 0 truncated stacks."
RPROFILE_SUMMARY = re.compile(r"Sampled ([\d,]+) of ([\d,]+) ticks")
RPROFILE_DROPPED = re.compile(r"([\d,]+) dropped \(torn")
PYSPY_SAMPLES = re.compile(r"Samples: (\d+) Errors: (\d+)")


def number(text):
    return int(text.replace(",", ""))


def parse_samples(kind, text):
    """{"samples": taken, "asked": ..., "dropped": ...} from a sampler's output, as far as it
    says."""
    if kind.startswith("rprofile"):
        m = RPROFILE_SUMMARY.search(text)
        if not m:
            return {}
        out = {"samples": number(m.group(1)), "asked": number(m.group(2))}
        d = RPROFILE_DROPPED.search(text)
        if d:
            out["dropped"] = number(d.group(1))
        return out
    m = PYSPY_SAMPLES.search(text)
    return {"samples": int(m.group(1)), "errors": int(m.group(2))} if m else {}


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def slowdown_run(tools, mode, reps, tmp):
    """One slowdown measurement: the target's figures, the sampler's CPU and samples."""
    kind, rate = split(mode)
    inproc = kind if kind in ("none", "cProfile", "pyinstrument", "Sampler") else "none"
    target = [tools.python, HERE, "--target", inproc, str(reps), str(rate)]
    out = os.path.join(tmp, "out")
    if kind == "rprofile-run":
        target = [tools.python, "-m", "rprofile", "--sample", "--rate", str(rate), "-o",
                  out] + target[1:]
    env = dict(os.environ, RPROFILE_BENCH_SITE=tools.site)
    err_path = os.path.join(tmp, "target.err")
    dog = Watchdog(60 + 20 * reps)
    sampler = None
    try:
        with open(err_path, "w") as err:
            proc = subprocess.Popen(target, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, text=True, env=env)
        dog.procs.append(proc)
        if proc.stdout.readline().strip() != "ready":
            reap(proc, 10)
            raise SystemExit("%s: the target did not start:\n%s" % (mode, read(err_path)))
        if kind in ("rprofile-attach", "rprofile-recorder", "py-spy", "py-spy-nonblocking"):
            s_out = os.path.join(tmp, "sampler.out")
            with open(s_out, "w") as so:
                sampler = subprocess.Popen(tools.sampler_cmd(kind, rate, proc.pid, out),
                                           stdout=so, stderr=subprocess.STDOUT)
            dog.procs.append(sampler)
            time.sleep(ATTACH_WAIT)
            if sampler.poll() is not None:
                proc.kill()
                raise SystemExit("%s: the sampler ended before the run (status %s):\n%s" % (
                    mode, sampler.returncode, read(s_out)))
        proc.stdin.write("go\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        proc.stdin.close()
        proc.stdout.read()
        status, cpu_all = reap(proc, 60)
        if status != 0 or not line.strip():
            raise SystemExit("%s: the target failed (status %d):\n%s" % (
                mode, status, read(err_path)))
        res = json.loads(line)
        if kind == "rprofile-run":
            # wait4 counts the CLI with the program it reaped: its own share is the rest.
            res["sampler_cpu"] = cpu_all - res["own_cpu"]
            res.update(parse_samples(kind, read(err_path)))
        if sampler is not None:
            s_status, res["sampler_cpu"] = reap(sampler, 30)
            text = read(s_out)
            if s_status != 0:
                raise SystemExit("%s: the sampler failed (status %d):\n%s" % (
                    mode, s_status, text))
            res.update(parse_samples(kind, text))
    finally:
        dog.cancel()
    if dog.fired:
        raise SystemExit("%s: killed after hanging" % mode)
    return res


def cost_run(tools, mode, duration, tmp):
    """One cost measurement: a sampler attached to the busy target for `duration` seconds."""
    kind, rate = split(mode)
    out = os.path.join(tmp, "out")
    dog = Watchdog(60 + 30 * duration)
    try:
        proc = subprocess.Popen([tools.python, HERE, "--busy", str(BUSY_DEPTH)],
                                stdout=subprocess.PIPE, text=True)
        dog.procs.append(proc)
        if proc.stdout.readline().strip() != "ready":
            reap(proc, 10)
            raise SystemExit("the busy target did not start")
        s_out = os.path.join(tmp, "sampler.out")
        t0 = time.perf_counter()
        with open(s_out, "w") as so:
            sampler = subprocess.Popen(
                tools.sampler_cmd(kind, rate, proc.pid, out, duration=duration),
                stdout=so, stderr=subprocess.STDOUT)
        dog.procs.append(sampler)
        status, cpu = reap(sampler, 30 + 30 * duration)
        wall = time.perf_counter() - t0
        proc.kill()
        reap(proc, 10)
    finally:
        dog.cancel()
    text = read(s_out)
    if status != 0 or dog.fired:
        raise SystemExit("%s: the sampler failed (status %d):\n%s" % (mode, status, text))
    res = {"wall": wall, "cpu": cpu}
    res.update(parse_samples(kind, text))
    if "samples" not in res:
        raise SystemExit("%s: no sample count in the sampler's output:\n%s" % (mode, text))
    res.setdefault("asked", rate * duration)  # py-spy: rate x duration intervals
    return res


# ---------------------------------------------------------------- reporting

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec, none="-"):
    return none if x is None else spec % x


def slowdown_table(res, modes):
    """Markdown: per mode the target's wall time and its slowdown over `none` (medians, and
    fastest runs: this machine has slow spells from other load that the fastest of several
    runs nearly always misses), the target's CPU time and its slowdown, the sampler's CPU and
    samples."""
    none = res.get("none", [])
    base = med(r["elapsed"] for r in none)
    base_min = min((r["elapsed"] for r in none), default=None)
    base_cpu = med(r["cpu"] for r in none)

    def pct(x, b):
        return "" if b is None else "%+.1f%%" % (100 * (x / b - 1))

    rows = ["| mode | target wall s, median (min-max) | slowdown, medians | slowdown, fastest "
            "| target CPU s | CPU slowdown | sampler CPU s | samples taken (asked) |",
            "|---|---|---|---|---|---|---|---|"]
    for m in modes:
        runs = res[m]
        wall = [r["elapsed"] for r in runs]
        w, cpu = med(wall), med(r["cpu"] for r in runs)
        first = m == "none"
        taken = med(r.get("samples") for r in runs)
        asked = med(r.get("asked") for r in runs)
        samples = "-" if taken is None else "{:,.0f}".format(taken)
        if asked is not None:
            samples += " ({:,.0f})".format(asked)
        rows.append("| %s | %.3f (%.3f-%.3f) | %s | %s | %.3f | %s | %s | %s |" % (
            m, w, min(wall), max(wall), "" if first else pct(w, base),
            "" if first else pct(min(wall), base_min), cpu,
            "" if first else pct(cpu, base_cpu),
            fmt(med(r.get("sampler_cpu") for r in runs), "%.3f"), samples))
    return "\n".join(rows)


def cost_table(res, modes, durations):
    """Markdown: per sampler and rate, at the longer duration: wall, CPU, samples, CPU per
    sample (all-in and marginal), and rprofile's ratio to py-spy's."""
    d1, d2 = durations
    per = {}
    rows = ["| sampler | rate Hz | %d s run: wall s | CPU s (%% of a core) | samples taken "
            "(asked) | µs CPU per sample, all-in | µs CPU per sample, marginal (%d s vs %d s) |"
            % (d2, d2, d1),
            "|---|---|---|---|---|---|---|"]
    for m in modes:
        kind, rate = split(m)
        long_, short = res[m, d2], res[m, d1]
        wall = med(r["wall"] for r in long_)
        cpu = med(r["cpu"] for r in long_)
        allin = med(1e6 * r["cpu"] / r["samples"] for r in long_ if r["samples"])
        marginal = med(1e6 * (a["cpu"] - b["cpu"]) / (a["samples"] - b["samples"])
                       for a, b in zip(long_, short) if a["samples"] > b["samples"])
        per[m] = (allin, marginal)
        rows.append("| %s | %s | %.2f | %.3f (%.0f%%) | %s (%s) | %s | %s |" % (
            kind, "{:,}".format(rate), wall, cpu, 100 * cpu / wall,
            "{:,.0f}".format(med(r["samples"] for r in long_)),
            "{:,.0f}".format(med(r["asked"] for r in long_)),
            fmt(allin, "%.1f"), fmt(marginal, "%.1f")))
    ratios = []
    for m in modes:
        kind, rate = split(m)
        if kind != "rprofile":
            continue
        for other in ("py-spy-nonblocking", "py-spy"):
            o = "%s@%d" % (other, rate)
            if o in per and None not in per[m] + per[o]:
                ratios.append("| rprofile / %s | %s | %.2f | %.2f |" % (
                    other, "{:,}".format(rate), per[m][0] / per[o][0], per[m][1] / per[o][1]))
    if ratios:
        rows += ["", "| CPU per sample | rate Hz | all-in | marginal |", "|---|---|---|---|"]
        rows += ratios
    return "\n".join(rows)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="default 7 (1 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="a ~1-minute smoke run: 1 round, a short workload, 1 s and 2 s costs")
    ap.add_argument("--parts", default="slowdown,cost")
    ap.add_argument("--modes", default=None,
                    help="comma-separated slowdown and cost modes (default: all)")
    ap.add_argument("--raw", help="also write every run's figures to this JSON file")
    ap.add_argument("--target", nargs=3, metavar=("INPROC", "REPS", "RATE"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--busy", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.target:
        return target_slowdown(args.target[0], int(args.target[1]), int(args.target[2]))
    if args.busy:
        return busy(args.busy)

    rounds = args.rounds or (1 if args.quick else 7)
    reps = QUICK_REPS if args.quick else REPS
    durations = (1, 2) if args.quick else (1, 4)
    parts = args.parts.split(",")
    wanted = args.modes.split(",") if args.modes else None
    tools = Tools()

    def keep(modes):
        out = []
        for m in modes:
            if wanted is not None and m not in wanted:
                continue
            why = tools.missing(m)
            if why:
                print("leaving out %s: %s" % (m, why), file=sys.stderr)
            else:
                out.append(m)
        return out

    slow_modes = keep(SLOWDOWN_MODES) if "slowdown" in parts else []
    cost_modes = keep(COST_MODES) if "cost" in parts else []
    cells = [("slowdown", m, None) for m in slow_modes] + \
        [("cost", m, d) for m in cost_modes for d in durations]
    res = {}
    load0 = os.getloadavg()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rprofile-sampling-") as tmp:
        for r in range(rounds):
            order = cells[r % len(cells):] + cells[: r % len(cells)] if cells else []
            for part, m, d in order:
                if part == "slowdown":
                    res.setdefault(m, []).append(slowdown_run(tools, m, reps, tmp))
                else:
                    res.setdefault((m, d), []).append(cost_run(tools, m, d, tmp))
            print("round %d/%d done" % (r + 1, rounds), file=sys.stderr)
    took = time.perf_counter() - start
    load1 = os.getloadavg()
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump({m if isinstance(m, str) else "%s/%ds" % m: v for m, v in res.items()},
                      f, indent=1)

    print("Python %s, %d rounds in %.0f s, load average %.2f before, %.2f after (%d CPUs); %s" % (
        sys.version.split()[0], rounds, took, load0[0], load1[0], os.cpu_count(),
        tools.versions()))
    if slow_modes:
        print()
        print("Target slowdown: %d x (fib(%d) + %s Vec iterations), medians of %d; samplers "
              "attach %.1f s before the span" % (
                  reps, threads_bench.FIB_N, "{:,}".format(threads_bench.OO_ITERS), rounds,
                  ATTACH_WAIT))
        print()
        print(slowdown_table(res, slow_modes))
        inproc = [m for m in slow_modes if split(m)[0] in ("Sampler", "pyinstrument", "cProfile")]
        if inproc:
            print()
            print("The in-process profilers' own start() and stop() in the span, and the "
                  "slowdown without start() (medians):")
            base = med(r["elapsed"] for r in res.get("none", []))
            for m in inproc:
                without = med(r["elapsed"] - r["start"] for r in res[m])
                print("  %-14s %.1f ms, %.1f ms, %s" % (
                    m, 1e3 * med(r["start"] for r in res[m]), 1e3 * med(r["stop"] for r in res[m]),
                    "-" if base is None else "%+.1f%%" % (100 * (without / base - 1))))
    if cost_modes:
        print()
        print("Sampler cost: one thread spinning %d Python frames deep, sampler attached for "
              "%d s and %d s, medians of %d" % ((BUSY_DEPTH,) + durations + (rounds,)))
        print()
        print(cost_table(res, cost_modes, durations))


if __name__ == "__main__":
    main()
