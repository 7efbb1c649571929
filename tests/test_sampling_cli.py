"""`python -m rprofile.sampling run|attach`: Python 3.15's `profiling.sampling` command line on
rprofile's sampler: its subcommands, -i/-d/-a/--mode, and the output formats with -o."""

import os
import pstats
import subprocess
import sys

import pytest

from sampler_support import PROGRAMS, collapsed, needs_sampler

pytestmark = needs_sampler


def _sampling(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "rprofile.sampling", *args],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_run_prints_the_sampled_table_sorted_by_samples():
    proc = _sampling("run", "-i", "1000", os.path.join(PROGRAMS, "sleep_and_burn.py"))
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Sampled ")
    header = next(n for n, line in enumerate(lines) if "nsamples" in line)
    rows = [line.split()[-1] for line in lines[header + 1:] if line.strip()]
    # --sort nsamples (the default): the functions by their own samples, most first.
    assert {rows[0], rows[1]} == {"sleep_and_burn.py:5(sleeper)", "sleep_and_burn.py:9(burner)"}
    assert "Ordered by: primitive call count" in proc.stdout


def test_only_the_main_thread_unless_all_threads(tmp_path):
    program = os.path.join(PROGRAMS, "four_threads.py")
    for flag, expected in (([], {"MainThread"}),
                           (["-a"], {"MainThread", "worker-alpha", "worker-beta",
                                     "worker-gamma", "worker-delta"})):
        out = tmp_path / ("all.txt" if flag else "main.txt")
        _sampling("run", *flag, "--collapsed", "-o", str(out), program)
        assert {t for t, _, _ in collapsed(str(out))} == expected


def test_pstats_output_and_duration(tmp_path):
    out = tmp_path / "p.pstats"
    child = subprocess.Popen([sys.executable, os.path.join(PROGRAMS, "long_running.py"),
                              str(tmp_path / "log.txt"), "10000000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        proc = _sampling("attach", "-d", "0.5", "-o", str(out), str(child.pid))
        assert child.poll() is None
        names = {name for _, _, name in pstats.Stats(str(out)).stats}
        assert "step" in names
        assert "for 0.5 s" in proc.stderr
    finally:
        child.kill()
        child.wait()


def test_flamegraph_with_its_default_name(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rprofile.sampling", "run", "--flamegraph",
                           os.path.join(PROGRAMS, "sleep_and_burn.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [svg] = [p for p in os.listdir(tmp_path) if p.startswith("flamegraph.")]
    assert svg.endswith(".svg") and "burner" in (tmp_path / svg).read_text()
    assert proc.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["attach", "999999999"], "no such process"),
    (["run", "missing.py"], "can't open file"),
    (["run", "-i", "0", "x.py"], "--interval must be"),
    (["run", "--collapsed", "--sort", "tottime", "x.py"], "go with --pstats only"),
])
def test_bad_input(args, message):
    proc = _sampling(*args, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
