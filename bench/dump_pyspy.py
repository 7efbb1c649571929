"""`rprofile dump` beside `py-spy dump` on the same processes (issue 39): the same threads and the
same frames, and what one dump costs each tool.

For each program of tests/dump_programs/ (two deadlocked threads, fifty waiting threads, a
1,000-frame recursion, a spinning thread), started and left waiting, both tools dump it
`--rounds` times, interleaved: `rprofile dump --pid P --json`, `py-spy dump --pid P --json`
(which pauses the target for the read) and with `--nonblocking`. Compared per dump, by OS thread
id: the threads, their names, and each frame's file, line and function (py-spy names a method
`Class.name`, rprofile as the code object does, `name`: the last part is compared). A spinning
thread moves between two dumps, so its innermost frame may differ; the others wait and must
be the same. Cost: wall time and CPU (the tool's process, from os.times' children) per
dump, medians.

`--locals`: tests/dump_programs/locals.py (one local of each kind, and a closure) dumped once by
each tool with `--locals --json`: each local of each frame as each tool shows it, and whether
they agree (ints, floats, bools and None by their text, strings by their shown start).

py-spy is installed from PyPI into bench/.build/py3.X/site (benchsite.py)."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import benchsite

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "..", "tests", "dump_programs")
TARGETS = ["deadlock.py", "many_threads.py", "deep_wait.py", "spinner.py"]
PYSPY = "py-spy>=0.4,<0.5"


def started(name):
    proc = subprocess.Popen([sys.executable, os.path.join(PROGRAMS, name)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("%s did not start" % name)
    return proc


def timed(cmd):
    """(stdout, wall s) of `cmd`, which must succeed; reaped, its CPU is in os.times()."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd[0], err.decode()[-500:]))
    return out, wall


def children_cpu():
    r = os.times()
    return r.children_user + r.children_system


def rprofile_threads(doc):
    return {t["native_id"]: (t["name"], [(f["filename"], f["line"], f["name"])
                                          for f in reversed(t["frames"])])
            for t in doc["threads"]}


def pyspy_threads(doc):
    return {t["os_thread_id"]: (t.get("thread_name"),
                                [(f["filename"], f["line"], f["name"].rsplit(".", 1)[-1])
                                 for f in t["frames"]])
            for t in doc}


def compare(ours, theirs, moving):
    """(threads in both, threads in one only, names equal, frames equal, frames compared)."""
    both = set(ours) & set(theirs)
    names = same = total = 0
    for tid in both:
        a, b = ours[tid][1], theirs[tid][1]
        if moving and ours[tid][0] == "spinner":
            a, b = a[1:], b[1:]  # its innermost frame moves between two dumps
        total += max(len(a), len(b))
        same += sum(x == y for x, y in zip(a, b))
        names += ours[tid][0] == theirs[tid][0]
    return len(both), len(set(ours) ^ set(theirs)), names, same, total


def agree(ours, theirs):
    """Whether two shown values say the same: equal text, or a string's start in both."""
    if ours == theirs:
        return True
    if ours.startswith("'") and theirs.startswith('"'):
        a = ours[1:].split("'", 1)[0]
        b = theirs[1:].rstrip('"').removesuffix("...")
        return a.startswith(b) or b.startswith(a)
    return False


def locals_table(pyspy):
    """Each local of locals.py's frames as both tools show it."""
    proc = started("locals.py")
    try:
        ours, _ = timed([sys.executable, "-m", "rprofile", "dump", "--pid", str(proc.pid),
                         "--json", "--locals"])
        theirs, _ = timed([pyspy, "dump", "--pid", str(proc.pid), "--json", "--locals"])
    finally:
        proc.kill()
        proc.wait()
    (thread,) = json.loads(ours)["threads"]
    spy = {(f["name"].rsplit(".", 1)[-1], f["line"]): f["locals"] or []
           for f in json.loads(theirs)[0]["frames"]}
    print("| frame | local | rprofile | py-spy | agree |")
    print("|---|---|---|---|---|")
    for f in reversed(thread["frames"]):
        theirs = {v["name"]: v.get("repr") for v in spy.get((f["name"], f["line"]), [])}
        for v in f["locals"] or []:
            other = theirs.pop(v["name"], None)
            shown = other if other is not None else "(not shown)"
            print("| %s | %s | `%s` | `%s` | %s |" % (
                f["name"], v["name"], v["value"][:40], shown[:40],
                "yes" if other is not None and agree(v["value"], other) else "no"))
        for name, other in theirs.items():
            print("| %s | %s | (not shown) | `%s` | no |" % (f["name"], name, other[:40]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--locals", action="store_true", help="compare the locals shown instead")
    args = ap.parse_args()
    pyspy = benchsite.ensure_tool(PYSPY, "py-spy")
    if pyspy is None:
        sys.exit("py-spy could not be installed")
    if args.locals:
        locals_table(pyspy)
        return
    modes = {
        "rprofile": lambda pid: [sys.executable, "-m", "rprofile", "dump", "--pid", str(pid),
                                 "--json"],
        "py-spy": lambda pid: [pyspy, "dump", "--pid", str(pid), "--json"],
        "py-spy --nonblocking": lambda pid: [pyspy, "dump", "--pid", str(pid), "--json",
                                             "--nonblocking"],
    }
    rows = []
    for name in TARGETS:
        proc = started(name)
        try:
            cost = {m: ([], []) for m in modes}
            matched = {m: [] for m in modes if m != "rprofile"}
            for _ in range(args.rounds):
                docs = {}
                for mode, cmd in modes.items():
                    before = children_cpu()
                    out, wall = timed(cmd(proc.pid))
                    cost[mode][0].append(wall)
                    cost[mode][1].append(children_cpu() - before)
                    docs[mode] = json.loads(out)
                ours = rprofile_threads(docs["rprofile"])
                for mode in matched:
                    matched[mode].append(compare(ours, pyspy_threads(docs[mode]),
                                                 name == "spinner.py"))
        finally:
            proc.kill()
            proc.wait()
        for mode in modes:
            m = matched.get(mode)
            seen = "-" if m is None else "%d / %d / %d" % (
                min(x[0] for x in m), max(x[1] for x in m), min(x[2] for x in m))
            frames = "-" if m is None else "%d/%d" % (sum(x[3] for x in m),
                                                      sum(x[4] for x in m))
            rows.append((name, mode, seen, frames, statistics.median(cost[mode][0]) * 1e3,
                         statistics.median(cost[mode][1]) * 1e3))
    print("%d rounds, Python %d.%d; against rprofile's dump of the same round: threads in both "
          "/ in one only / names equal (worst round), frames equal (all rounds)"
          % ((args.rounds,) + sys.version_info[:2]))
    print("| program | tool | threads | frames equal | wall ms per dump | CPU ms per dump |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %.1f | %.1f |" % r)


if __name__ == "__main__":
    main()
