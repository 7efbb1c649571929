"""What the command line says about its output files and its own tables (issue 34): every file
written after the run is named on stderr; one that cannot be written is one line, exit status 1,
and is saved in the temporary directory instead; `--sample`'s bad options are usage errors as
the tracer's are; an attach shows its progress on a terminal; the sampled table counts samples
as samples; `--lines` follows the table; rprofile's own tables fit the terminal's width."""

import os
import pstats
import pty
import re
import subprocess
import sys

import pytest
from sampler_support import PROGRAMS, needs_sampler

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"),
                                    reason="no /dev/full to fail a write")

PROGRAM = """\
def work(n):
    return sum(i * i for i in range(n))


for _ in range(20):
    work(20000)
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return str(path)


def rprofile(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "rprofile", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=dict(os.environ, **(env or {})))


# -- a write that fails after the run ------------------------------------------------------------

TRACED = ["-o", "--html", "--pprof", "--timeline", "--speedscope"]
SAMPLED = ["-o", "--html", "--pprof", "--speedscope", "--collapsed", "--flamegraph"]


def check_saved_elsewhere(proc, tmp, option):
    """One line naming the failed path and the file the output went to instead; status 1."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "/dev/full" in line]
    assert len(lines) == 1, proc.stderr
    m = re.fullmatch(r"rprofile: cannot write /dev/full: (.+); saved in (\S+) instead", lines[0])
    assert m, lines[0]
    assert m.group(1) == os.strerror(28)  # ENOSPC, what /dev/full answers
    saved = m.group(2)
    assert os.path.dirname(saved) == str(tmp) and os.path.getsize(saved) > 0
    if option == "-o":
        assert any(name == "work" for _, _, name in pstats.Stats(saved).stats)
    return saved


@needs_dev_full
@pytest.mark.parametrize("option", TRACED)
def test_a_traced_output_that_cannot_be_written_is_saved_in_the_temporary_directory(
        option, program, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = rprofile(option, "/dev/full", program, env={"TMPDIR": str(tmp)})
    check_saved_elsewhere(proc, tmp, option)


@needs_sampler
@needs_dev_full
@pytest.mark.parametrize("option", SAMPLED)
def test_a_sampled_output_that_cannot_be_written_is_saved_in_the_temporary_directory(
        option, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = rprofile("--sample", option, "/dev/full", os.path.join(PROGRAMS, "hot_line.py"),
                    env={"TMPDIR": str(tmp)})
    saved = check_saved_elsewhere(proc, tmp, option)
    if option == "-o":
        assert any(name == "work" for _, _, name in pstats.Stats(saved).stats)


# -- every file written is named ---------------------------------------------------------------

def wrote(stderr):
    return [line[len("rprofile: wrote "):] for line in stderr.splitlines()
            if line.startswith("rprofile: wrote ")]


def test_the_tracer_names_each_file_it_wrote_but_the_stats_file(program, tmp_path):
    paths = {opt: tmp_path / name for opt, name in
             (("--html", "r.html"), ("--pprof", "p.pb.gz"), ("--timeline", "t.json"),
              ("--speedscope", "s.json"), ("-o", "o.prof"))}
    args = [x for opt, path in paths.items() for x in (opt, path.name)]
    proc = rprofile(*args, program, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # -o is cProfile's, which writes its file without a word.
    assert sorted(wrote(proc.stderr)) == sorted(str(p) for o, p in paths.items() if o != "-o")
    assert all(p.stat().st_size > 0 for p in paths.values())


@needs_sampler
def test_the_sampler_names_each_file_it_wrote(tmp_path):
    paths = {opt: tmp_path / name for opt, name in
             (("--html", "r.html"), ("--pprof", "p.pb.gz"), ("--collapsed", "c.txt"),
              ("--flamegraph", "f.svg"), ("--speedscope", "s.json"))}
    args = [x for opt, path in paths.items() for x in (opt, path.name)]
    proc = rprofile("--sample", *args, os.path.join(PROGRAMS, "hot_line.py"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(wrote(proc.stderr)) == sorted(str(p) for p in paths.values())


# -- --sample's usage errors -----------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--rate", "0"], ["--duration", "-1"], ["--limit", "0"],
                                  ["--threads"], []])
def test_sample_usage_errors_print_the_usage_line_as_the_tracers_do(args, program):
    traced = rprofile("--rate", "5", program)  # a tracer's usage error: --rate needs --sample
    assert traced.returncode == 2
    usage = traced.stderr.splitlines()[0]
    assert usage.startswith("Usage: rprofile ")
    sampled = rprofile("--sample", *args, *([program] if args else []))
    assert sampled.returncode == 2, sampled.stderr
    lines = sampled.stderr.splitlines()
    assert lines[0] == usage
    assert lines[-1].startswith("rprofile: error: ")


@needs_sampler
def test_a_process_that_cannot_be_sampled_is_one_line():
    proc = rprofile("--sample", "--pid", "999999999")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["rprofile: error: process 999999999: no such process"]


# -- progress while attached -------------------------------------------------------------------

def attach_for(duration, tmp_path, stderr):
    """Attaches `--duration` seconds to a running program, stderr to `stderr`; the result."""
    child = subprocess.Popen([sys.executable, os.path.join(PROGRAMS, "long_running.py"),
                              str(tmp_path / "log.txt"), "100000000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        return subprocess.run([sys.executable, "-m", "rprofile", "--sample", "--pid",
                               str(child.pid), "--duration", str(duration), "-o",
                               str(tmp_path / "out.prof")],
                              stdout=subprocess.PIPE, stderr=stderr, timeout=120)
    finally:
        child.kill()
        child.wait()


@needs_sampler
def test_an_attach_shows_its_progress_in_place_on_a_terminal(tmp_path):
    main, secondary = pty.openpty()
    try:
        proc = attach_for(1.5, tmp_path, secondary)
        os.close(secondary)
        secondary = None
        shown = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
        if secondary is not None:
            os.close(secondary)
    assert proc.returncode == 0
    text = shown.decode()
    updates = re.findall(r"\rrprofile: sampled (\d+\.\d) s at 1000 Hz \(wall mode\): "
                         r"(\d+) samples", text)
    assert len(updates) >= 2, text
    assert float(updates[-1][0]) > float(updates[0][0])
    # The samples read so far, counting up as the run goes on.
    assert 0 < int(updates[0][1]) < int(updates[-1][1]), text


@needs_sampler
def test_an_attach_shows_no_progress_into_a_file_or_pipe(tmp_path):
    proc = attach_for(0.6, tmp_path, subprocess.PIPE)
    assert proc.returncode == 0
    assert b"\r" not in proc.stderr and b"rprofile: sampled " not in proc.stderr


# -- the sampled table, --lines and the terminal's width ---------------------------------------

@needs_sampler
def test_the_sampled_table_counts_samples_and_the_lines_follow_it(tmp_path):
    proc = rprofile("--sample", "--lines", os.path.join(PROGRAMS, "hot_line.py"),
                    env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # The table, worded as samples: no calls, no per-call quotient of a sample.
    assert "function calls" not in out and "persample" not in out
    m = re.search(r"^ +(\d+) samples in (\d+\.\d{3}) seconds$", out, re.M)
    assert m, out
    title = " nsamples  sample%  tottime   cumul%  cumtime filename:lineno(function)"
    assert title in out.splitlines()
    row = next(line for line in out.splitlines() if line.endswith("hot_line.py:5(work)"))
    nsamples, sample_pct, _, cumul_pct, _ = row.split()[:5]
    on_stack, running = map(int, nsamples.split("/")) if "/" in nsamples else [int(nsamples)] * 2
    assert float(cumul_pct) == pytest.approx(100 * on_stack / int(m.group(1)), abs=0.051)
    assert float(sample_pct) == pytest.approx(100 * running / int(m.group(1)), abs=0.051)
    # --lines adds the lines under the table.
    assert out.index(title) < out.index("times in seconds")
    lines_table = out[out.index("times in seconds"):].splitlines()[1:]
    assert lines_table and all(len(line) <= 80 for line in lines_table), lines_table
    # No room for whole paths in 80 columns: the directories go, as strip_dirs has them.
    assert any(re.search(r"  hot_line\.py:\d+\(work\)$", line) for line in lines_table)
    assert PROGRAMS not in "\n".join(lines_table)


@needs_sampler
def test_the_lines_keep_whole_paths_where_they_fit():
    proc = rprofile("--sample", "--lines", os.path.join(PROGRAMS, "hot_line.py"),
                    env={"COLUMNS": "300"})
    assert proc.returncode == 0, proc.stderr
    assert os.path.join(PROGRAMS, "hot_line.py") + ":" in proc.stdout


def test_the_compare_table_fits_the_terminal(tmp_path):
    import rprofile as rp

    files = []
    for name, rounds in (("before", 3), ("after", 1)):
        prof = rp.Profile()
        prof.enable()
        for _ in range(rounds):
            sorted(range(30000), key=lambda x: -x)
        prof.disable()
        files.append(tmp_path / ("%s.prof" % name))
        prof.dump_stats(str(files[-1]))
    for width in (80, 100):
        proc = subprocess.run([sys.executable, "-m", "rprofile.stats", "--compare", *files],
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, COLUMNS=str(width)))
        assert proc.returncode == 0, proc.stderr
        table = proc.stdout.splitlines()[1:]  # below the sentence naming the files
        assert all(len(line) <= width for line in table), proc.stdout
        assert any("<lambda>" in line for line in table)
        assert "tottime" in proc.stdout and "change" in proc.stdout
