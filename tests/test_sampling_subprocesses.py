"""The sampler following a program's child processes (`--sample --subprocesses`,
`Sampler(subprocesses=True)`): multiprocessing workers of every start method and
concurrent.futures' pool, `subprocess` running Python (directly or through a shell), os.fork()
children, found from outside while they start; each process's samples in its own file next to
-o, their merge in -o; a killed child ends only its own samples; the program's output and exit
status are its own; attaching finds workers already running."""

import glob
import io
import json
import os
import pickle
import subprocess
import sys

import pytest

from rprofile.children import files as _processes
from rprofile.sampling import children as _sampled_processes
from rprofile.sampling import SampledProcess, Sampler
from sampler_support import (attach_and_go, needs_sampler, run_rprofile, sampled_program,
                             samples_by_function)

pytestmark = needs_sampler


def _process_files(out):
    """{pid: {function name: (direct, cumulative samples)}} from the folder next to `out`."""
    files = {}
    for path in glob.glob(os.path.join(_sampled_processes.folder_for(out), "*.prof")):
        pid = int(os.path.basename(path).split("-")[0].split("_")[0])
        files[pid] = samples_by_function(path)
    return files


def _last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def _rounds(summary):
    """Reads of the whole family from the summary line ("Sampled X of Y ticks ... N
    processes"): X counts a read of each process."""
    words = summary.split()
    return int(words[1]) / int(words[words.index("processes,") - 1])


def _check_share(sampled, measured, reads):
    """`sampled` is `measured` within the error of a share estimated from `reads` samples
    (four standard deviations, and 0.02 for the time a worker runs before it is found): on a
    busy machine the sampler gets few reads, and the workers' states at one read are alike."""
    error = 4 * (measured * (1 - measured) / reads) ** 0.5 + 0.02
    assert abs(sampled - measured) < error, (sampled, measured, reads)


@pytest.mark.parametrize("method,kind", [("fork", "pool"), ("spawn", "pool"),
                                         ("forkserver", "pool"), ("spawn", "executor")])
def test_pool_workers_are_sampled_with_the_shares_they_measured(tmp_path, method, kind):
    out = str(tmp_path / "out.prof")
    proc = run_rprofile("--sample", "--subprocesses", "-o", out,
                     sampled_program("pool_burn.py"), method, kind)
    spent = _last_json(proc.stdout)
    files = _process_files(out)
    for worker in spent["workers"]:
        assert files[worker]["heavy"][1] > 0, (worker, sorted(files), proc.stderr)
    merged = samples_by_function(out)
    assert merged["parent_work"][1] > 0
    measured = spent["heavy"] / (spent["heavy"] + spent["light"])
    sampled = merged["heavy"][1] / (merged["heavy"][1] + merged["light"][1])
    _check_share(sampled, measured, _rounds(proc.stderr.splitlines()[0]))
    # The merge is the sum of the processes' files.
    assert merged["heavy"][1] == sum(f.get("heavy", (0, 0))[1] for f in files.values())
    lines = proc.stderr.splitlines()
    assert any("Processes (" in line and out + ".processes" in line for line in lines)
    for worker in spent["workers"]:
        assert any(line.split()[:1] == [str(worker)] for line in lines), proc.stderr
    # The folder is the tracer's: its listing finds every worker saved.
    saved = {info.pid for info in _processes.collect(_sampled_processes.folder_for(out))
             if info.status == "saved"}
    assert set(spent["workers"]) <= saved
    if method == "forkserver":
        assert "multiprocessing's forkserver, not the program's work" in proc.stderr


@pytest.mark.parametrize("how", ["direct", "shell"])
def test_a_python_child_run_by_subprocess_is_sampled(tmp_path, how):
    out = str(tmp_path / "out.prof")
    proc = run_rprofile("--sample", "--subprocesses", "-o", out, sampled_program("run_child.py"), how,
                     check=False)
    # The program's own output and exit status.
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.splitlines() == ["child done", "parent done"]
    merged = samples_by_function(out)
    assert merged["child_work"][1] > 0 and merged["parent_work"][1] > 0
    files = _process_files(out)
    (child,) = [pid for pid, f in files.items() if "child_work" in f]
    assert "parent_work" not in files[child]
    if how == "shell":
        # The shell is seen, said not to be Python, and its child is read.
        assert "not read: process" in proc.stderr and "is not Python" in proc.stderr
        (shell,) = [line.split()[0] for line in proc.stderr.splitlines()
                    if "is not Python" in line]
        assert any(line.split()[:2] == [str(child), shell] for line in proc.stderr.splitlines())


def test_without_subprocesses_a_child_is_not_sampled(tmp_path):
    out = str(tmp_path / "out.prof")
    proc = run_rprofile("--sample", "-o", out, sampled_program("run_child.py"), "direct", check=False)
    assert proc.returncode == 3
    merged = samples_by_function(out)
    assert "child_work" not in merged and merged["parent_work"][1] > 0
    assert not os.path.exists(_sampled_processes.folder_for(out))


def test_a_killed_child_ends_only_its_own_samples(tmp_path):
    out = str(tmp_path / "out.prof")
    proc = run_rprofile("--sample", "--subprocesses", "-o", out, sampled_program("fork_kill.py"))
    pids = _last_json(proc.stdout)
    assert os.WTERMSIG(pids["statuses"][0]) == 9 and pids["statuses"][1] == 0
    files = _process_files(out)
    # Read from outside, the killed child's samples up to its death are kept; the other
    # child's run to their end.
    assert files[pids["killed"]]["victim"][1] > 0
    assert files[pids["survived"]]["survivor"][1] > 0
    assert "victim" not in files[pids["survived"]]
    merged = samples_by_function(out)
    assert merged["victim"][1] == files[pids["killed"]]["victim"][1]


def test_attach_finds_the_workers_already_running(tmp_path):
    child = subprocess.Popen([sys.executable, sampled_program("pool_wait.py")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        out = str(tmp_path / "out.prof")
        # The sampler ends once the program and its workers exited.
        spent, stderr = attach_and_go(child, "--subprocesses", "-o", out)
        files = _process_files(out)
        for worker in spent["workers"]:
            assert files[worker]["heavy"][1] > 0, (worker, stderr)
        assert set(spent["started"]) <= set(files)
    finally:
        child.kill()
        child.wait()


def test_the_sampler_in_process_follows_the_children_it_starts():
    with Sampler(rate=1000, subprocesses=True) as s:
        subprocess.run([sys.executable, sampled_program("child_burn.py")], check=True,
                       capture_output=True)
    processes = s.processes()
    assert processes[0].pid == os.getpid() and processes[0].sampler is not None
    (child,) = [p for p in processes[1:] if p.argv[1:] == [sampled_program("child_burn.py")]]
    assert child.ppid == os.getpid() and child.end == "exited" and child.samples > 0
    assert child.exit_status in (None, 0)
    names = {k[2] for k in child.sampler.stats().stats}
    assert "child_work" in names
    assert "child_work" in {k[2] for k in s.stats().stats}
    assert "child_work" not in {k[2] for k in processes[0].sampler.stats().stats}
    printed = io.StringIO()
    s.print_processes(file=printed)
    assert str(child.pid) in printed.getvalue()
    assert s.counts[1] >= child.sampler.counts[1]
    # Pickled, the merge keeps each thread's process (the list of processes is not kept).
    back = pickle.loads(pickle.dumps(s))
    assert back.stats().stats == s.stats().stats
    table = s._samples().threads_table(200)
    assert "(pid %d)" % child.pid in table
    assert back._samples().threads_table(200) == table


def test_the_summary_says_how_each_process_ended_or_why_it_was_not_read():
    class Read:
        rate = 1000
        threads = [(1, 1, "MainThread", 1500, 1500, 0, 0)]

    rows = [SampledProcess(10, 1, ["python", "main.py"], "stopped", None, Read()),
            SampledProcess(11, 10, ["python", "main.py"], "exited", 9, Read()),
            SampledProcess(12, 10, ["python", "-m", "work"], "exited", 3 << 8, Read()),
            SampledProcess(13, 10, ["/bin/sh", "-c", "x"], "process 13 is not Python", None,
                           None)]
    printed = io.StringIO()
    _sampled_processes.print_summary(rows, "out.prof.processes", file=printed)
    lines = printed.getvalue().splitlines()
    assert lines[0] == "   Processes (4; each one's stats in out.prof.processes):"
    assert lines[2].split() == ["10", "1", "main.py", "1500", "1.500"]
    assert lines[3].endswith("1.500  killed by SIGKILL")
    assert lines[4].endswith("exit status 3") and "-m work" in lines[4]
    assert lines[5].split()[:5] == ["13", "10", "sh", "-c", "x"]
    assert lines[5].endswith("-  not read: process 13 is not Python")


def test_a_folder_that_cannot_be_made_is_a_usage_error(tmp_path):
    out = tmp_path / "out.prof"
    (tmp_path / "out.prof.processes").write_text("a file")
    proc = run_rprofile("--sample", "--subprocesses", "-o", str(out), sampled_program("child_burn.py"),
                     check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("Usage: rprofile ")
    assert lines[-1] == (
        "rprofile: error: cannot write the processes' files in %s.processes: not a directory"
        % out)
    assert proc.stdout == ""


def test_the_315_command_line_writes_each_child_to_a_file_named_with_its_pid(tmp_path):
    out = tmp_path / "out.pstats"
    proc = subprocess.run([sys.executable, "-m", "rprofile.sampling", "run", "--subprocesses",
                           "-i", "1000", "-o", str(out), sampled_program("run_child.py"), "direct"],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 3, proc.stderr  # the program's
    root = samples_by_function(str(out))
    assert "parent_work" in root and "child_work" not in root
    files = glob.glob(str(tmp_path / "out_*.pstats"))
    assert len(files) == 1, (files, proc.stderr)
    assert "child_work" in samples_by_function(files[0])
    # The table printed, the child's stats in profile.PID.pstats beside.
    proc = subprocess.run([sys.executable, "-m", "rprofile.sampling", "run", "--subprocesses",
                           "-i", "1000", sampled_program("run_child.py"), "direct"],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert "parent_work" in proc.stdout and "child_work" not in proc.stdout
    files = glob.glob(str(tmp_path / "profile.*.pstats"))
    assert len(files) == 1, (files, proc.stdout, proc.stderr)
    assert "child_work" in samples_by_function(files[0])
