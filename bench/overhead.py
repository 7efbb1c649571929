"""Profiling overhead: rprofile against cProfile, run by hand, never a pass/fail test.

    python bench/overhead.py [--rounds 7] [--workloads fib,oo,...] [--modes none,cProfile,rprofile,...]

Each measurement is a fresh process that imports everything, then times only the workload
(perf_counter around it) with the profiler enabled for that span. Modes are interleaved round
by round (the order rotates) so that drift of a noisy machine hits all modes alike. Printed per
workload: the median time of each mode with min and max, the slowdown over `none`, and
rprofile's added time as a ratio of cProfile's ((rprofile - none) / (cProfile - none)), and the
same ratio for `floor`: a do-nothing C hook for the same events (bench/floor.c, compiled here
for the interpreter being measured; on 3.12+ callbacks CPython calls by vectorcall, as
rprofile's), the cost a profiler cannot go below, and `floor+clock`: the same hook reading the
clock rprofile reads by default on the events a profiler must time (every PY_* event, and
CALL/C_RETURN/C_RAISE of anything but a Python function), the least a profiler that times every
call can cost. `floor-builtin` (3.12+) is `floor` with builtin functions (METH_FASTCALL) as the
callbacks, as cProfile registers: the difference is CPython's trampoline for builtins.
`rprofile-cpu` and `rprofile-thread_cpu` are rprofile with those native clocks.
`rprofile-alt` is rprofile imported from the folder named by RPROFILE_BENCH_ALT (an earlier
build's package, copied there): an A/B comparison of two builds in one interleaved run.
Compile that folder's `.py` files first (`python -m compileall DIR`): importing the package
from source changed the jinja2 workload's own instructions in the measured span by ~6 M
(3.10, at 1/20), in the alt build's favour.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

# ---------------------------------------------------------------- workloads (each ~0.1-0.5 s bare)

# bench/instructions.py runs the same workloads 1/SCALE as long under valgrind.
SCALE = int(os.environ.get("RPROFILE_BENCH_SCALE", "1"))


def n(count):
    return max(1, count // SCALE)



def w_fib():
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    fib(30 if SCALE == 1 else 23)


def w_oo():
    class Vec:
        __slots__ = ("x", "y")

        def __init__(self, x, y):
            self.x, self.y = x, y

        def add(self, other):
            return Vec(self.x + other.x, self.y + other.y)

        def norm2(self):
            return self.x * self.x + self.y * self.y

    acc = Vec(0, 0)
    for i in range(n(600_000)):
        acc = acc.add(Vec(i, -i))
        acc.norm2()


def w_builtins():
    data = []
    for i in range(n(700_000)):
        data.append(len(str(i)))
        max(i, 3)
        isinstance(i, int)
    sorted(data)
    sum(data)


def w_generators():
    def gen(n):
        for i in range(n):
            yield i * 2

    def chain(n):
        yield from gen(n)

    for _ in range(n(300)):
        sum(chain(5_000))


def w_json_re():
    doc = {"k%d" % i: [i, str(i), {"x": i * 1.5}] for i in range(200)}
    pat = re.compile(r"k(\d+)")
    for _ in range(n(400)):
        text = json.dumps(doc)
        back = json.loads(text)
        for key in back:
            pat.match(key)


def w_jinja2():
    import jinja2

    env = jinja2.Environment()
    tmpl = env.from_string(
        "{% for row in rows %}<tr>{% for c in row %}<td>{{ c|e }}</td>{% endfor %}</tr>"
        "{% endfor %}{{ title|upper }}")
    rows = [[i, "x<%d>" % i, i * 0.5] for i in range(40)]
    for _ in range(n(1200)):
        tmpl.render(rows=rows, title="table")


def w_docutils():
    from docutils.core import publish_string

    text = "\n\n".join(
        "Section %d\n==========\n\nSome *emphasis*, ``code`` and a list:\n\n"
        "- one\n- two\n- `link <http://example.com/%d>`_\n" % (i, i) for i in range(12))
    for _ in range(n(12)):
        publish_string(text, writer_name="html", settings_overrides={"report_level": 5})


WORKLOADS = {
    "fib": w_fib,
    "oo": w_oo,
    "builtins": w_builtins,
    "generators": w_generators,
    "json_re": w_json_re,
    "jinja2": w_jinja2,
    "docutils": w_docutils,
}

# Real-library workloads and the package each needs in the bench's environment.
PACKAGES = {"jinja2": "jinja2", "docutils": "docutils"}


def ensure_packages(workloads):
    """Installs from PyPI (into the running interpreter's environment) what a workload needs."""
    import importlib.util

    missing = [PACKAGES[w] for w in workloads
               if w in PACKAGES and importlib.util.find_spec(PACKAGES[w]) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)

MODES = ["none", "cProfile", "rprofile", "floor", "floor+clock"]
FLOOR_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor.c")


def build_floor():
    """Compiles bench/floor.c for this interpreter (once per interpreter) and returns the folder
    holding the module. The floor is what a profiler cannot go below: the interpreter's own cost
    of delivering the events cProfile uses to a C function that does nothing."""
    import sysconfig

    out = os.path.join(os.path.dirname(FLOOR_SOURCE), ".build",
                       "py%d.%d" % sys.version_info[:2])
    target = os.path.join(out, "_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.exists(target) or os.path.getmtime(target) < os.path.getmtime(FLOOR_SOURCE):
        os.makedirs(out, exist_ok=True)
        cc = (sysconfig.get_config_var("CC") or "cc").split()
        subprocess.run(cc + ["-O2", "-shared", "-fPIC", "-I" + sysconfig.get_paths()["include"],
                             FLOOR_SOURCE, "-o", target], check=True)
    return out


class Floor:
    """The do-nothing hook with a profiler's enable/disable: sys.monitoring callbacks for the
    nine events on 3.12+ (vectorcall objects, or builtin functions without `vectorcall`), the C
    profile hook before. With `clock`, the events a profiler must time also read the clock
    rprofile reads by default."""

    def __init__(self, folder, clock=False, vectorcall=True):
        sys.path.insert(0, folder)
        import _floor

        self.mod = _floor
        self.monitoring = sys.version_info >= (3, 12)
        self.clock = clock
        self.vectorcall = vectorcall

    def enable(self):
        if self.monitoring:
            self.mod.set_monitoring(self.clock, self.vectorcall)
        else:
            (self.mod.set_clock_hook if self.clock else self.mod.set_hook)()

    def disable(self):
        (self.mod.unset_monitoring if self.monitoring else self.mod.unset_hook)()


def make_profiler(mode):
    if mode == "none":
        return None
    if mode == "cProfile":
        import cProfile

        return cProfile.Profile()
    if mode == "rprofile":
        import rprofile

        return rprofile.Profile()
    if mode in ("rprofile-cpu", "rprofile-thread_cpu"):
        import rprofile

        return rprofile.Profile(mode.split("-", 1)[1])
    if mode == "rprofile-alt":
        sys.path.insert(0, os.environ["RPROFILE_BENCH_ALT"])
        import rprofile

        assert os.path.dirname(rprofile.__file__).startswith(os.environ["RPROFILE_BENCH_ALT"])
        return rprofile.Profile()
    if mode == "floor":
        return Floor(os.environ["RPROFILE_BENCH_FLOOR"])
    if mode == "floor+clock":
        return Floor(os.environ["RPROFILE_BENCH_FLOOR"], clock=True)
    if mode == "floor-builtin":
        return Floor(os.environ["RPROFILE_BENCH_FLOOR"], vectorcall=False)
    raise SystemExit("unknown mode %r" % mode)


def child(mode, workload):
    func = WORKLOADS[workload]
    prof = make_profiler(mode)
    # Under valgrind (bench/instructions.py) only the measured span is counted.
    marks = Floor(os.environ["RPROFILE_BENCH_FLOOR"]).mod if "RPROFILE_BENCH_COUNT" in os.environ \
        else None
    if marks:
        marks.start_counting()
    if prof is None:
        t0 = time.perf_counter()
        func()
        elapsed = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        prof.enable()
        func()
        prof.disable()
        elapsed = time.perf_counter() - t0
    if marks:
        marks.stop_counting()
    print(json.dumps({"elapsed": elapsed}))


def measure(mode, workload):
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mode, workload],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])["elapsed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--child", nargs=2, metavar=("MODE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)

    workloads = args.workloads.split(",")
    modes = args.modes.split(",")
    ensure_packages(workloads)
    if any(m.startswith("floor") for m in modes):
        os.environ["RPROFILE_BENCH_FLOOR"] = build_floor()
    times = {(w, m): [] for w in workloads for m in modes}
    for r in range(args.rounds):
        for w in workloads:
            order = modes[r % len(modes):] + modes[: r % len(modes)]
            for m in order:
                times[w, m].append(measure(m, w))
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr)

    print("Python %s, %d rounds, medians (min-max) in seconds" % (
        sys.version.split()[0], args.rounds))
    # Added time of each profiling mode as a ratio of cProfile's: (mode - none) / (cProfile - none).
    ratio_modes = [m for m in modes if m not in ("none", "cProfile")] \
        if {"none", "cProfile"} <= set(modes) else []
    head = "%-11s" % "workload" + "".join("%-26s" % m for m in modes)
    head += "".join("%-14s" % (m + "/cP") for m in ratio_modes)
    print(head)
    for w in workloads:
        med = {m: statistics.median(times[w, m]) for m in modes}
        row = "%-11s" % w
        for m in modes:
            cell = "%.3f (%.3f-%.3f)" % (med[m], min(times[w, m]), max(times[w, m]))
            if m != "none" and "none" in med:
                cell += " %.2fx" % (med[m] / med["none"])
            row += "%-26s" % cell
        for m in ratio_modes:
            added_c = med["cProfile"] - med["none"]
            row += "%-14s" % ("%.2f" % ((med[m] - med["none"]) / added_c) if added_c > 0 else "n/a")
        print(row)


if __name__ == "__main__":
    main()
