"""`python -m rprofile --subprocesses` and `Profile(subprocesses=...)`: every Python child the
program starts is profiled and saves its own file (issue 28).

Each test runs a program of tests/subprocess_programs/ under the command line, and the same
program without rprofile where its own output and exit status must not change. Counts are the
programs' own (a function mapped over 1,000 items is called 1,000 times, once per item, in
whichever process); which process ran what is read from the pids the programs write down.
"""

import json
import os
import pstats
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rprofile.children import files as _processes

PROGRAMS = Path(__file__).parent / "subprocess_programs"
START_METHODS = ["fork", "spawn", "forkserver"]
PY312 = sys.version_info >= (3, 12)

if not sys.platform.startswith("linux"):
    pytest.skip("child processes are followed on Linux", allow_module_level=True)


class Done:
    """A finished run: pid, returncode, stdout, stderr."""

    def __init__(self, proc, stdout, stderr):
        self.pid, self.returncode = proc.pid, proc.returncode
        self.stdout, self.stderr = stdout, stderr


def run(args, cwd, profiled=True, env=None, timeout=180):
    """`python [-m rprofile --subprocesses] args...` in cwd (text output)."""
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("RPROFILE_SUBPROCESSES", None)
    prefix = ["-m", "rprofile", "--subprocesses"] if profiled else []
    with subprocess.Popen([sys.executable, *prefix, *map(str, args)], cwd=cwd, env=full_env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    return Done(proc, stdout, stderr)


def program_output(stdout):
    """What the program printed: the command line's own lines come after it."""
    return stdout.split("   Processes (")[0]


def records(folder):
    """{pid: record} of the folder's start markers."""
    out = {}
    for name in os.listdir(folder):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                rec = json.load(f)
            out[rec["pid"]] = rec
    return out


def calls(stats, name):
    """Calls of the functions called `name` in a pstats dict."""
    return sum(v[1] for (_, _, fn), v in stats.items() if fn == name)


def file_stats(folder, rec):
    return pstats.Stats(os.path.join(folder, rec["stats"])).stats


def summary_line(stdout, pid):
    for line in stdout.split("   Processes (", 1)[1].splitlines():
        if line.split()[:1] == [str(pid)]:
            return line
    raise AssertionError("no line for process %d in:\n%s" % (pid, stdout))


# ---------------------------------------------------------------------------------------------
# Pools: every item's call is in the merge once, every worker has its file.

@pytest.mark.parametrize("method", START_METHODS)
@pytest.mark.parametrize("program, function", [("pool_map.py", "square"),
                                               ("executor_map.py", "cube")])
def test_pool_work_is_counted_once_and_each_worker_saves(tmp_path, method, program, function):
    out = tmp_path / "out.prof"
    pids_file = tmp_path / "pids"
    done = run(["-o", out, PROGRAMS / program, method, pids_file], tmp_path)
    assert done.returncode == 0, done.stderr
    plain = run([PROGRAMS / program, method, tmp_path / "plain-pids"], tmp_path, profiled=False)
    assert program_output(done.stdout) == plain.stdout
    assert done.stderr == plain.stderr == ""

    merged = pstats.Stats(str(out)).stats
    assert calls(merged, function) == 1000
    folder = str(out) + ".processes"
    recs = records(folder)
    workers = [int(p) for p in pids_file.read_text().split()]
    if program == "pool_map.py":
        assert len(workers) == 4  # the barrier made all four take part
    per_worker = []
    for pid in workers:
        rec = recs[pid]
        assert rec["status"] == "saved", rec
        assert rec["ppid"] != pid
        assert rec["stats"].startswith("%d-" % pid) and rec["stats"].endswith(".prof")
        assert os.path.exists(os.path.join(folder, rec["stats"]))
        per_worker.append(calls(file_stats(folder, rec), function))
    assert all(n > 0 for n in per_worker) and sum(per_worker) == 1000
    # The command line's own file has none of the workers' calls (fork children start
    # cleared), and its line says it is this process.
    assert calls(file_stats(folder, recs[done.pid]), function) == 0
    assert summary_line(done.stdout, done.pid).endswith("this process")
    for pid in workers:
        line = summary_line(done.stdout, pid)
        assert "PoolWorker" in line or "Process-" in line, line


# ---------------------------------------------------------------------------------------------
# subprocess children and grandchildren, os.fork(), exit statuses.

def test_subprocess_children_and_grandchildren_are_profiled(tmp_path):
    out = tmp_path / "out.prof"
    done = run(["-o", out, PROGRAMS / "run_child.py"], tmp_path)
    plain = run([PROGRAMS / "run_child.py"], tmp_path, profiled=False)
    assert (done.returncode, plain.returncode) == (3, 3)
    assert program_output(done.stdout) == plain.stdout
    assert "child exit status 5" in plain.stdout and "no site here" in plain.stdout
    assert done.stderr == plain.stderr == ""

    folder = str(out) + ".processes"
    recs = records(folder)
    child = [r for r in recs.values() if r["ppid"] == done.pid and "child.py" in r["command"]]
    assert len(child) == 1, recs
    child = child[0]
    grandchild = [r for r in recs.values() if r["ppid"] == child["pid"]]
    assert len(grandchild) == 1, recs
    grandchild = grandchild[0]
    assert child["command"] == "child.py 7 grandchild 5"
    assert grandchild["stats"] == "%d-child.py.prof" % grandchild["pid"]
    assert calls(file_stats(folder, child), "child_function") == 7
    assert calls(file_stats(folder, grandchild), "child_function") == 2
    assert calls(pstats.Stats(str(out)).stats, "child_function") == 9
    assert calls(pstats.Stats(str(out)).stats, "parent_function") == 1
    # The child started with -S (no site) ran unprofiled: it is in no record.
    assert len(recs) == 3
    for rec in (child, grandchild):
        assert rec["ended"] == "exit"
        assert summary_line(done.stdout, rec["pid"]).split()[2] == "child.py"


EXECS = textwrap.dedent('''
    import subprocess, sys
    print("status", subprocess.run([sys.executable, sys.argv[1]]).returncode)
''')


def test_a_child_that_execs_saves_first_and_the_new_program_has_its_own_file(tmp_path):
    (tmp_path / "parent.py").write_text(EXECS)
    out = tmp_path / "out.prof"
    done = run(["-o", out, "parent.py", PROGRAMS / "execs.py"], tmp_path)
    plain = run(["parent.py", PROGRAMS / "execs.py"], tmp_path, profiled=False)
    assert done.returncode == plain.returncode == 0, done.stderr
    assert plain.stdout == "exec failed\nafter exec\nstatus 0\n"
    assert program_output(done.stdout) == plain.stdout
    folder = str(out) + ".processes"
    with_pid = {}
    for name in os.listdir(folder):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                rec = json.load(f)
            if rec["ppid"] == done.pid:
                with_pid[name[:-len(".json")]] = rec
    pid = min(int(key.partition("_")[0]) for key in with_pid)
    assert sorted(with_pid) == [str(pid), "%d_2" % pid]
    before, after = with_pid[str(pid)], with_pid["%d_2" % pid]
    assert before["ended"] == "exec" and after["ended"] == "exit"
    assert after["command"].startswith("-c def after_exec()")
    # The failed exec's save was replaced by the whole run's, up to the exec that worked.
    assert calls(file_stats(folder, before), "before_exec") == 2
    assert calls(file_stats(folder, after), "after_exec") == 1
    assert "saved at exec" in summary_line(done.stdout, pid)


def test_fork_children_hold_their_own_work_only(tmp_path):
    out = tmp_path / "out.prof"
    done = run(["-o", out, PROGRAMS / "forks.py"], tmp_path)
    plain = run([PROGRAMS / "forks.py"], tmp_path, profiled=False)
    assert done.returncode == plain.returncode == 0
    assert "fork exit statuses [4, 6]" in plain.stdout
    assert program_output(done.stdout) == plain.stdout

    folder = str(out) + ".processes"
    recs = records(folder)
    kids = sorted((r for r in recs.values() if r["ppid"] == done.pid), key=lambda r: r["pid"])
    assert len(kids) == 2, recs
    first, second = kids
    assert first["ended"] == "os._exit" and second["ended"] == "exit"
    assert first["command"].startswith("fork of %d (forks.py" % done.pid)
    first_stats, second_stats = file_stats(folder, first), file_stats(folder, second)
    assert calls(first_stats, "forked_work") == 11 and calls(second_stats, "forked_work") == 1
    # What the parent did before the fork stays the parent's.
    assert calls(first_stats, "parent_work") == calls(second_stats, "parent_work") == 0
    merged = pstats.Stats(str(out)).stats
    assert calls(merged, "forked_work") == 12 and calls(merged, "parent_work") == 5
    assert "saved at os._exit" in summary_line(done.stdout, first["pid"])


def test_a_killed_child_loses_only_its_own_file(tmp_path):
    out = tmp_path / "out.prof"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    done = run(["-o", out, PROGRAMS / "killed_child.py", tmp_path / "a"], tmp_path)
    plain = run([PROGRAMS / "killed_child.py", tmp_path / "b"], tmp_path, profiled=False)
    assert done.returncode == plain.returncode == 0
    assert program_output(done.stdout) == plain.stdout
    assert "killed child status -9" in plain.stdout
    assert "multiprocessing child exit code -9" in plain.stdout
    assert "terminated child exit code -15" in plain.stdout

    folder = str(out) + ".processes"
    recs = records(folder)
    killed = [int(p) for p in (tmp_path / "a" / "killed").read_text().split()]
    for pid in killed:
        assert recs[pid]["status"] == "started" and "stats" not in recs[pid]
        assert not [n for n in os.listdir(folder) if n.startswith("%d-" % pid)]
        assert "ended without saving its profile" in summary_line(done.stdout, pid)
    saved = [r for r in recs.values() if r["pid"] not in killed]
    assert len(saved) == 3  # the command line's, the finished sleeper's, the terminated one's
    assert all(r["status"] == "saved" for r in saved)
    terminated = [r for r in saved if r["ended"] == "signal SIGTERM"]
    assert len(terminated) == 1 and terminated[0]["command"].startswith("ForkProcess-")
    assert calls(file_stats(folder, terminated[0]), "spin") == 1
    sleepers = [r for r in saved if r["command"].startswith("sleeper.py ")]
    assert len(sleepers) == 1 and calls(file_stats(folder, sleepers[0]), "sleeping") == 1
    assert calls(pstats.Stats(str(out)).stats, "sleeping") == 1


LOST_SIGTERM = textwrap.dedent('''
    import subprocess, sys
    done = subprocess.run([sys.executable, sys.argv[1]], timeout=60)
    print("child status", done.returncode)
''')


def test_a_sigterm_the_main_thread_missed_still_saves_and_ends_the_child(tmp_path):
    (tmp_path / "parent.py").write_text(LOST_SIGTERM)
    out = tmp_path / "out.prof"
    # (--threads: the waiting thread's calls on a stack of their own, as the other's end.)
    done = run(["--threads", "-o", out, "parent.py", PROGRAMS / "lost_sigterm.py"], tmp_path)
    plain = run(["parent.py", PROGRAMS / "lost_sigterm.py"], tmp_path, profiled=False)
    assert done.returncode == plain.returncode == 0, done.stderr
    assert plain.stdout == "child status -15\n"
    assert program_output(done.stdout) == plain.stdout
    recs = records(str(out) + ".processes")
    child = [r for r in recs.values() if r["ppid"] == done.pid]
    assert len(child) == 1 and child[0]["ended"] == "signal SIGTERM", recs
    assert calls(file_stats(str(out) + ".processes", child[0]), "waiting") == 1


def test_the_parent_does_not_wait_for_a_detached_child(tmp_path):
    pid_file = tmp_path / "sleeper.pid"
    done = run([PROGRAMS / "detached.py", pid_file, 600], tmp_path)
    pid = int(pid_file.read_text())
    try:
        assert done.returncode == 0, done.stderr
        # Still there when the command line has ended and printed its lines.
        with open("/proc/%d/stat" % pid) as f:
            assert f.read().rpartition(")")[2].split()[0] in "RSD"
        assert summary_line(done.stdout, pid).endswith("still running (not waited for)")
        assert "started the sleeper" in program_output(done.stdout)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_without_o_the_table_is_the_merge_and_no_folder_is_left(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = run([PROGRAMS / "forks.py"], tmp_path, env={"TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr
    table, processes = done.stdout.split("   Processes (")
    assert processes.startswith("3):")  # no folder named: none is kept
    rows = {line.split()[-1].partition("(")[2]: line.split()[0] for line in table.splitlines()
            if line.strip().endswith(("(forked_work)", "(parent_work)"))}
    assert rows == {"forked_work)": "12", "parent_work)": "5"}
    assert os.listdir(scratch) == []


# ---------------------------------------------------------------------------------------------
# The API: Profile(subprocesses=...).

API = textwrap.dedent('''
    import os, subprocess, sys
    import rprofile

    def work(n):
        return n

    folder = sys.argv[1] if len(sys.argv) > 1 else True
    prof = rprofile.Profile(subprocesses=folder)
    with prof:
        pid = os.fork()
        if pid == 0:
            for i in range(4):
                work(i)
            os._exit(0)
        os.waitpid(pid, 0)
        subprocess.run([sys.executable, "-c", "print('child ran')"], check=True)
        work(0)
    print("folder kept", os.path.isdir(prof.processes_dir))
    listed = prof.processes()
    print("processes", [(p.pid == os.getpid(), p.status) for p in listed])
    prof.create_stats()
    print("work calls", sum(v[1] for k, v in prof.stats.items() if k[2] == "work"))
    print("environment", "RPROFILE_SUBPROCESSES" in os.environ)
    with open("folder.txt", "w") as f:
        f.write(prof.processes_dir)
    prof.print_stats()
''')


@pytest.mark.parametrize("given", [False, True])
def test_profile_subprocesses_api(tmp_path, given):
    (tmp_path / "api.py").write_text(API)
    args = ["api.py"] + (["kept"] if given else [])
    done = run(args, tmp_path, profiled=False)
    assert done.returncode == 0, done.stderr
    assert "child ran" in done.stdout
    assert "folder kept True" in done.stdout
    assert "processes [(True, 'saved'), (False, 'saved'), (False, 'saved')]" in done.stdout
    assert "work calls 5" in done.stdout  # 4 in the fork, 1 here
    assert "environment False" in done.stdout  # restored at disable()
    assert "   Processes (3):" in done.stdout
    folder = (tmp_path / "folder.txt").read_text()
    # A temporary folder goes when the process exits; one that was named stays.
    assert os.path.isdir(folder) == given
    if given:
        assert folder == str(tmp_path / "kept")
        assert len([n for n in os.listdir(folder) if n.endswith(".prof")]) == 2


def test_profile_subprocesses_arguments():
    import rprofile

    with pytest.raises(TypeError, match="subprocesses must be True, False or a folder"):
        rprofile.Profile(subprocesses=3)
    with pytest.raises(ValueError, match="Python timer cannot be carried"):
        rprofile.Profile(time.perf_counter, subprocesses=True)
    prof = rprofile.Profile(subprocesses=False)
    assert prof.subprocesses is False and prof.processes() is None
    assert prof.processes_dir is None


# ---------------------------------------------------------------------------------------------
# Options carried to children; usage errors.

OPTIONS = textwrap.dedent('''
    import subprocess, sys
    code = ("from rprofile.children import traced as t; p = t._session.profile; "
            "print(p.clock, p.threads, p.async_aware, p._options()['memory'])")
    subprocess.run([sys.executable, "-c", code], check=True)
''')


def test_children_get_the_same_options(tmp_path):
    (tmp_path / "options.py").write_text(OPTIONS)
    done = run(["--threads", "--clock", "thread_cpu", "--async", "options.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("thread_cpu True True False\n")
    done = run(["--memory", "options.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wall False False True\n")


def test_usage_errors(tmp_path):
    (tmp_path / "out.prof.processes").write_text("in the way")
    done = run(["-o", tmp_path / "out.prof", PROGRAMS / "forks.py"], tmp_path)
    assert done.returncode == 2
    assert "cannot write the processes' files in" in done.stderr


# ---------------------------------------------------------------------------------------------
# The per-process folder (rprofile.children.files).

@pytest.mark.parametrize("argv, expected", [
    (["py", "-X", "dev", "child.py", "a"], ("child.py a", "child.py")),
    (["py", "-m", "pkg.cli", "x"], ("-m pkg.cli x", "pkg.cli")),
    (["py", "-mpkg"], ("-m pkg", "pkg")),
    (["py", "-c", "print(1)\nprint(2)"], ("-c print(1) print(2)", "python-c")),
    (["py", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(pipe_handle=7)",
      "--multiprocessing-fork"], ("multiprocessing child (spawn)", "python-c")),
    (["py", "-W", "error", "-Bu", "/a/b/c d.py", "x"], ("c d.py x", "c d.py")),
    (["py", "-"], ("-", "python-stdin")),
    (["py"], ("(interactive)", "python")),
])
def test_describe(argv, expected):
    assert _processes.describe(argv) == expected


def test_folder_keys_saves_and_cleanup(tmp_path):
    folder = tmp_path / "f"
    _processes.prepare_folder(folder)
    me = _processes.register(folder, label="a b")
    again = _processes.register(folder)  # the same pid once more (an exec): a key of its own
    assert (me.key, again.key) == (str(os.getpid()), "%d_2" % os.getpid())
    listed = _processes.collect(folder)
    assert [p.status for p in listed] == ["running", "running"]  # this process runs

    def write_profile(path):
        import cProfile

        prof = cProfile.Profile()
        prof.runcall(sum, [1])
        prof.dump_stats(path)

    path = me.save(write_profile, ended="exit")
    assert os.path.basename(path) == "%d-a_b.prof" % os.getpid()
    listed = {p.key: p for p in _processes.collect(folder)}
    assert listed[me.key].status == "saved" and listed[me.key].calls == 2
    merged = _processes.merge(listed.values())
    assert merged.total_calls == 2
    (folder / "notes.txt").write_text("mine")
    (folder / "123").mkdir()
    _processes.prepare_folder(folder)
    assert sorted(os.listdir(folder)) == ["123", "notes.txt"]
    with pytest.raises(NotADirectoryError):
        _processes.prepare_folder(folder / "notes.txt")


def test_a_module_run_with_m_spawns_workers_that_find_it(tmp_path):
    # Under -m, spawn children import the program by its module name (runpy's __main__).
    out = tmp_path / "out.prof"
    done = run(["-o", out, "-m", "pool_map", "spawn", tmp_path / "pids"], PROGRAMS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sum 332833500\n")
    assert calls(pstats.Stats(str(out)).stats, "square") == 1000
    recs = records(str(out) + ".processes")
    assert recs[done.pid]["command"].startswith("-m pool_map spawn")
    assert recs[done.pid]["stats"] == "%d-pool_map.prof" % done.pid


MEMORY = textwrap.dedent('''
    import subprocess, sys

    def keep_in_parent():
        return bytearray(10000)

    kept = keep_in_parent()
    subprocess.run([sys.executable, "-I", "-c",
                    "def keep_in_child():\\n    return bytearray(20000)\\n"
                    "kept = keep_in_child()"], check=True)
''')


def test_memory_of_children_is_added_up_and_isolated_children_are_followed(tmp_path):
    (tmp_path / "memory.py").write_text(MEMORY)
    done = run(["--memory", "memory.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("   Memory (")[1]
    net = {line.split()[-1].rpartition("(")[2]: int(line.split()[0])
           for line in table.splitlines()[2:] if "(keep_in_" in line}
    # The bytearray each kept (a child run with -I, isolated, is followed too).
    assert net["keep_in_parent)"] >= 10000 and net["keep_in_child)"] >= 20000
    assert "   Processes (2):" in done.stdout


TYPES = textwrap.dedent('''
    import subprocess, sys

    class Item:
        pass

    kept = [Item() for _ in range(3)]
    subprocess.run([sys.executable, "-c",
                    "class Item:\\n    pass\\n"
                    "kept = [Item() for _ in range(7)][:5]"], check=True)
''')


@pytest.mark.skipif(sys.version_info < (3, 13, 3), reason="types=True needs Python 3.13.3+")
def test_types_of_children_are_added_up(tmp_path):
    (tmp_path / "made.py").write_text(TYPES)
    done = run(["--types", "--types-json", "t.json", "made.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    item = [t for t in json.loads((tmp_path / "t.json").read_text())["types"]
            if t["name"] == "Item"]
    # Three kept by the parent; seven made by the child, five of them kept.
    assert [(t["created"], t["destroyed"], t["alive"]) for t in item] == [(10, 2, 8)]
    made = {(os.path.basename(f["file"]), f["function"]): (f["created"], f["alive"])
            for f in item[0]["functions"]}
    assert made == {("made.py", "<module>"): (3, 3), ("<string>", "<module>"): (7, 5)}
    assert sorted(s["alive"] for s in item[0]["stacks"]) == [3, 5]
    assert "   Processes (2):" in done.stdout
