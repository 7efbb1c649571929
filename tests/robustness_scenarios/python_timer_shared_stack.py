"""Three threads on one profiler's single stack (threads=False) with a Python timer, plain or
one that lets other threads run inside it (argv[2]); argv[3] calls per thread. Prints every
row's counts and times and the wall time around the run."""

import sys
import threading
import time

from prelude import Unraisable, emit, mod

KIND = sys.argv[2]
T, N = 3, int(sys.argv[3])
sys.setswitchinterval(1e-6)  # many GIL hand-overs, some of them inside the timer
start = threading.Barrier(T)  # the three run side by side


def leaf(i):
    return i + 1


def mid(i):
    return leaf(i) * 2


def work():
    start.wait()
    for i in range(N):
        mid(i)


def sleeping_timer():
    time.sleep(0)  # lets the other threads run (and deliver events) inside the timer
    return time.perf_counter()


timer = {"plain": lambda: time.perf_counter(), "sleep0": sleeping_timer}[KIND]
prof = mod.Profile(timer)  # threads=False: on 3.12+ every thread's events share one stack
threads = [threading.Thread(target=work) for _ in range(T)]
with Unraisable() as u:
    w0 = time.perf_counter()
    prof.enable()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prof.disable()
    wall = time.perf_counter() - w0
prof.create_stats()
emit({"wall": wall, "unraisable": u.seen,
      "rows": [[f[2], cc, nc, tt, ct] for f, (cc, nc, tt, ct, callers) in prof.stats.items()]})
