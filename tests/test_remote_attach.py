"""`python -m rprofile --pid PID` without --sample: the exact profiler attached to a running
Python 3.14+ process through sys.remote_exec. The target (tests/attach_programs/target.py)
counts its own calls during the window, so the profile's counts are checked exactly; it reports
what the attach left behind, and runs on to its normal end. Each refusal is one line with exit
status 2, the target still running. On Python < 3.14 only the refusals are tested."""

import glob
import json
import marshal
import os
import pstats
import shutil
import signal
import subprocess
import sys

import pytest

TARGET = os.path.join(os.path.dirname(__file__), "attach_programs", "target.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = sys.version_info[:2]

needs_remote_exec = pytest.mark.skipif(HERE < (3, 14), reason="sys.remote_exec is 3.14+")


def _python(version):
    """An interpreter of `version` ("3.12"), as tools/test-all finds them (pyenv, PATH,
    tools/get-pythons' root); None when there is none."""
    found = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        found += sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin",
                                               "python")), reverse=True)
    found.append(shutil.which("python" + version))
    sid = os.environ.get("RPROFILE_SID_ROOT", os.path.join(ROOT, ".pythons", "sid"))
    found.append(os.path.join(sid, "usr", "bin", "python" + version))
    for path in found:
        if path and os.access(path, os.X_OK):
            return path
    return None


def _attacher(pid, *options, env=None):
    return subprocess.Popen([sys.executable, "-m", "rprofile", "--pid", str(pid), *options],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _rprofile(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "rprofile", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


class Target:
    """tests/attach_programs/target.py (or `command`) running, answering commands."""

    def __init__(self, *args, python=sys.executable, env=None, flags=(), prefix=()):
        self.proc = subprocess.Popen([*prefix, python, *flags, TARGET, *args],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        self.pid = self.proc.pid
        assert self.proc.stdout.readline().strip() == "ready", self.proc.stderr.read()

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, self.proc.stderr.read()
        return json.loads(answer)

    def finish(self):
        """Quits; the results of every burst, once it exited well with nothing on stderr."""
        results = self.ask("quit")["results"]
        assert self.proc.wait(timeout=30) == 0
        assert self.proc.stderr.read() == ""
        return results

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


def _profiling(attacher, pid):
    """Waits for the attacher's line saying the window is open."""
    line = attacher.stderr.readline()
    assert line.startswith("rprofile: profiling process %d" % pid), \
        line + attacher.stderr.read()


def _profiled(target, *options):
    """An attacher with `options`, once its window on `target` is open."""
    attacher = _attacher(target.pid, *options)
    _profiling(attacher, target.pid)
    return attacher


def _counted(path):
    """(primitive calls, calls) of target.py's `counted` in the stats file at `path`."""
    return _rows(pstats.Stats(str(path)).stats, "counted")[:2]


def _stop(attacher):
    """Ctrl-C: the attacher ends the window and writes; its stdout and stderr."""
    attacher.send_signal(signal.SIGINT)
    out, err = attacher.communicate(timeout=120)
    assert attacher.returncode == 0, err
    return out, err


def _rows(stats, name):
    """The (cc, nc, tt, ct, callers) of function `name` of target.py, or None."""
    for (path, _, func), row in stats.items():
        if func == name and os.path.basename(path) == "target.py":
            return row
    return None


def _caller_names(row):
    return {func: value[1] for (_, _, func), value in row[4].items()}


def _burst_results(n):
    # Per thread: sum of the first n odd numbers, plus the recursion's depth.
    return [["MainThread", n * n + 5], ["worker-1", n * n + 5], ["worker-2", n * n + 5]]


@needs_remote_exec
def test_counts_are_exact_on_every_thread_and_the_target_runs_on(tmp_path):
    with Target() as target:
        before = target.ask("check")
        assert before["tool"] is None
        out = tmp_path / "first.prof"
        attacher = _profiled(target, "-o", str(out), "--duration", "600")
        burst = target.ask("go 300")
        # The whole burst ran inside the window: the profiler held the slot before and after.
        assert burst["tool_before"] == burst["tool_after"] == "cProfile"
        _stop(attacher)  # Ctrl-C, long before the 600 s
        stats = pstats.Stats(str(out)).stats
        cc, nc, _, _, _ = _rows(stats, "counted")
        assert cc == nc == burst["calls"] == 3 * 300
        # Recursion counted per thread: one primitive call a burst, depth 5 below it.
        cc, nc, _, _, _ = _rows(stats, "recurse")
        assert (cc, nc) == (3, 3 * 6)
        assert _rows(stats, "burst")[:2] == (3, 3)
        assert _caller_names(_rows(stats, "counted")) == {"burst": 900}
        # The worker threads' own function (their loops began before the window: no caller).
        assert _rows(stats, "in_worker")[:2] == (2, 2)
        # Nothing of the attach itself is in the profile.
        assert not [f for f in stats if f[0] == "<string>"], list(stats)

        after = target.ask("check")
        assert after == before  # no tool, thread, sys.path change, atexit hook or module left

        # A second attach works the same, printing the table this time.
        attacher = _profiled(target, "-s", "ncalls")
        burst = target.ask("go 70")
        out, _ = _stop(attacher)
        assert "Ordered by: call count" in out
        row = [line for line in out.splitlines() if line.endswith("(counted)")]
        assert len(row) == 1 and row[0].split()[0] == str(burst["calls"]) == "210", out
        assert target.ask("check") == before
        assert target.finish() == [_burst_results(300), _burst_results(70)]


@needs_remote_exec
def test_ctrl_c_as_soon_as_the_window_opens_still_writes(tmp_path):
    # The line saying the window is open is printed where a Ctrl-C ends the window: one sent
    # the moment it is read gives a profile, not "interrupted, nothing written" (seen in CI).
    with Target() as target:
        before = target.ask("check")
        for n in range(3):
            out = tmp_path / ("at-once-%d.prof" % n)
            _stop(_profiled(target, "-o", str(out)))
            with open(out, "rb") as f:
                assert isinstance(marshal.load(f), dict)  # a profile, maybe of no call
            assert target.ask("check") == before
        assert target.finish() == []


@pytest.mark.parametrize("with_file", [False, True])
def test_a_window_in_which_no_code_ran_is_an_empty_report(tmp_path, capsys, with_file):
    # Seen in CI: a Ctrl-C at once closed the window before any profiled thread ran Python code.
    # The file holds no call, which pstats refuses to load; the attacher prints an empty table
    # (or copies the file for -o) and says why, rather than failing.
    from types import SimpleNamespace

    from rprofile._remote_profile import Attach

    outfile = tmp_path / "copy.prof" if with_file else None
    attach = Attach(os.getpid(), SimpleNamespace(outfile=outfile and str(outfile), html=None,
                                                 pprof=None, sort=-1))
    attach.out_path = str(tmp_path / "profile.prof")
    with open(attach.out_path, "wb") as f:
        marshal.dump({}, f)
    assert attach._outputs()
    out, err = capsys.readouterr()
    assert "ran no Python code on its profiled threads" in err
    if with_file:
        with open(outfile, "rb") as f:
            assert marshal.load(f) == {}
    else:
        assert "0 function calls in 0.000 seconds" in out
    # A file cut short is still an error.
    with open(attach.out_path, "wb") as f:
        f.write(marshal.dumps({("a.py", 1, "f"): (1, 1, 0.5, 0.5, {})})[:9])
    assert not attach._outputs()
    assert "cannot read the profile process" in capsys.readouterr().err


@needs_remote_exec
def test_duration_ends_the_window_with_an_html_report(tmp_path):
    with Target() as target:
        before = target.ask("check")
        report = tmp_path / "report.html"
        pprof = tmp_path / "profile.pb.gz"
        proc = _rprofile("--pid", str(target.pid), "--duration", "0.3", "--html", str(report),
                         "--pprof", str(pprof), "-s", "tottime")
        assert proc.returncode == 0, proc.stderr
        assert "rprofile: wrote %s" % report in proc.stderr
        assert "rprofile: wrote %s" % pprof in proc.stderr
        assert proc.stdout == ""
        with open(pprof, "rb") as f:
            assert f.read(2) == b"\x1f\x8b"  # gzip
        page = report.read_text()
        # The idle workers wait on their events all along: threading's wait is in the report.
        assert "threading.py" in page and "process %d" % target.pid in page
        assert target.ask("check") == before
        assert target.finish() == []


@needs_remote_exec
def test_the_target_exiting_during_the_window_still_writes(tmp_path):
    with Target() as target:
        out = tmp_path / "exit.prof"
        attacher = _profiled(target, "-o", str(out))
        burst = target.ask("go 40")
        assert target.finish() == [_burst_results(40)]
        _, err = attacher.communicate(timeout=60)
        assert attacher.returncode == 0, err
        cc, nc = _counted(out)
        assert cc == nc == burst["calls"] == 120


@needs_remote_exec
def test_a_child_forked_during_the_window_writes_nothing(tmp_path):
    with Target() as target:
        out = tmp_path / "fork.prof"
        attacher = _profiled(target, "-o", str(out))
        assert target.ask("fork") == {"child_status": 0}
        burst = target.ask("go 10")
        _stop(attacher)  # the parent's window, not the child's exit, ended it
        cc, nc = _counted(out)
        assert cc == nc == burst["calls"] == 30
        assert target.finish() == [_burst_results(10)]


def _refused(proc, *words):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@needs_remote_exec
def test_another_profiler_in_the_target_is_refused_and_kept():
    with Target("--cprofile") as target:
        _refused(_rprofile("--pid", str(target.pid)), "already has a profiler active",
                 "'cProfile'")
        state = target.ask("check")
        assert state["tool"] == "cProfile" and state["threads"] == 0
        assert state["rprofile"] == []
        assert target.finish() == []


@needs_remote_exec
@pytest.mark.parametrize("how", ["env", "-X"])
def test_remote_debugging_disabled_in_the_target_is_refused(how):
    env = dict(os.environ)
    flags = ()
    if how == "env":
        env["PYTHON_DISABLE_REMOTE_DEBUG"] = "1"
    else:
        flags = ("-X", "disable-remote-debug")
    with Target(env=env, flags=flags) as target:
        _refused(_rprofile("--pid", str(target.pid)), "remote debugging disabled",
                 "PYTHON_DISABLE_REMOTE_DEBUG", "-X disable-remote-debug")
        assert target.ask("check")["tool"] is None
        assert target.finish() == []


@needs_remote_exec
def test_remote_debugging_disabled_in_the_attacher_is_refused():
    env = dict(os.environ, PYTHON_DISABLE_REMOTE_DEBUG="1")
    with Target() as target:
        _refused(_rprofile("--pid", str(target.pid), env=env),
                 "remote debugging is disabled in this Python", "run rprofile without it")
        assert target.ask("check")["tool"] is None
        assert target.finish() == []


@needs_remote_exec
def test_a_target_whose_main_thread_is_blocked_times_out_and_cleans_up_later(tmp_path):
    env = dict(os.environ, RPROFILE_ATTACH_TIMEOUT="0.5", TMPDIR=str(tmp_path))
    with Target() as target:
        before = target.ask("check")
        assert target.ask("block") == {"blocking": True}
        proc = _rprofile("--pid", str(target.pid), env=env)
        assert proc.returncode == 1, proc.stderr
        assert "did not run the attach script within 0.5 s" in proc.stderr
        assert "blocked in a call" in proc.stderr and "--sample" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert len(glob.glob(str(tmp_path / "rprofile-attach-*" / "attach.py"))) == 1
        # The main thread runs the pending script as soon as it runs Python code again: it
        # finds no one listening, removes itself and its folder, and profiles nothing.
        target.proc.stdin.write("\n")
        target.proc.stdin.flush()
        assert json.loads(target.proc.stdout.readline()) == {"blocked": False}
        assert target.ask("check") == before
        assert glob.glob(str(tmp_path / "rprofile-attach-*")) == []
        assert target.finish() == []


@needs_remote_exec
def test_an_attacher_without_ptrace_permission_says_what_to_grant():
    # The attacher runs as nobody with CAP_DAC_READ_SEARCH (to read the interpreter's files),
    # without CAP_SYS_PTRACE; the target is root's.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the attacher as another user")
    with Target() as target:
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
             sys.executable, "-m", "rprofile", "--pid", str(target.pid)],
            capture_output=True, text=True, timeout=60)
        if "error while loading" in proc.stderr or "Permission denied: '" in proc.stderr:
            pytest.skip("the interpreter cannot run as another user here: " + proc.stderr)
        _refused(proc, "not permitted", "process %d" % target.pid, "CAP_SYS_PTRACE")
        assert target.ask("check")["tool"] is None
        assert target.finish() == []


@needs_remote_exec
def test_root_attaches_to_another_users_process(tmp_path):
    # The private folder is given to the target's user for the attach (its script connects,
    # writes the stats, removes itself), and taken back before the stats are read.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the target as another user")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # That user must reach this interpreter, rprofile and the target's script: not so in a
    # checkout under a private folder (a mktemp -d, /root).
    reach = subprocess.run([*nobody, sys.executable, "-c", "import rprofile; open(%r).close()"
                            % TARGET], capture_output=True, text=True, timeout=60)
    if reach.returncode != 0:
        pytest.skip("another user cannot run this checkout's Python: "
                    + (reach.stderr.strip().splitlines() or ["?"])[-1])
    with Target(prefix=nobody) as target:
        before = target.ask("check")
        out = tmp_path / "nobody.prof"
        attacher = _profiled(target, "-o", str(out))
        burst = target.ask("go 25")
        _stop(attacher)
        cc, nc = _counted(out)
        assert cc == nc == burst["calls"] == 75
        assert target.ask("check") == before
        assert target.finish() == [_burst_results(25)]


def _other_versions():
    """Versions other than this one with an interpreter here."""
    out = []
    for minor in range(10, 16):
        version = "3.%d" % minor
        if (3, minor) != HERE and _python(version):
            out.append(version)
    return out


@pytest.mark.parametrize("version", _other_versions() or ["none"])
def test_a_target_of_another_version_is_refused_saying_what_to_use(version):
    python = _python(version) if version != "none" else None
    if python is None:
        pytest.skip("no other Python version here")
    minor = tuple(int(x) for x in version.split("."))
    with Target(python=python) as target:
        line = _refused(_rprofile("--pid", str(target.pid)),
                        "process %d runs Python %s" % (target.pid, version))
        if minor < (3, 14):
            assert "use --sample" in line and "3.14+" in line
        else:
            assert "attach with Python %s" % version in line
            assert "python%s -m rprofile --pid %d" % (version, target.pid) in line
        assert target.ask("check")["tool"] is None
        assert target.finish() == []


@pytest.mark.skipif(HERE >= (3, 14), reason="a target of this version can be attached to")
def test_before_3_14_a_target_of_this_version_is_told_to_use_sample():
    with Target() as target:
        _refused(_rprofile("--pid", str(target.pid)),
                 "runs Python %d.%d" % HERE, "needs Python 3.14+", "use --sample")
        assert target.finish() == []


def test_no_such_process_is_one_line():
    _refused(_rprofile("--pid", "999999999"), "process 999999999: no such process")


@pytest.mark.parametrize("args, message", [
    (["--threads"], "--threads does not go with --pid"),
    (["--types"], "--types does not go with --pid"),
    (["--types-json", "t.json"], "--types-json does not go with --pid"),
    (["--mode", "cpu"], "--mode does not go with --pid"),
    (["-m", "json.tool"], "-m does not go with --pid"),
    (["--flamegraph-lines"], "--flamegraph-lines needs --flamegraph"),
    (["--duration", "0"], "--duration must be"),
    (["script.py"], "no program to start"),
])
def test_bad_options_are_usage_errors(args, message):
    proc = _rprofile("--pid", "1", *args)
    _usage_error(proc, message)


def test_a_bad_pid_is_a_usage_error():
    _usage_error(_rprofile("--pid", "0"), "--pid must be a process id > 0")


def _usage_error(proc, message):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("Usage: rprofile ") and message in lines[-1], proc.stderr
