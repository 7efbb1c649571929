"""The pytest plugin's cost, run by hand, never a pass/fail test.

    python bench/pytest_plugin_bench.py [--rounds 11] [--modules 20] [--tests 25]

A generated suite (MODULES files of TESTS tests, each a fraction of a millisecond of Python
calls) is run by `python -m pytest -q -p no:cacheprovider` in a fresh process per measurement,
modes interleaved round by round, and the whole process is timed (start-up included, which is
where an idle plugin would cost):

- `no-plugin`: `-p no:rprofile`, the plugin not loaded at all (the baseline);
- `idle`: rprofile installed, its plugin loaded from its entry point but not asked;
- `rprofile`: `--rprofile=DIR` (the tracer, a stats file per test, the merge, the summary);
- `rprofile-sample`: `--rprofile-sample` (the in-process sampler at 1000 Hz);
- `pytest-profiling`: pytest-profiling's `--profile` (cProfile, a file per test, the merge,
  its summary), the anchor; from the venv, else installed into bench/.build/py3.X/site.

Runs are made with bytecode caching on (without PYTHONDONTWRITEBYTECODE), as on a developer's
machine: pytest then keeps its rewritten test modules (and, rprofile being a plugin's
distribution, the rprofile package's `__init__`) in `__pycache__`. Each run is timed twice: wall time, and the CPU time (user + system) of the pytest process,
which a busy machine disturbs much less. Printed: medians of both, ratios to `no-plugin`,
milliseconds added per test; for `idle`, also the median and quartiles of its difference from
`no-plugin` within a round, and what importing the plugin module costs in a fresh
interpreter that has imported pytest. As the timings of two nearly equal modes cannot be told
apart on a busy machine, `idle` and `no-plugin` are also compared by count: the function
calls cProfile counts in a whole in-process run (`pytest.main`), for the suite and for one of
its modules alone; the same difference for both means no cost per test.
"""

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchsite  # noqa: E402

# pytest caches what its assertion rewriter makes only when bytecode may be written.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MODES = ["no-plugin", "idle", "rprofile", "rprofile-sample", "pytest-profiling"]

MODULE = '''
import pytest


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Record:
    def __init__(self, i):
        self.key = "k%d" % i
        self.value = i * 3


@pytest.fixture
def records():
    return [Record(i) for i in range(200)]


def test_fib():
    assert fib(14) == 377


def test_records(records):
    index = {r.key: r.value for r in records}
    assert sorted(index.values())[-1] == 597
'''


def write_suite(folder, modules, tests):
    for m in range(modules):
        body = [MODULE]
        for t in range(tests - 2):
            body.append("\n\ndef test_case_%d(records):\n    assert fib(%d) >= 0\n"
                        "    assert len([r for r in records if r.value %% %d == 0]) > 0\n"
                        % (t, 8 + t % 6, 2 + t % 5))
        with open(os.path.join(folder, "test_mod%02d.py" % m), "w") as f:
            f.write("".join(body))


def pytest_profiling_path():
    """Where pytest_profiling imports from: the venv (None) or the bench site; False if it
    cannot be had."""
    if importlib.util.find_spec("pytest_profiling") is not None:
        return None
    site = benchsite.ensure("pytest-profiling", "pytest_profiling")
    return site if site is not None else False


def pytest_args(mode, suite, out):
    args = ["-q", "-p", "no:cacheprovider", suite]
    if mode == "no-plugin":
        args += ["-p", "no:rprofile"]
    elif mode == "rprofile":
        args += ["--rprofile=" + os.path.join(out, "prof")]
    elif mode == "rprofile-sample":
        args += ["--rprofile-sample", "--rprofile=" + os.path.join(out, "prof")]
    elif mode == "pytest-profiling":
        args += ["--profile"]
    return args


def command(mode, suite, out, profiling_site):
    args = pytest_args(mode, suite, out)
    # pytest.main behind a sys.path *appended* with the bench site, so that the venv's pytest
    # stays the one imported (the site may hold another, pulled in as a dependency).
    site = profiling_site if mode == "pytest-profiling" and profiling_site else None
    code = ("import sys\nif %r: sys.path.append(%r)\nimport pytest\n"
            "raise SystemExit(pytest.main(%r))" % (bool(site), site, args))
    return [sys.executable, "-c", code]


def run(mode, suite, profiling_site):
    out = tempfile.mkdtemp(prefix="rprofile-bench-")
    try:
        cmd = command(mode, suite, out, profiling_site)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(cmd, cwd=out, capture_output=True, text=True, env=ENV)
        elapsed = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode != 0:
            raise SystemExit("%s failed:\n%s%s" % (mode, res.stdout[-3000:], res.stderr[-3000:]))
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return elapsed, cpu
    finally:
        shutil.rmtree(out, ignore_errors=True)


def call_count(mode, suite):
    """Function calls in a whole pytest run, counted by cProfile around pytest.main (started
    in the suite's folder, with a fixed hash seed, so that runs of one mode count alike)."""
    code = ("import cProfile, pstats, pytest\np = cProfile.Profile()\np.enable()\n"
            "pytest.main(%r)\np.disable()\nprint(pstats.Stats(p).total_calls)"
            % pytest_args(mode, suite, suite))
    res = subprocess.run([sys.executable, "-c", code], cwd=suite, capture_output=True,
                         text=True, check=True, env=dict(ENV, PYTHONHASHSEED="0"))
    return int(res.stdout.split()[-1])


def import_cost(n):
    code = ("import time, pytest\nt = time.perf_counter()\nimport rprofile.pytest_plugin\n"
            "print(time.perf_counter() - t)")
    return statistics.median(
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=ENV).stdout) for _ in range(n))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--modules", type=int, default=20)
    parser.add_argument("--tests", type=int, default=25)
    opts = parser.parse_args()
    ntests = opts.modules * opts.tests

    modes = list(MODES)
    profiling_site = pytest_profiling_path()
    if profiling_site is False:
        modes.remove("pytest-profiling")
    times = {m: [] for m in modes}  # [(wall, cpu), ...]
    with tempfile.TemporaryDirectory(prefix="rprofile-suite-") as suite:
        write_suite(suite, opts.modules, opts.tests)
        for m in modes:  # a warm-up run each: files cached, bytecode written
            run(m, suite, profiling_site)
        for r in range(opts.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for m in order:
                times[m].append(run(m, suite, profiling_site))

    med = {m: [statistics.median(t[k] for t in times[m]) for k in (0, 1)] for m in modes}
    base = med["no-plugin"]
    print("Python %d.%d.%d, %d rounds, %d tests, medians of the whole pytest process"
          % (sys.version_info[:3] + (opts.rounds, ntests)))
    print("%-17s %8s %6s %9s   %8s %6s %9s" % ("", "wall", "", "per test", "CPU", "",
                                             "per test"))
    for m in modes:
        cells = []
        for k in (0, 1):
            cells += [med[m][k], med[m][k] / base[k], (med[m][k] - base[k]) / ntests * 1e3]
        print("%-17s %7.3fs %5.2fx %+7.3fms   %7.3fs %5.2fx %+7.3fms" % ((m,) + tuple(cells)))
    for k, what in ((0, "wall"), (1, "CPU")):
        diffs = sorted((i[k] - n[k]) * 1e3 for i, n in zip(times["idle"], times["no-plugin"]))
        q = statistics.quantiles(diffs, n=4) if len(diffs) > 1 else [diffs[0]] * 3
        print("idle - no-plugin within a round, %s: median %+.1f ms, quartiles %+.1f / %+.1f ms"
              % (what, q[1], q[0], q[2]))
    print("importing rprofile.pytest_plugin after pytest: %.1f ms (median of 15)"
          % (import_cost(15) * 1e3))
    with tempfile.TemporaryDirectory(prefix="rprofile-suite-") as suite, \
            tempfile.TemporaryDirectory(prefix="rprofile-suite-") as small:
        write_suite(suite, opts.modules, opts.tests)
        write_suite(small, 1, opts.tests)
        for folder, n in ((suite, ntests), (small, opts.tests)):
            for m in ("no-plugin", "idle"):
                call_count(m, folder)  # a warm-up: pytest's pycs written
            counts = {m: call_count(m, folder) for m in ("no-plugin", "idle")}
            print("function calls of a whole run of %d tests: no-plugin %d, idle %d (%+d)"
                  % (n, counts["no-plugin"], counts["idle"],
                     counts["idle"] - counts["no-plugin"]))
    if "pytest-profiling" in modes:
        for k, what in ((0, "wall"), (1, "CPU")):
            added = {m: med[m][k] - base[k] for m in ("rprofile", "pytest-profiling")}
            print("%s time added: rprofile / pytest-profiling = %.2f"
                  % (what, added["rprofile"] / added["pytest-profiling"]))


if __name__ == "__main__":
    main()
