"""`rprofile top`, driven in tmux as a user drives it (keys sent, the screen read back): the hot
function and its thread appear within a few refreshes; each key does what it says; `q` exits 0
and leaves the program running; `w` writes a file pstats reads; a program that ends ends the
view; no terminal is a usage error."""

import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from report_support import report_data
from sampler_support import needs_sampler, sampled_program

pytestmark = needs_sampler


class Tmux:
    """One tmux server of the test's own (its socket in the test's folder), one window."""

    def __init__(self, folder, command, width=120, height=40):
        if shutil.which("tmux") is None:
            pytest.fail("no tmux to drive `rprofile top` in: install Debian's tmux "
                        "(tools/test-all does, as root with apt-get)", pytrace=False)
        self.socket = str(folder / "tmux.sock")
        self.exit_file = folder / "exit.txt"
        shell = "%s; echo $? > %s; sleep 600" % (command, self.exit_file)
        self.tmux("new-session", "-d", "-s", "top", "-x", str(width), "-y", str(height), shell)

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                              text=True, timeout=30)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-J", "-t", "top").stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def wait_for(self, pattern, timeout=20):
        """The screen once `pattern` (a regex) is on it."""
        end = time.monotonic() + timeout
        while True:
            text = self.screen()
            if re.search(pattern, text):
                return text
            if time.monotonic() > end:
                raise AssertionError("%r not on the screen within %g s:\n%s"
                                     % (pattern, timeout, text))
            time.sleep(0.2)

    def exit_status(self, timeout=20):
        end = time.monotonic() + timeout
        while not self.exit_file.exists() or not self.exit_file.read_text().strip():
            if time.monotonic() > end:
                raise AssertionError("top did not exit:\n" + self.screen())
            time.sleep(0.1)
        return int(self.exit_file.read_text())

    def close(self):
        self.tmux("kill-server")


def top_command(*args):
    return " ".join([sys.executable, "-m", "rprofile", "top", *args])


@pytest.fixture
def top(tmp_path):
    started = []

    def start(*args, **kw):
        t = Tmux(tmp_path, "cd %s && %s" % (tmp_path, top_command(*args)), **kw)
        started.append(t)
        return t

    yield start
    for t in started:
        t.close()


def header_pid(text):
    return int(re.search(r"\(pid (\d+),", text).group(1))


def row(text, name):
    """The own% and total% of the first table row naming `name`."""
    # The name ends at a space or at the end of the line (tmux drops trailing blanks).
    m = re.search(r"^\s*([\d.]+)%\s+[\d.]+\s+([\d.]+)%\s+[\d.]+\s+" + re.escape(name)
                  + r"(?:\s|$)", text, re.M)
    return (float(m.group(1)), float(m.group(2))) if m else None


def test_the_hot_function_and_its_thread_show_and_each_key_does_what_it_says(top, tmp_path):
    t = top(sampled_program("top_target.py"), "60")
    text = t.wait_for(r"hot_function \(top_target\.py:\d+\)")
    assert re.search(r"MainThread \(tid \d+\)\s+running", text), text
    assert re.search(r"wall mode: \d+ samples read, \d+ missed, \d+% torn, over", text), text
    # The worker's row: on the first screens it may not be there yet (its thread had not
    # been read in the interval shown), or be caught awake between its sleeps.
    text = t.wait_for(r"worker \(tid \d+\)\s+(idle|seen)")
    pid = header_pid(text)
    # Within a few refreshes the hot function holds most of the main thread's time.
    text = t.wait_for(r"functions, the last 5 s, all threads, sorted by own")
    own, total = row(t.wait_for(r"\d%.*hot_function"), "hot_function")
    assert total >= own > 20, text
    t.keys("l")
    text = t.wait_for(r"lines, the last 5 s")
    assert re.search(r"hot_function \(top_target\.py:1[0-2]\)", text), text
    t.keys("l", "c")
    t.wait_for(r"functions, since the start, all threads")
    t.keys("t")
    text = t.wait_for(r"thread MainThread, sorted by own")
    assert row(text, "worker_loop (top_target.py:16)") is None and row(text, "main (top_target.py:21)"), text
    t.keys("t")
    t.wait_for(r"thread worker, sorted by own")
    t.keys("t", "s")
    t.wait_for(r"all threads, sorted by total")
    t.keys("s")
    t.wait_for(r"sorted by name")
    t.keys("p")
    t.wait_for(r"sorted by name \(paused\)")
    t.keys("p", "r")
    reset_at = float(re.search(r"since the reset at ([\d.]+) s",
                               t.wait_for(r"since the reset at [\d.]+ s")).group(1))
    t.wait_for(r"counts reset")
    t.keys("?")
    t.wait_for(r"keys .*\n.*q  quit \(the program runs on\)")
    t.keys("?")
    # Samples since the reset, then their snapshot.
    t.wait_for(r"hot_function")
    t.keys("w")
    text = t.wait_for(r"wrote \S+\.prof and \S+\.html")
    written = re.search(r"wrote (\S+\.prof) and (\S+\.html)", text)
    # Named on screen, written in the folder top was started in.
    prof, html = (str(tmp_path / name) for name in written.groups())
    names = {func[2] for func in pstats.Stats(prof).stats}
    assert "hot_function" in names and os.path.getsize(html) > 10000
    # Its report opens on a time view of what was shown: since the reset (the seconds the
    # samples span are fewer than top has run).
    data = report_data(html)
    counted = sum(sum(lane["counted"]) for lane in data["time"]["lanes"])
    assert counted == sum(data["time"]["cells"]["w"]) > 0
    assert counted == round(sum(st[2] for st in pstats.Stats(prof).stats.values())
                            / data["time"]["interval"])
    T = data["time"]
    first = next(b for b, n in enumerate(T["cells"]["n"]) if n)
    assert T["origin"] + (first + 1) * T["width"] >= reset_at - 0.2, (first, T["width"], reset_at)
    # d: every thread's stack now, as rprofile dump prints it.
    t.keys("d")
    text = t.wait_for(r"wrote rprofile-dump-\d+-1\.txt")
    dumped = (tmp_path / re.search(r"wrote (rprofile-dump-\d+-1\.txt)", text).group(1)).read_text()
    assert dumped.startswith("Stack dump for PID %d" % pid), dumped
    assert "MainThread" in dumped and "worker" in dumped and "in worker_loop" in dumped, dumped
    assert re.search(r"in (hot_function|main)\n", dumped), dumped
    # A resize is drawn anew, to the new width.
    t.tmux("resize-window", "-t", "top", "-x", "80", "-y", "24")
    text = t.wait_for(r"hot_function")
    assert max(len(line) for line in text.splitlines()) <= 80, text
    t.keys("q")
    assert t.exit_status() == 0
    text = t.screen()
    assert "stopped watching; the program (pid %d) runs on" % pid in text, text
    assert "rprofile: wrote %s" % prof in text, text
    # The program runs on.
    os.kill(pid, 0)
    os.kill(pid, signal.SIGKILL)


def test_blocking_stops_the_program_for_each_read_and_lets_it_go_on_q(top):
    # py-spy top's default: every read whole (none torn), the program left running untraced.
    t = top("--blocking", sampled_program("top_target.py"), "60")
    text = t.wait_for(r"hot_function \(top_target\.py:\d+\)")
    text = t.wait_for(r"wall mode, blocking: [1-9]\d* samples read, \d+ missed, 0% torn")
    pid = header_pid(text)
    try:
        t.keys("q")
        assert t.exit_status() == 0
        assert "the program (pid %d) runs on" % pid in t.screen()
        time.sleep(0.3)
        with open("/proc/%d/status" % pid) as f:
            status = dict(line.split(":", 1) for line in f.read().splitlines())
        assert status["TracerPid"].strip() == "0", status
        assert status["State"].split()[0] in "RSD", status
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_program_that_ends_ends_the_view_with_its_status(top):
    t = top(sampled_program("top_target.py"), "2")
    t.wait_for(r"hot_function")
    assert t.exit_status() == 0
    assert "rprofile top: the program exited with status 0" in t.screen()


def test_stalls_show_as_they_happen(top, tmp_path):
    t = top("--stall", "500", sampled_program("freeze.py"), "cpu", "20")
    t.wait_for(r"stalls of 500 ms or longer, away from its idle wait")
    assert "none yet" in t.wait_for(r"none yet")
    text = t.wait_for(r"at [\d.]+ s for 1\.[3-9]\d s: MainThread: freeze \(freeze\.py:\d+\)",
                      timeout=30)
    assert len(re.findall(r"^at [\d.]+ s for", text, re.M)) == 1, text
    # A snapshot of the last seconds lists the stall in its report (marked on the time view).
    t.keys("w")
    html = t.wait_for(r"wrote \S+\.prof and (\S+\.html)")
    html = re.search(r"wrote \S+\.prof and (\S+\.html)", html).group(1)
    data = report_data(tmp_path / html)
    rows = data["stalls"]["rows"]
    assert len(rows) == 1 and 1.3 <= rows[0]["duration"] < 2.0, rows
    assert data["strings"][data["fn"]["name"][rows[0]["f"][0]]] == "freeze", rows
    # Since a reset (r), the stall before it is not in what is shown, nor in its snapshot.
    t.keys("r")
    t.wait_for(r"since the reset at")
    time.sleep(1.5)
    t.keys("w")
    text = t.wait_for(r"wrote \S+-2\.prof and (\S+-2\.html)")
    html = re.search(r"wrote \S+\.prof and (\S+\.html)", text).group(1)
    assert report_data(tmp_path / html)["stalls"]["rows"] == [], html
    t.keys("q")
    assert t.exit_status() == 0


def test_subprocesses_show_under_their_pids_with_their_stalls(top, tmp_path):
    # A parent that starts freeze.py in another interpreter: the child's threads, hot
    # function and stall show, named with its pid.
    # The child idles 1.5 s before freeze.py's own second of idling: time to be found and
    # read before its freeze, on a loaded machine too.
    child = tmp_path / "child.py"
    child.write_text("import runpy, sys, time\n"
                     "time.sleep(1.5)\n"
                     "sys.argv = [%r, 'cpu', '20']\n"
                     "runpy.run_path(sys.argv[0], run_name='__main__')\n"
                     % sampled_program("freeze.py"))
    parent = tmp_path / "parent.py"
    parent.write_text("import subprocess, sys\nsubprocess.run([sys.executable, %r])\n"
                      % str(child))
    t = top("--subprocesses", "--stall", "500", str(parent))
    text = t.wait_for(r"rprofile top: .*\(pid \d+,")
    pids = [header_pid(text)]
    try:
        text = t.wait_for(r"at [\d.]+ s for 1\.[3-9]\d s: MainThread \(pid (\d+)\): freeze "
                          r"\(freeze\.py:\d+\)", timeout=30)
        pids.append(int(re.search(r"s: MainThread \(pid (\d+)\): freeze", text).group(1)))
        assert pids[1] != pids[0], text
        # Both processes' main threads are listed.
        t.keys("c")
        text = t.wait_for(r"since the start")
        for pid in pids:
            assert re.search(r"MainThread \(pid %d\)" % pid, text), text
        t.keys("q")
        assert t.exit_status() == 0
    finally:
        # q leaves them running: the test ends them.
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_an_attached_process_is_left_running(top):
    target = subprocess.Popen([sys.executable, sampled_program("top_target.py"), "60"])
    try:
        time.sleep(0.5)
        t = top("--pid", str(target.pid), "--mode", "gil")
        text = t.wait_for(r"hot_function")
        assert "gil mode" in text and "holding the GIL" in text, text
        t.keys("q")
        assert t.exit_status() == 0
        assert "stopped watching process %d; it runs on" % target.pid in t.screen()
        time.sleep(0.3)
        assert target.poll() is None
    finally:
        target.kill()
        target.wait()


@pytest.mark.parametrize("args, words", [
    ([sampled_program("top_target.py"), "1"], "top draws on a terminal"),
    ([], "give one of --pid PID, a script or -m module"),
    (["--pid", "1", sampled_program("top_target.py")], "no program to start"),
    (["--rate", "0", sampled_program("top_target.py")], "--rate must be"),
    (["--stall", "0", sampled_program("top_target.py")], "--stall must be"),
])
def test_usage_errors_exit_2(args, words):
    proc = subprocess.run([sys.executable, "-m", "rprofile", "top", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
