"""`rprofile dump --pid PID`: every thread of a running process at one instant, read from outside
(issue 39): names, OS ids, states, stacks at the right lines, JSON, child processes, and the
target left running (untraced) whatever happens."""

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rprofile.sampling.dump import Frame, ThreadDump, as_json, dump, format_dump
from sampler_support import needs_sampler, run_rprofile

pytestmark = needs_sampler

PROGRAMS = Path(__file__).parent / "dump_programs"


@contextlib.contextmanager
def started(name):
    """Program `name` of dump_programs/, once it said "ready"; it is told to finish (a line on
    its stdin) and must then exit 0: the dump left it running."""
    proc = subprocess.Popen([sys.executable, str(PROGRAMS / name)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def line_of(name, marker):
    """The line of dump_programs/`name` that holds `marker`."""
    lines = (PROGRAMS / name).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("TracerPid:"))


def by_name(threads):
    return {t.name: t for t in threads}


def test_two_deadlocked_threads_each_wait_at_their_line_and_are_idle():
    with started("deadlock.py") as proc:
        threads = by_name(dump(proc.pid))
        assert tracer_of(proc.pid) == 0
    assert {"MainThread", "first", "second"} <= set(threads)
    for name in ("first", "second"):
        t = threads[name]
        top = t.frames[-1]
        assert (Path(top.filename).name, top.line, top.name) == \
            ("deadlock.py", line_of("deadlock.py", "# %s waits here" % name), name)
        assert t.state != "R" and not t.on_cpu, t
        assert "idle" in t.status()
        assert t.native_id > 0 and not t.main
    main = threads["MainThread"]
    assert main.main and main.native_id == proc.pid
    assert main.frames[0].name == "<module>"


def test_the_text_reads_as_a_traceback_with_source_lines():
    with started("deadlock.py") as proc:
        out = run_rprofile("dump", "--pid", str(proc.pid)).stdout
    path = str(PROGRAMS / "deadlock.py")
    assert out.startswith("Stack dump for PID %d (" % proc.pid)
    assert "3 threads" in out.splitlines()[0]
    for name in ("first", "second"):
        line = line_of("deadlock.py", "# %s waits here" % name)
        header = next(h for h in out.splitlines() if h.startswith("Thread ") and
                      '"%s"' % name in h)
        assert header.endswith("(idle; most recent call last):"), header
        block = out[out.index(header):].split("\n\n")[0].splitlines()
        # Its own function last, with the line it waits at and that line's source.
        assert block[-2:] == ['  File "%s", line %d, in %s' % (path, line, name),
                              "    %s" % ("b" if name == "first" else "a") +
                              ".acquire()  # %s waits here" % name]
    assert '"MainThread" (main thread, idle; most recent call last):' in out


def test_json_holds_what_the_text_shows():
    with started("deadlock.py") as proc:
        doc = json.loads(run_rprofile("dump", "--pid", str(proc.pid), "--json").stdout)
        threads = by_name(dump(proc.pid))
    assert doc["pid"] == proc.pid and "deadlock.py" in doc["command_line"]
    assert {t["name"] for t in doc["threads"]} == set(threads)
    for t in doc["threads"]:
        ours = threads[t["name"]]
        assert [(f["filename"], f["line"], f["name"]) for f in t["frames"]] == \
            [(f.filename, f.line, f.name) for f in ours.frames]
        assert (t["native_id"], t["main"], t["on_cpu"]) == (ours.native_id, ours.main, False)
    first = next(t for t in doc["threads"] if t["name"] == "first")
    assert first["frames"][-1]["source"] == "b.acquire()  # first waits here"


# What dump_programs/locals.py's `hold` frame holds, as the dump shows each, with its type.
LOCALS = {
    "count": (repr(7), "int"),
    "big": (repr(-(2 ** 100)), "int"),
    "ratio": (repr(2.5), "float"),
    "raw": (repr(b"\x00bytes\xff"), "bytes"),
    "table": ("<dict of 3 items>", "dict"),
    "items": ("<list of 2 items>", "list"),
    "pair": ("<tuple of 2 items>", "tuple"),
    "seen": ("<set of 4 items>", "set"),
    "nothing": ("None", "NoneType"),
    "flag": ("True", "bool"),
}


def check_hold_locals(shown):
    """`shown`: name -> (text, type) of `hold`'s locals, as the text or JSON gives them."""
    assert list(shown) == ["count", "big", "ratio", "text", "raw", "table", "items", "pair",
                           "seen", "basket", "nothing", "flag"]
    for name, want in LOCALS.items():
        assert shown[name] == want, name
    # The long string cut, saying its whole length; the instance by its class and address.
    text, ty = shown["text"]
    assert ty == "str" and text.endswith("... (300 characters)"), text
    start = text[:-len("... (300 characters)")]
    assert 0 < len(start) - 2 < 300 and start == repr("x" * (len(start) - 2))
    text, ty = shown["basket"]
    assert ty == "Basket" and re.fullmatch(r"<Basket at 0x[0-9a-f]+>", text), text


def test_locals_show_each_kind_of_value_in_text_and_json():
    with started("locals.py") as proc:
        out = run_rprofile("dump", "--pid", str(proc.pid), "--locals").stdout
        doc = json.loads(run_rprofile("dump", "--pid", str(proc.pid), "--locals",
                                      "--json").stdout)
        plain = run_rprofile("dump", "--pid", str(proc.pid)).stdout
    assert "Locals" not in plain
    lines = out.splitlines()
    start = lines.index("    Locals:", next(i for i, line in enumerate(lines)
                                           if line.endswith("in hold")))
    shown = {}
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        name, _, text = line.strip().partition(" = ")
        shown[name] = text
    (frames,) = [t["frames"] for t in doc["threads"]]
    hold = frames[-1]
    assert hold["name"] == "hold"
    as_json = {v["name"]: (v["value"], v["type"]) for v in hold["locals"]}
    check_hold_locals(as_json)
    assert shown == {name: text for name, (text, _) in as_json.items()}
    # A closure's variable is read through its cell, in the function that made it and the one
    # that reads it; module-level code keeps no locals in its frame.
    by_function = {f["name"]: {v["name"]: v["value"] for v in f["locals"]} for f in frames}
    assert by_function["outer"]["shared"] == by_function["inner"]["shared"] == "7"
    assert by_function["<module>"] == {}


def test_dump_with_locals_gives_them_per_frame_and_none_without():
    with started("locals.py") as proc:
        (with_locals,) = dump(proc.pid, locals=True)
        (without,) = dump(proc.pid)
    hold = with_locals.frames[-1]
    assert hold.name == "hold" and hold.locals_error is None
    check_hold_locals({v.name: (v.text(), v.type) for v in hold.locals})
    kinds = {v.name: v.kind for v in hold.locals}
    assert (kinds["big"], kinds["table"], kinds["basket"]) == ("int", "container", "other")
    assert all(f.locals is None and f.locals_error is None for f in without.frames)


def test_a_frame_whose_locals_were_not_read_says_so_in_their_place():
    why = "the frame returned before its locals were read"
    frames = [Frame("a.py", 3, "f", None, why), Frame("a.py", 9, "g", [], None)]
    thread = ThreadDump(11, 12, "T", True, "S", False, frames, False, False)
    out = format_dump(os.getpid(), [thread])
    assert out.splitlines()[-3:] == ["    Locals not read: " + why, '  File "a.py", line 9, in g',
                                     "    Locals: none"]
    doc = as_json(os.getpid(), [thread])["threads"][0]["frames"]
    assert (doc[0]["locals"], doc[0]["locals_error"]) == (None, why)
    assert doc[1]["locals"] == [] and "locals_error" not in doc[1]


def test_a_deep_recursion_is_shown_whole():
    with started("deep_wait.py") as proc:
        (main,) = dump(proc.pid)
    downs = [f for f in main.frames if f.name == "down"]
    assert len(downs) == 1001 and not main.truncated and not main.torn
    assert [f.name for f in main.frames[:2]] == ["<module>", "down"]


def test_fifty_threads_are_each_named():
    with started("many_threads.py") as proc:
        threads = dump(proc.pid)
    names = sorted(t.name for t in threads)
    assert names == sorted(["MainThread"] + ["worker-%d" % i for i in range(50)])
    assert len({t.native_id for t in threads}) == 51
    for t in threads:
        if t.name != "MainThread":
            assert "worker" in [f.name for f in t.frames], t


def test_a_spinning_thread_is_seen_on_a_cpu_and_holding_the_gil():
    with started("spinner.py") as proc:
        seen = [by_name(dump(proc.pid))["spinner"] for _ in range(20)]
    assert all(t.frames[-1].name == "spin" for t in seen)
    assert any(t.on_cpu for t in seen)
    assert any(t.has_gil for t in seen)
    assert any("on CPU" in t.status() and "has GIL" in t.status() for t in seen)


def test_a_thread_waiting_for_the_gil_says_so_where_the_version_publishes_it():
    with started("contention.py") as proc:
        seen = [dump(proc.pid) for _ in range(30)]
    spinners = [t for threads in seen for t in threads if t.name.startswith("spinner")]
    if sys.version_info < (3, 15):
        # Before 3.15 a thread state does not say it waits for the GIL.
        assert all(t.waiting_gil is None for t in spinners)
        assert not any("waiting for GIL" in t.status() for t in spinners)
        return
    waiting = [t for t in spinners if t.waiting_gil]
    assert waiting, [(t.name, t.has_gil, t.waiting_gil) for t in spinners]
    # The waiter is said to be so, not idle. (Whether it held the GIL is read apart, from
    # the GIL's last holder, an instant before: the two may overlap.)
    assert all("waiting for GIL" in t.status() and "idle" not in t.status() for t in waiting)
    # The main thread, blocked on stdin, waits for nothing of the kind. (Just after it said
    # "ready", it may still wait for the GIL back from its write, at the print.)
    read_line = line_of("contention.py", "sys.stdin.readline()")
    mains = [t for threads in seen for t in threads
             if t.name == "MainThread" and t.frames and t.frames[-1].line == read_line]
    assert mains and not any(t.waiting_gil for t in mains)
    doc = as_json(proc.pid, seen[0])
    assert all("waiting_gil" in t for t in doc["threads"])


def test_blocking_stops_the_target_for_the_read_only():
    with started("spinner.py") as proc:
        out = run_rprofile("dump", "--pid", str(proc.pid), "--blocking", check=False)
        if out.returncode == 2 and "not permitted" in out.stderr:
            pytest.skip(out.stderr.strip())
        assert out.returncode == 0, out.stderr
        assert "read while stopped (--blocking)" in out.stdout.splitlines()[0]
        assert '"spinner"' in out.stdout and "in spin" in out.stdout
        assert tracer_of(proc.pid) == 0
    # (started() checked that it then ran to its end.)


def test_blocking_reads_the_locals_while_the_target_is_stopped():
    with started("locals.py") as proc:
        out = run_rprofile("dump", "--pid", str(proc.pid), "--blocking", "--locals", "--json",
                           check=False)
        if out.returncode == 2 and "not permitted" in out.stderr:
            pytest.skip(out.stderr.strip())
        assert out.returncode == 0, out.stderr
        assert tracer_of(proc.pid) == 0
    (thread,) = json.loads(out.stdout)["threads"]
    check_hold_locals({v["name"]: (v["value"], v["type"]) for v in thread["frames"][-1]["locals"]})


def test_subprocesses_are_dumped_too():
    with started("parent.py") as proc:
        out = run_rprofile("dump", "--pid", str(proc.pid), "--subprocesses").stdout
        doc = json.loads(run_rprofile("dump", "--pid", str(proc.pid), "--subprocesses",
                                      "--json").stdout)
    heads = [h for h in out.splitlines() if h.startswith("Stack dump for PID")]
    assert len(heads) == 2 and heads[0].startswith("Stack dump for PID %d " % proc.pid)
    assert "in child_waits" in out
    pids = [p["pid"] for p in doc["processes"]]
    assert pids[0] == proc.pid and len(pids) == 2


def test_a_process_that_exits_during_the_dump_gives_a_dump_or_one_line():
    for _ in range(10):
        short = subprocess.Popen([sys.executable, "-c", "pass"])
        r = run_rprofile("dump", "--pid", str(short.pid), check=False)
        short.wait()
        assert r.returncode in (0, 2), r.stderr
        assert "Traceback" not in r.stderr
        if r.returncode == 2:
            assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("args, says", [
    (["--pid", "0"], "--pid must be a process id > 0"),
    ([], "--pid"),
    (["--pid", "x"], "invalid int value"),
    (["--pid", "999999999"], "no such process"),
])
def test_bad_input_is_one_line_and_status_2(args, says):
    r = run_rprofile("dump", *args, check=False)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr
    if says:
        assert says in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 3


def test_a_process_that_is_not_python_is_refused_in_one_line():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        r = run_rprofile("dump", "--pid", str(sleeper.pid), check=False)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("rprofile dump: error: ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_command_line_help_names_dump():
    assert "rprofile dump --pid PID" in run_rprofile("--help").stdout
