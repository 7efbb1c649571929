"""Watching live, side by side (issue 37, "Cost"): what `rprofile top`, the flight recorder
and the stall search cost the program watched, and their own CPU, beside `py-spy top`. Run by
hand, never a pass/fail test.

    python bench/top_bench.py [--rounds 5] [--rate 1000] [--raw FILE]

The target is bench/sampling.py's (`--target none`): fib and small-object method calls, ~2.4 s
bare, timing itself once told `go`. Each round runs every mode once, the order rotating:

- `none`: the target alone;
- `attach`: `python -m rprofile --sample --pid` (the sampler as it records, the anchor of the
  recorder's cost);
- `recorder`: the same with `--record-last 60 --stall 200` (samples kept in time order, the
  window trimmed at each read, the stalls found at the end);
- `top`: `python -m rprofile top --pid`, in a tmux window of 120x40; `top-blocking`: the same
  with `--blocking` (the target stopped for each read, as py-spy top does by default);
- `py-spy-top`, `py-spy-top-nonblocking`: `py-spy top --pid` (it pauses the target for each
  sample by default), in the same window;
- `ticks`: bench/ticks.c, a process that wakes at every tick of the rate and does nothing else:
  what waking alone costs on this machine, the floor under any sampler's own CPU;
- with `--alt DIR`, `attach-alt` and `top-alt`: the same as `attach` and `top` with the rprofile
  installed in DIR (`pip install --target DIR` of another build's wheel) first on `PYTHONPATH`.

`--modes` picks some of them (default: all but the `-alt` ones, which `--alt` adds).

Each tool is started 1 s before `go` and stopped when the target is done (SIGINT for the
recorders, Ctrl-C typed into tmux for the views); its CPU (user+sys, its children's rusage as a
wrapper process sees it) is divided by its run's wall time: the share of a core it took,
drawing, startup and writing included; and, read from /proc, its CPU while the target ran,
over that span: its steady cost. The target's wall and CPU times give the slowdown.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchsite  # noqa: E402


def target_cmd(reps):
    return [sys.executable, os.path.join(HERE, "sampling.py"), "--target", "none", str(reps), "0"]


MODES = ["none", "ticks", "attach", "recorder", "top", "top-blocking", "py-spy-top",
         "py-spy-top-nonblocking"]
ALT_MODES = ["attach-alt", "top-alt"]
LEAD = 1.0


def wrapped(out, cmd):
    """The command that runs `cmd` and then writes its user+sys CPU and wall time to `out`."""
    return [sys.executable, os.path.abspath(__file__), "--wrap", out, "--"] + cmd


def wrap(out, cmd):
    t0 = time.perf_counter()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the tool gets it; we stay to measure
    # (An ignored signal stays ignored across exec: the tool gets the default back.)
    proc = subprocess.Popen(cmd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    with open(out + ".pid", "w") as f:
        f.write(str(proc.pid))
    proc.wait()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        json.dump({"cpu": ru.ru_utime + ru.ru_stime, "wall": time.perf_counter() - t0,
                   "status": proc.returncode}, f)


class Tmux:
    def __init__(self, folder, cmd, env=None):
        self.socket = os.path.join(folder, "tmux.sock")
        prefix = "" if env is None else "env PYTHONPATH=%s " % env["PYTHONPATH"]
        self.run("new-session", "-d", "-s", "b", "-x", "120", "-y", "40",
                 prefix + " ".join(cmd) + "; sleep 600")

    def run(self, *args):
        return subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                              text=True)

    def close(self):
        self.run("kill-server")


def one_run(mode, rate, pyspy, folder, alt, reps):
    """The target's figures under `mode`, with the tool's CPU share."""
    env = None
    if mode.endswith("-alt"):
        env = dict(os.environ, PYTHONPATH=alt)
        mode = mode[:-len("-alt")]
    target = subprocess.Popen(target_cmd(reps), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert target.stdout.readline().strip() == "ready"
    out = os.path.join(folder, "tool.json")
    if os.path.exists(out):
        os.unlink(out)
    pid, tool, view = str(target.pid), None, None
    sample = [sys.executable, "-m", "rprofile", "--sample", "--rate", str(rate), "--pid", pid,
              "-o", os.path.join(folder, "out.prof")]
    if mode == "ticks":
        tool = subprocess.Popen(wrapped(out, [ticks_program(), str(rate)]))
    elif mode == "attach":
        tool = subprocess.Popen(wrapped(out, sample), stderr=subprocess.DEVNULL, env=env)
    elif mode == "recorder":
        tool = subprocess.Popen(wrapped(out, sample + ["--record-last", "60", "--stall", "200"]),
                                stderr=subprocess.DEVNULL)
    elif mode in ("top", "top-blocking"):
        blocking = ["--blocking"] if mode == "top-blocking" else []
        view = Tmux(folder, wrapped(out, [sys.executable, "-m", "rprofile", "top", "--rate",
                                          str(rate), "--pid", pid] + blocking), env)
    elif mode.startswith("py-spy-top"):
        cmd = [pyspy, "top", "--rate", str(rate), "--pid", pid]
        if mode.endswith("nonblocking"):
            cmd.append("--nonblocking")
        view = Tmux(folder, wrapped(out, cmd))
    time.sleep(LEAD)
    tool_pid = None
    if mode != "none":
        with open(out + ".pid") as f:
            tool_pid = int(f.read())
        cpu0, t0 = _cpu(tool_pid), time.perf_counter()
    target.stdin.write("go\n")
    target.stdin.flush()
    res = json.loads(target.stdout.readline())
    if tool_pid is not None:
        # The tool's CPU while the target ran: its steady cost, startup and output left out.
        res["span_share"] = (_cpu(tool_pid) - cpu0) / (time.perf_counter() - t0)
    if tool is not None:
        # The wrapper ignores SIGINT; the tool it runs stops on it, as on Ctrl-C.
        for p in _children(tool.pid):
            os.kill(p, signal.SIGINT)
        tool.wait(timeout=60)
    if view is not None:
        view.run("send-keys", "-t", "b", "C-c")
        for _ in range(100):
            if os.path.exists(out) and os.path.getsize(out):
                break
            time.sleep(0.1)
        view.close()
    target.stdin.close()
    target.wait(timeout=60)
    if mode != "none":
        with open(out) as f:
            t = json.load(f)
        res["tool_share"] = t["cpu"] / t["wall"]
    return res


def ticks_program():
    """bench/ticks.c built (once) into the bench's site folder."""
    exe = os.path.join(benchsite.site_dir(), "bin", "ticks")
    src = os.path.join(HERE, "ticks.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        subprocess.run([shutil.which("cc") or "gcc", "-O2", "-o", exe, src], check=True)
    return exe


def _cpu(pid):
    """User+sys seconds process `pid` (all its threads) has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def main():
    if sys.argv[1:2] == ["--wrap"]:
        return wrap(sys.argv[2], sys.argv[4:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--raw")
    ap.add_argument("--reps", type=int, default=24,
                    help="the target's rounds of work (default 24: ~1-2 s here)")
    ap.add_argument("--alt", help="a folder holding another build of rprofile")
    ap.add_argument("--modes", help="comma-separated, of: " + ",".join(MODES + ALT_MODES))
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed (apt-get install tmux)")
    pyspy = benchsite.ensure_tool("py-spy>=0.4,<0.5", "py-spy")
    modes = args.modes.split(",") if args.modes else MODES + (ALT_MODES if args.alt else [])
    unknown = [m for m in modes if m not in MODES + ALT_MODES]
    if unknown or (not args.alt and any(m in ALT_MODES for m in modes)):
        ap.error("unknown modes %s, or an -alt mode without --alt" % unknown)
    modes = [m for m in modes if pyspy or not m.startswith("py-spy")]
    if "none" not in modes:
        modes.insert(0, "none")
    res = {m: [] for m in modes}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rprofile-top-bench-") as folder:
        for r in range(args.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for m in order:
                res[m].append(one_run(m, args.rate, pyspy, folder, args.alt, args.reps))
            print("round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(res, f, indent=1)
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    base = med([r["elapsed"] for r in res["none"]])
    print("Python %s, %d rounds at %d Hz, load average %.2f before, %.2f after"
          % (sys.version.split()[0], args.rounds, args.rate, load0, os.getloadavg()[0]))
    print()
    cpu_base = med([r["cpu"] for r in res["none"]])
    print("| mode | target wall s, median (min-max) | slowdown | target CPU s | tool CPU while the target ran | tool CPU, all its run |")
    print("|---|---|---|---|---|---|")
    pct = lambda x: "-" if x is None else "%.1f%%" % (100 * x)  # noqa: E731
    for m in modes:
        walls = [r["elapsed"] for r in res[m]]
        span = med([r["span_share"] for r in res[m] if "span_share" in r])
        share = med([r["tool_share"] for r in res[m] if "tool_share" in r])
        print("| %s | %.3f (%.3f-%.3f) | %s | %.3f | %s | %s |" % (
            m, med(walls), min(walls), max(walls),
            "" if m == "none" else "%+.1f%%" % (100 * (med(walls) / base - 1)),
            med([r["cpu"] for r in res[m]]), pct(span), pct(share)))
    print()
    print("Target CPU without a tool: %.3f s (median)." % cpu_base)


if __name__ == "__main__":
    main()
