"""What the sampler's `cpu` and `gil` modes keep: which of another process's threads are on a
CPU (their state in /proc) and which holds the GIL (read from outside, src/sampler/status.rs):
a thread spinning in Python holds the GIL and runs; threads blocked on a lock or asleep do
neither."""

import collections
import subprocess
import sys
import time

import pytest

from rprofile._rprofile._testing import _gil_holder, _running_threads

# One thread spins in pure Python, one waits on a lock, one sleeps, and the main thread reads its
# stdin. Each names itself as `role native_id thread_state_address` once all are in place.
CHILD = """\
import ctypes
import threading
import time

ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
started = threading.Barrier(4)
lock = threading.Lock()
lock.acquire()
names = {}


def name(role):
    names[role] = (threading.get_native_id(), ctypes.pythonapi.PyThreadState_Get())
    started.wait()


def spin():
    name("spin")
    n = 0
    while True:
        n += 1


def locked():
    name("lock")
    lock.acquire()


def asleep():
    name("sleep")
    time.sleep(3600)


for target in (spin, locked, asleep):
    threading.Thread(target=target, daemon=True).start()
name("main")
for role, (native_id, tstate) in names.items():
    print(role, native_id, tstate, flush=True)
input()
"""

IDLE_CHILD = """\
print("ready", flush=True)
input()
"""


def _start(source, lines):
    """A child running `source`, and the first `lines` lines it prints, split into words."""
    child = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    return child, [child.stdout.readline().split() for _ in range(lines)]


def _stop(child):
    child.kill()
    child.wait()
    child.stdin.close()
    child.stdout.close()


def _in_its_wait(pid, tid, role):
    """Whether thread `tid` of `pid` sits in a system call, and the main thread in its read of
    stdin (not the futex of a wait for the GIL)."""
    task = "/proc/%d/task/%d/" % (pid, tid)
    with open(task + "syscall") as f:
        if f.read().startswith("running"):
            return False
    if role != "main":
        return True
    with open(task + "wchan") as f:
        return "futex" not in f.read()


def _switches(pid, tid):
    """How many times thread `tid` of `pid` gave up its CPU of its own accord."""
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    return None


def _wait_until_blocked(child, names, timeout=30.0):
    """Waits until the lock's, the sleep's and the main thread are in their waits at three
    reads 25 ms apart, without waking in between: a thread on its way there would be seen
    running, and one waiting for the GIL (which the spinner gives up every switch interval)
    wakes every few milliseconds."""
    deadline = time.monotonic() + timeout
    roles = ("lock", "sleep", "main")
    steady, last = 0, None
    while steady < 3:
        assert time.monotonic() < deadline, "the child's threads never blocked"
        blocked = all(_in_its_wait(child.pid, names[role][0], role) for role in roles)
        woke = [_switches(child.pid, names[role][0]) for role in roles]
        steady = steady + 1 if blocked and woke == last else 0
        last = woke
        time.sleep(0.025)


@pytest.fixture
def threads_child():
    child, lines = _start(CHILD, 4)
    try:
        names = {role: (int(native), int(tstate)) for role, native, tstate in lines}
        _wait_until_blocked(child, names)
        yield child, names
    finally:
        _stop(child)


def test_the_spinning_thread_holds_the_gil_and_the_blocked_ones_never(threads_child):
    child, names = threads_child
    holders = collections.Counter()
    for _ in range(200):
        holders[_gil_holder(child.pid)] += 1
        time.sleep(0.001)
    spin = names["spin"][1]
    assert holders[spin] > 100, (holders, names)
    for role in ("lock", "sleep", "main"):
        assert holders[names[role][1]] == 0, (role, holders, names)
    # Nothing else: the holder is the spinner, or nobody at an instant it let go.
    assert set(holders) <= {spin, None}, (holders, names)


def test_the_spinning_thread_runs_and_the_blocked_ones_do_not(threads_child):
    child, names = threads_child
    seen = collections.Counter()
    for _ in range(50):
        seen.update(_running_threads(child.pid))
        time.sleep(0.001)
    # A spinning thread is running or waiting for a CPU: state R at every read.
    assert seen[names["spin"][0]] == 50, (seen, names)
    for role in ("lock", "sleep", "main"):
        assert seen[names[role][0]] == 0, (role, seen, names)


def test_nobody_holds_the_gil_of_an_idle_process():
    child, lines = _start(IDLE_CHILD, 1)
    try:
        assert lines == [["ready"]]
        # Until it is in its read of stdin the main thread may still hold the GIL (CI, 3.13).
        deadline = time.monotonic() + 30
        while not _in_its_wait(child.pid, child.pid, "main"):
            assert time.monotonic() < deadline, "the child never blocked in its read"
            time.sleep(0.005)
        assert {_gil_holder(child.pid) for _ in range(20)} == {None}
        assert _running_threads(child.pid) == []
    finally:
        _stop(child)


def test_a_missing_process_is_process_lookup_error():
    child = subprocess.Popen(["true"])
    child.wait()
    with pytest.raises(ProcessLookupError):
        _running_threads(child.pid)
    with pytest.raises(ProcessLookupError):
        _gil_holder(child.pid)

