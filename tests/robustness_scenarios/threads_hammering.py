"""Five threads calling into one profiler, the GIL switched as often as it can be, with the
default clock, a C timer or a Python timer (argv[2])."""

import os
import sys
import threading
import time

from prelude import Unraisable, calls_of, emit, mod, table

KIND = sys.argv[2]
N, T = 3000, 4
sys.setswitchinterval(1e-6)


def leaf(i):
    return i


def body():
    for i in range(N):
        leaf(i)


def pytimer():
    x = 0
    for i in range(5):  # bytecode: the GIL may pass to another thread in here
        x += i
    return time.perf_counter()


timer = {"clock": None, "ctimer": time.perf_counter, "pytimer": pytimer}[KIND]
prof = mod.Profile(timer) if timer else mod.Profile()
out = {}
with Unraisable() as u:
    prof.enable()
    threads = [threading.Thread(target=body) for _ in range(T)]
    for t in threads:
        t.start()
    body()
    for t in threads:
        t.join()
    try:
        prof.disable()
        out["disable"] = "ok"
    except RuntimeError as e:
        out["disable"] = str(e)
    tab = table(prof, times=False, snapshot=True)
out["unraisable"] = u.seen
out["leaf"] = calls_of(tab, "leaf")
out["body"] = calls_of(tab, "body")
out["cc_le_nc"] = all(v[0] <= v[1] for v in tab.values())
emit(out)
if out["disable"] != "ok":
    os._exit(0)  # a profiler that cannot be disabled would keep timing the shutdown
