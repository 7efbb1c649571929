"""os.fork() while profiling; the child leaves by os._exit or sys.exit (argv[2]) and sends its
counts to the parent through a pipe."""

import json
import os
import sys

from prelude import calls_of, emit, mod, table

EXIT = sys.argv[2]


def before():
    return 1


def child_work():
    return 2


def parent_work():
    return 3


def counts(tab):
    return {n: calls_of(tab, n) for n in ("before", "child_work", "parent_work")}


p = mod.Profile()
p.enable()
before()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        child_work()
        child_work()
        # os._exit: stats taken (and the profiler disabled) first; sys.exit: the child shuts
        # the interpreter down with the profiler still enabled.
        tab = table(p, times=False, snapshot=(EXIT == "sys_exit"))
        os.write(w, json.dumps(counts(tab)).encode())
    finally:
        os.close(w)
        if EXIT == "os_exit":
            os._exit(0)
    sys.exit(0)
os.close(w)
data = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
os.close(r)
_, status = os.waitpid(pid, 0)
parent_work()
emit({"child_exit": os.waitstatus_to_exitcode(status),
      "child": json.loads(data.decode() or "null"),
      "parent": counts(table(p, times=False))})
