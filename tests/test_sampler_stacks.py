"""The sampler's second floor: every thread's Python call stack of another process, read from
outside: on 3.13-3.15 through the runtime's own debug offsets, on 3.10 to 3.12 through the
layout of their headers (src/sampler/versions.rs); other versions say they are not supported."""

import os
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from rprofile._rprofile._testing import _thread_stacks
from sampler_support import sampled_here

# The main thread and a second, named thread each run f -> g -> h and wait in h: the main
# thread on its stdin, the other on an Event. The child says "ready" with the second thread's
# ident once both are waiting.
CHILD = """\
import sys
import threading

ready = threading.Event()
done = threading.Event()


def f():
    g()


def g():
    h()


def h():
    if threading.current_thread() is threading.main_thread():
        ready.wait()
        print("ready", worker.ident, flush=True)
        sys.stdin.readline()
    else:
        ready.set()
        done.wait()


worker = threading.Thread(target=f, name="worker", daemon=True)
worker.start()
f()
"""


def _line_of(source, text):
    """The 1-based line of the only line of `source` whose stripped text is `text`."""
    found = [n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text]
    assert len(found) == 1, (text, found)
    return found[0]


def _stacks_unsupported():
    """None where this Python's stacks must be read (a failure to read them fails the test),
    else the reader's reason."""
    if sampled_here():
        return None
    try:
        _thread_stacks(os.getpid())
    except ValueError as e:
        return str(e)
    return None


@pytest.fixture
def child_script():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stacks_child.py")
        with open(path, "w") as f:
            f.write(CHILD)
        yield path


def _waits(frames, script, places):
    """Whether a thread's innermost frame of `script` is at one of `places`, under nothing but
    threading's `wait`s."""
    own = [i for i, f in enumerate(frames) if f[0] == script]
    return bool(own) and frames[own[0]] in places and all(
        f[2] == "wait" for f in frames[:own[0]])


def _settled_stacks(pid, worker_ident, script):
    """The child's stacks once both threads wait where they end up: the worker sets `ready`
    just before `done.wait()`, and the main thread prints "ready" just before reading stdin, so
    either may still be on its way when "ready" arrives. Read again up to 50 times, 20 ms apart
    (a read that races with them may also fail); the last read is returned either way."""
    places = {(script, _line_of(CHILD, "done.wait()"), "h"),
              (script, _line_of(CHILD, "sys.stdin.readline()"), "h")}
    stacks = {}
    for _ in range(50):
        try:
            stacks = dict(_thread_stacks(pid))
        except (OSError, ValueError):
            stacks = {}
        if (len(stacks) == 2 and worker_ident in stacks
                and all(_waits(frames, script, places) for frames in stacks.values())):
            break
        time.sleep(0.02)
    return stacks


def test_every_thread_shows_h_g_f_with_the_lines_of_its_calls(child_script):
    why = _stacks_unsupported()
    if why is not None:
        pytest.skip(why)
    child = subprocess.Popen([sys.executable, child_script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        word, worker_ident = child.stdout.readline().split()
        assert word == "ready"
        stacks = _settled_stacks(child.pid, int(worker_ident), child_script)
        expected = [
            (child_script, _line_of(CHILD, "h()"), "g"),
            (child_script, _line_of(CHILD, "g()"), "f"),
        ]
        main = [t for t in stacks if t != int(worker_ident)]
        assert len(stacks) == 2 and len(main) == 1, stacks
        main_frames = stacks[main[0]]
        worker_frames = stacks[int(worker_ident)]
        assert main_frames[0] == (child_script, _line_of(CHILD, "sys.stdin.readline()"), "h")
        assert main_frames[1:3] == expected
        assert main_frames[3] == (child_script, _line_of(CHILD, "f()"), "<module>")
        assert len(main_frames) == 4
        # Event.wait and Condition.wait are Python code: threading's frames come first.
        waits = 0
        while worker_frames[waits][0] == threading.__file__:
            waits += 1
        assert waits >= 1 and worker_frames[0][2] == "wait", worker_frames
        worker_frames = worker_frames[waits:]
        assert worker_frames[0] == (child_script, _line_of(CHILD, "done.wait()"), "h")
        assert worker_frames[1:3] == expected
        # Below f: threading's own frames (run, _bootstrap_inner, _bootstrap).
        assert all(frame[0] == threading.__file__ for frame in worker_frames[3:]), worker_frames
        assert worker_frames[-1][2] == "_bootstrap"
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()


def test_its_own_stack_is_read_too():
    why = _stacks_unsupported()
    if why is not None:
        pytest.skip(why)
    call_line = sys._getframe().f_lineno + 1
    stacks = dict(_thread_stacks(os.getpid()))
    frames = stacks[threading.get_ident()]
    # The innermost Python frame is this function, at the line of the call above.
    assert frames[0] == (__file__, call_line, "test_its_own_stack_is_read_too")


def test_an_unsupported_version_is_a_value_error_naming_it():
    why = _stacks_unsupported()
    if why is None:
        pytest.skip(f"Python {sys.version_info.major}.{sys.version_info.minor} is supported")
    assert f"Python {sys.version_info.major}.{sys.version_info.minor}" in why
    assert "not supported" in why


def test_a_process_that_is_not_python_is_a_value_error():
    child = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(ValueError, match=rf"process {child.pid} is not Python"):
            _thread_stacks(child.pid)
    finally:
        child.kill()
        child.wait()


BUSY_CHILD = """\
import sys


def down(n):
    return n if n == 0 else down(n - 1) + 1


print("ready", flush=True)
while True:
    for depth in range(50):
        down(depth)
"""


def test_a_running_target_is_read_many_times_without_a_crash():
    # Frames come and go while they are read: a read may fail (a torn pointer is an OSError or
    # a ValueError, a stack that changed under every try a ValueError), but never crashes or
    # hangs, and a read that succeeds is a stack the program had: down to <module>, never one
    # cut short. On 3.10 most reads of so fast a target are torn on a busy machine: reads go
    # on until 150 have succeeded.
    why = _stacks_unsupported()
    if why is not None:
        pytest.skip(why)
    child = subprocess.Popen([sys.executable, "-c", BUSY_CHILD], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        read = 0
        for _ in range(3000):
            if read == 150:
                break
            try:
                stacks = _thread_stacks(child.pid)
            except (OSError, ValueError):
                continue
            read += 1
            assert len(stacks) == 1
            for _, frames in stacks:
                assert frames[-1][2] == "<module>"
                assert all(name in ("down", "<module>") for _, _, name in frames), frames
        assert read == 150
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
