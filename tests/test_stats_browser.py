"""The statistics browser, `python -m rprofile.stats [FILE...]`, against `python -m pstats`.

Each case feeds the same script of commands on stdin to both browsers (subprocesses of the
interpreter running pytest, same working directory, same arguments) and requires identical
stdout and exit status; stderr must be empty on both sides, or, where pstats' browser dies of an
exception, end in the same line. The profile files are written by cProfile with a counting timer
(support.Tick), so every table is deterministic.

Two modes, chosen by the environment variable RPROFILE_BROWSER_STATS of the pytest run (a
switch of these tests only; the package reads no such variable):

* unset (the real mode, what ships): the rprofile side is `python -m rprofile.stats FILE...`
  from the installed build.
* `RPROFILE_BROWSER_STATS=pstats` (the stand-in mode): the rprofile side runs main() of
  python/rprofile/_browser.py from this source tree (loaded by file path, so the installed
  extension is not shadowed) over pstats.Stats. This checks the browser alone, whatever the
  state of rprofile's Stats.
"""

import cProfile
import importlib.util
import io
import marshal
import os
import re
import pstats
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import Tick

MODE_ENV = "RPROFILE_BROWSER_STATS"
STANDIN = os.environ.get(MODE_ENV, "") == "pstats"
if os.environ.get(MODE_ENV, "") not in ("", "pstats"):
    raise RuntimeError("%s must be 'pstats' or unset" % MODE_ENV)

BROWSER_SOURCE = Path(__file__).resolve().parents[1] / "python" / "rprofile" / "_browser.py"
WELCOME = "Welcome to the profile statistics browser.\n"

if STANDIN:
    _LOADER = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('_rprofile_browser', sys.argv.pop(1))\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "import pstats\n"
        "module.main(pstats.Stats)\n"
    )
    RPROFILE_CMD = [sys.executable, "-c", _LOADER, str(BROWSER_SOURCE)]
else:
    RPROFILE_CMD = [sys.executable, "-m", "rprofile.stats"]
PSTATS_CMD = [sys.executable, "-m", "pstats"]


def _env(rprofile_side, **extra):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **extra)
    env.pop(MODE_ENV, None)
    return env


def _browser_stats_class():
    """The Stats class the browser under test runs over."""
    if STANDIN:
        return pstats.Stats
    import rprofile.stats

    return rprofile.stats.Stats


def _load_browser_module():
    """The browser module this run tests (in process)."""
    if not STANDIN:
        import rprofile._browser

        return rprofile._browser
    spec = importlib.util.spec_from_file_location("_rprofile_browser_inproc", BROWSER_SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the profile files ----------------------------------------------------------------------

WORKLOAD = '''\
def leaf(n):
    return n * 2


def helper(n):
    return sum([leaf(i) for i in range(n)])


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def run():
    helper(3)
    fib(5)
    return sorted([3, 1, 2], key=leaf)


def other():
    helper(2)
    return len(str(leaf(7)))
'''


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """A directory holding workload.py, a.prof (run), b.prof (other), c.prof (run and other),
    damaged files and a subdirectory; the browsers run there and name the files relatively."""
    where = tmp_path_factory.mktemp("browser")
    (where / "workload.py").write_text(WORKLOAD)
    spec = importlib.util.spec_from_file_location("workload", where / "workload.py")
    workload = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workload)
    for name, calls in [("a", [workload.run]), ("b", [workload.other]),
                        ("c", [workload.run, workload.other])]:
        prof = cProfile.Profile(Tick())
        for call in calls:
            prof.runcall(call)
        prof.dump_stats(str(where / (name + ".prof")))
    (where / "garbage.prof").write_bytes(b"this is no marshal data")
    (where / "empty.prof").write_bytes(b"")
    (where / "emptydict.prof").write_bytes(marshal.dumps({}))
    (where / "list.prof").write_bytes(marshal.dumps([1, 2]))
    (where / "adir").mkdir()
    return where


# --- running both browsers ------------------------------------------------------------------

def run_both(args, script, cwd):
    """Run both browsers with the same arguments and stdin; (pstats, rprofile) results."""
    procs = [subprocess.Popen(cmd + list(args), cwd=cwd, env=_env(side), text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
             for side, cmd in [(False, PSTATS_CMD), (True, RPROFILE_CMD)]]
    results = []
    for proc in procs:
        out, err = proc.communicate(script, timeout=60)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def _last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


_ERROR_LINE = re.compile(r"^((?:\S+% )?[A-Za-z]*Error): .*$", re.MULTILINE)


def damaged_file_messages(text):
    """rprofile.Stats raises the exception type pstats raises for a damaged file, with its own
    message naming the file (as asked by issue 4): the message text is the allowed difference."""
    return _ERROR_LINE.sub(r"\1: <message>", text)


def assert_same(args, script, cwd, *, returncode=0, normalize=None):
    """Both browsers print the same; pstats' run exits with `returncode` (1 when it dies of an
    exception, whose last stderr line must then be the same on both sides, up to
    `normalize`)."""
    p, r = run_both(args, script, cwd)
    assert p.returncode == returncode, p.stderr
    p_out, r_out = p.stdout, r.stdout
    if normalize:
        p_out, r_out = normalize(p_out), normalize(r_out)
    assert r_out == p_out
    assert r.returncode == p.returncode, r.stderr
    if returncode == 0:
        assert p.stderr == "" and r.stderr == "", r.stderr
    else:
        p_err, r_err = _last_line(p.stderr), _last_line(r.stderr)
        if normalize:
            p_err, r_err = normalize(p_err), normalize(r_err)
        assert r_err == p_err
    return p


def lines(*commands):
    return "".join(command + "\n" for command in commands)


COMMANDS = ["add", "callees", "callers", "EOF", "quit", "read", "reverse", "sort", "stats",
            "strip", "help"]

CASES = {
    "help": lines("help", *("help " + c for c in COMMANDS), "?", "? sort", "help nosuch",
                  "help help extra", "quit"),
    "unknown-and-empty-lines": lines("nosuch", "", "stats 2", "", "STATS 1", "stat 1",
                                     "   stats 1   ", "!ls", "help", "", "quit"),
    "restrictions": lines(
        "stats", "stats 3", "stats 0", "stats 1", "stats 100", "stats -1", "stats 0.5",
        "stats 0.0", "stats 1.0", "stats .25", "stats 1e-1", "stats 1_0", "stats +2",
        "stats 1.5", "stats -0.5", "stats inf", "stats -inf", "stats nan", "stats 2.5 3",
        "stats fib", "stats fib 1", "stats 1 fib", "stats workload 0.5 leaf", "stats .*",
        "stats 0x10", "stats [", "stats ( 2", "stats 1.5 2.5 fib", "quit"),
    "callers-callees": lines(
        "callers", "callers leaf", "callers 2", "callers 0.5", "callers 1.5", "callers fib 1",
        "callers [", "callees", "callees run", "callees helper 1", "callees 3.0",
        "callees -2", "callees nosuchfunction", "quit"),
    "sort": lines(
        "sort", "sort bogus", "sort time bogus", "sort cum", "sort c", "sort t", "sort n",
        "sort f", "sort file", "sort cumt", "stats 4", "sort cu", "stats 4", "sort ca",
        "stats 4", "sort tot", "stats 4", "sort nfl", "stats 4", "sort stdname", "stats 4",
        "sort calls time", "stats 4", "sort name line", "stats 4", "sort module", "stats 4",
        "sort pcalls", "sort ncalls", "sort 1", "sort -1", "sort   ", "stats 4", "quit"),
    "reverse": lines("sort calls", "stats 4", "reverse", "stats 4", "reverse", "stats 4",
                     "sort name", "reverse", "stats", "reverse extra args", "callers 2",
                     "quit"),
    "strip": lines("stats 3", "strip", "stats 3", "callers leaf", "callees run", "strip",
                   "strip again", "stats 3", "read", "stats 3", "quit"),
    "read": lines("read nope.prof", "stats 1", "read adir", "read b.prof", "stats",
                  "read", "stats 2", "strip", "read", "stats 2", "read a.prof", "stats 2",
                  "read   c.prof  ", "stats 2", "read", "quit"),
    "read-damaged": lines("read garbage.prof", "read empty.prof", "read list.prof",
                          "stats 1", "read", "quit"),
    "add": lines("add nope.prof", "add", "add adir", "add b.prof c.prof", "stats 3",
                 "add b.prof", "stats", "callers leaf", "callees helper", "add a.prof",
                 "stats 2", "read", "stats 2", "quit"),
    "eof-command": lines("stats 1", "EOF", "stats 2"),
    "eof-end-of-input": lines("stats 1"),
    "eof-no-final-newline": "stats 1\nstats 2",
    "quit-then-more": lines("quit", "stats 2", "help"),
    "quit-with-argument": lines("quit now", "stats 2"),
    "empty-input": "",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_script_on_one_file(case, profiles):
    normalize = damaged_file_messages if case == "read-damaged" else None
    assert_same(["a.prof"], CASES[case], profiles, normalize=normalize)


NO_STATS_SCRIPT = lines(
    "stats", "stats 5", "stats 1.5", "stats 2 -3.0 fib", "callers", "callers leaf",
    "callees 0.5", "add a.prof", "add", "sort", "sort time", "sort bogus", "reverse", "strip",
    "read", "help read", "EOF")


@pytest.mark.parametrize("args", [[], ["nope.prof"], [""], ["adir"], ["garbage.prof"],
                                  ["nope.prof", "a.prof", "b.prof"]],
                         ids=["no-file", "missing-file", "empty-name", "directory",
                              "garbage", "missing-then-more"])
def test_without_statistics(args, profiles):
    p = assert_same(args, NO_STATS_SCRIPT + lines("read a.prof", "stats 2", "read", "quit"),
                    profiles, normalize=damaged_file_messages)
    assert "No statistics object is loaded." in p.stdout


@pytest.mark.parametrize("args", [["a.prof", "b.prof"], ["a.prof", "b.prof", "c.prof"],
                                  ["b.prof", "nope.prof", "a.prof"], ["a.prof", "a.prof"],
                                  ["a.prof", "adir", ""]])
def test_several_files(args, profiles):
    assert_same(args, lines("stats", "callers 3", "read", "stats 2", "add b.prof", "stats 3"),
                profiles)


def test_read_empty_statistics(profiles):
    """pstats.Stats refuses an empty dict with a TypeError naming its class, which is
    `__main__.Stats` under `python -m pstats`: the class name is the one difference allowed.
    3.15's browser makes its stats from the dict it read, and takes an empty one."""
    def normalize(text):
        for name in ("__main__.Stats", "pstats.Stats", "rprofile.stats.Stats"):
            text = text.replace("<class '%s'>" % name, "<class 'Stats'>")
        return text

    p = assert_same(["a.prof"], lines("read emptydict.prof", "stats 1", "quit"), profiles,
                    normalize=normalize)
    if sys.version_info >= (3, 15):
        assert "emptydict.prof\n\n         0 function calls in 0.000 seconds" in p.stdout
    else:
        assert "TypeError: Cannot create or construct a <class '__main__.Stats'>" in p.stdout


@pytest.mark.parametrize("script", [
    lines("stats 1", "add garbage.prof", "stats 1"),
    lines("stats 1", "add empty.prof", "quit"),
    lines("add list.prof", "quit"),
], ids=["add-garbage", "add-empty", "add-list"])
def test_uncaught_errors_end_the_browser(script, profiles):
    """`add` catches only OSError: pstats' browser dies of anything else (no Goodbye, status 1)."""
    p = assert_same(["a.prof"], script, profiles, returncode=1,
                    normalize=damaged_file_messages)
    assert "Goodbye." not in p.stdout


# --- interrupting -----------------------------------------------------------------------------

def _read_until(fd, marker, buffer, deadline):
    while marker not in buffer:
        left = deadline - time.monotonic()
        assert left > 0, "timed out waiting for %r in %r" % (marker, buffer)
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the pty's other side is closed
                chunk = b""
            if not chunk:
                raise AssertionError("output ended before %r: %r" % (marker, buffer))
            buffer += chunk
    return buffer


def _drain(fd, buffer, deadline):
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], deadline - time.monotonic())
        if not ready:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            break
        buffer += chunk
    return buffer


def _wait_blocked_in_read(pid, deadline):
    """Waits until the process sleeps reading a pipe (Linux's /proc tells; elsewhere, or where
    the kernel names that wait otherwise, a few seconds at most)."""
    deadline = min(deadline, time.monotonic() + 5)
    try:
        while time.monotonic() < deadline:
            with open("/proc/%d/wchan" % pid) as f:
                if "pipe_read" in f.read():
                    return
            time.sleep(0.01)
    except OSError:
        time.sleep(0.5)


def _interrupted(cmd, env, cwd):
    # A shell's background job (CI's, or `tools/test-all &`) starts with SIGINT ignored, and
    # Python then leaves it ignored: the browsers get the default disposition back, so that
    # Python installs its KeyboardInterrupt handler as in a terminal.
    proc = subprocess.Popen(cmd + ["a.prof"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    try:
        proc.stdin.write(b"stats 1\n")
        proc.stdin.flush()
        # The second prompt: the browser has run `stats 1` and waits in input().
        out = _read_until(proc.stdout.fileno(), b"\n\na.prof% ", b"", deadline)
        # A signal that lands after the prompt is written but before input() blocks in read()
        # is only seen at the next read's interruption (in pstats too): wait until it reads.
        _wait_blocked_in_read(proc.pid, deadline)
        proc.send_signal(signal.SIGINT)
        # stdin stays open until the browser has ended: a pipe closed meanwhile can reach its
        # read() as an end of file before the signal does (the kernel checks for writers first).
        proc.wait(timeout=60)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out + rest, err, proc.returncode


def test_keyboard_interrupt_is_swallowed(profiles):
    results = [_interrupted(cmd, _env(side, PYTHONUNBUFFERED="1"), profiles)
               for side, cmd in [(False, PSTATS_CMD), (True, RPROFILE_CMD)]]
    (p_out, p_err, p_rc), (r_out, r_err, r_rc) = results
    assert p_rc == 0 and p_err == b"" and b"Goodbye" not in p_out
    assert (r_out, r_err, r_rc) == (p_out, p_err, p_rc)


# --- through a terminal: readline and completion of sort keys ----------------------------------

def _on_terminal(cmd, cwd, steps):
    """Run cmd on a pseudo-terminal; steps are (bytes to type, marker to await after them)."""
    import pty

    master, slave = pty.openpty()
    env = dict(_env(cmd is RPROFILE_CMD), TERM="dumb", INPUTRC=os.devnull)
    proc = subprocess.Popen(cmd + ["a.prof"], cwd=cwd, env=env, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    deadline = time.monotonic() + 20  # (a browser that prints something else ends here)
    out = b""
    try:
        out = _read_until(master, b"a.prof% ", out, deadline)
        for typed, marker in steps:
            os.write(master, typed)
            out += _read_until(master, marker, b"", deadline)
        out = _drain(master, out, deadline)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return out, proc.returncode


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty transcript on Linux only")
def test_terminal_completion(profiles):
    pytest.importorskip("readline")
    # Each marker is the tail of what the step prints, so that nothing is typed while the
    # browser is busy (the terminal would echo it, not readline, and the transcript would vary).
    steps = [
        (b"sort cumt\t\n", b"\na.prof% "),                  # completes to "cumtime "
        (b"stats 2\n", b"\r\n\r\n\r\na.prof% "),
        (b"sort cu\t\t\t", b"\r\na.prof% sort cum"),       # "cum", beep, list both
        (b"\x15sort \t\t", b"\r\na.prof% sort "),           # ^U; beep, list every key
        (b"\x15help so\t\n", b"keys.)\r\na.prof% "),         # command names complete too
        (b"quit\n", b"Goodbye.\r\n"),
    ]
    p_out, p_rc = _on_terminal(PSTATS_CMD, profiles, steps)
    r_out, r_rc = _on_terminal(RPROFILE_CMD, profiles, steps)
    assert p_rc == 0
    assert b"cumulative" in p_out and b"tottime" in p_out and b"Sort profile data" in p_out
    assert (r_out, r_rc) == (p_out, p_rc)


# --- in process ---------------------------------------------------------------------------------

def test_main_with_argv_in_process(profiles, monkeypatch, capsys):
    """main(argv) takes the arguments after the program name, as `python -m pstats` does."""
    browser = _load_browser_module()
    script = lines("stats 3", "sort time", "reverse", "stats 3", "help add", "EOF")
    monkeypatch.chdir(profiles)
    monkeypatch.setattr(sys, "stdin", io.StringIO(script))
    monkeypatch.setattr(sys, "argv", ["ignored", "nope.prof"])
    browser.main(_browser_stats_class(), ["a.prof", "b.prof"])
    got = capsys.readouterr()
    p, _ = run_both(["a.prof", "b.prof"], script, profiles)
    assert got.out == p.stdout
    assert got.err == ""


def test_browser_object(profiles, monkeypatch):
    browser = _load_browser_module()
    monkeypatch.chdir(profiles)
    b = browser.ProfileBrowser(pstats.Stats, "a.prof")
    assert b.prompt == "a.prof% " and isinstance(b.stats, pstats.Stats)
    assert b.complete_sort("cu", "sort cu", 5, 7) == ["cumtime", "cumulative"]
    assert b.complete_sort("", "sort ", 5, 5) == list(pstats.Stats.sort_arg_dict_default)
    assert b.complete_sort("x", "sort x", 5, 6) == []
    empty = browser.ProfileBrowser(pstats.Stats)
    assert empty.prompt == "% " and empty.stats is None
    # The commands and help topics `help` lists are exactly pstats' browser's.
    names = {n for n in dir(type(b)) if n.startswith(("do_", "help_", "complete_"))}
    assert names == {p + c for p in ("do_", "help_") for c in COMMANDS} | {
        "complete_sort", "complete_help"}


def test_the_shipped_browser_reads_no_test_switch(profiles):
    # The tests' mode variable must not change what `python -m rprofile.stats` does.
    script = lines("stats 2", "EOF")
    env = dict(_env(True), **{MODE_ENV: "bogus"})
    r = subprocess.run([sys.executable, "-m", "rprofile.stats", "a.prof"], env=env,
                       cwd=profiles, input=script, capture_output=True, text=True, timeout=60)
    p = subprocess.run(PSTATS_CMD + ["a.prof"], env=_env(False), cwd=profiles, input=script,
                       capture_output=True, text=True, timeout=60)
    assert (r.stdout, r.stderr, r.returncode) == (p.stdout, p.stderr, p.returncode)


# (runpy warns that rprofile.stats, imported by the test, is run again as __main__.)
@pytest.mark.filterwarnings("ignore:'rprofile.stats' found in sys.modules:RuntimeWarning")
def test_the_shipped_browser_runs_over_rprofile_stats(profiles, monkeypatch, capsys):
    import runpy

    import rprofile._browser
    import rprofile.stats

    made = []
    init = rprofile._browser.ProfileBrowser.__init__

    def recording_init(self, stats_class, profile=None):
        made.append(stats_class)
        init(self, stats_class, profile)

    monkeypatch.setattr(rprofile._browser.ProfileBrowser, "__init__", recording_init)
    monkeypatch.chdir(profiles)
    monkeypatch.setattr(sys, "stdin", io.StringIO("EOF\n"))
    monkeypatch.setattr(sys, "argv", ["rprofile.stats", "a.prof"])
    runpy.run_module("rprofile.stats", run_name="__main__")
    assert made == [rprofile.stats.Stats]
    assert capsys.readouterr().out.startswith(WELCOME)