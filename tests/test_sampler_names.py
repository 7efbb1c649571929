"""The sampler's thread names: each thread of another process under the name `threading` gives
it, read from outside (src/sampler/names.rs): `threading._active` and each Thread's `_name`,
wherever the version keeps an instance's attributes."""

import json
import os
import subprocess
import sys
import threading

from rprofile._rprofile._testing import _thread_names

# Threads that wait on an Event under several kinds of name: plain, non-ASCII (a UCS-2 and a
# UCS-4 string), the default ("Thread-N (f)"), one renamed after its start, and one whose
# attributes were moved into a dict of its own (3.11+ keep them as values beside the class's
# shared keys until then). The child prints {ident: name} for threading.enumerate() as JSON.
CHILD = """\
import json
import sys
import threading

stop = threading.Event()


def f():
    stop.wait()


threads = [
    threading.Thread(target=f, name="worker", daemon=True),
    threading.Thread(target=f, name="\\u00dcn\\u00efc\\u00f6d\\u00e9-\\u540d\\u524d", daemon=True),
    threading.Thread(target=f, name="spool-\\U0001f9f5", daemon=True),
    threading.Thread(target=f, daemon=True),
    threading.Thread(target=f, name="before", daemon=True),
    threading.Thread(target=f, name="own-dict", daemon=True),
]
for t in threads:
    t.start()
threads[4].name = "renamed"
threads[5].__dict__ = dict(threads[5].__dict__)
print(json.dumps({t.ident: t.name for t in threading.enumerate()}), flush=True)
sys.stdin.readline()
"""


def _child(args):
    return subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, encoding="utf-8")


def _end(child):
    child.kill()
    child.wait()
    child.stdin.close()
    child.stdout.close()


def test_every_thread_of_another_process_under_its_threading_name():
    child = _child(["-c", CHILD])
    try:
        expected = {int(k): v for k, v in json.loads(child.stdout.readline()).items()}
        assert len(expected) == 7
        assert "Ünïcödé-名前" in expected.values() and "renamed" in expected.values()
        assert any(name.startswith("Thread-") and name.endswith(" (f)")
                   for name in expected.values())
        assert _thread_names(child.pid) == expected
    finally:
        _end(child)


def test_a_process_that_never_imported_threading_has_no_names():
    source = "import sys; print('threading' in sys.modules, flush=True); sys.stdin.readline()"
    child = _child(["-S", "-c", source])
    try:
        assert child.stdout.readline().strip() == "False"
        assert _thread_names(child.pid) == {}
    finally:
        _end(child)


def test_its_own_threads_are_named_too():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="own-\u540d", daemon=True)
    t.start()
    try:
        expected = {t.ident: t.name for t in threading.enumerate()}
        assert _thread_names(os.getpid()) == expected
    finally:
        stop.set()
        t.join()


# Threads start and end all the time beside a steady one.
CHURN = """\
import threading

steady = threading.Thread(target=threading.Event().wait, name="steady", daemon=True)
steady.start()
print("ready", flush=True)
n = 0
while True:
    n += 1
    batch = [threading.Thread(target=sum, args=([n],), name=f"churn-{n}-{i}") for i in range(4)]
    for t in batch:
        t.start()
    for t in batch:
        t.join()
"""


def test_threads_that_come_and_go_are_read_without_a_crash():
    # A thread may end (and its objects be freed) while it is read: it is left out, or the
    # whole read fails with an OSError or ValueError; never a crash, and most reads succeed.
    child = _child(["-c", CHURN])
    try:
        assert child.stdout.readline().strip() == "ready"
        read = 0
        for _ in range(300):
            try:
                names = _thread_names(child.pid)
            except (OSError, ValueError):
                continue
            read += 1
            values = sorted(names.values())
            assert "MainThread" in values and "steady" in values, values
            assert all(v in ("MainThread", "steady") or v.startswith("churn-") for v in values)
        assert read >= 150
    finally:
        _end(child)
