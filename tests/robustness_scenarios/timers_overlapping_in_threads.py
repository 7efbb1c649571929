"""A Python timer entered by a second thread while the main thread is still inside it."""

import os
import sys
import threading
import time

from prelude import emit, mod

main = threading.main_thread()
a_in, b_in = threading.Event(), threading.Event()
armed, done = [False], {"a": False, "b": False}


def timer():
    t = threading.current_thread()
    if t is main and armed[0] and not done["a"]:
        done["a"] = True
        a_in.set()       # the main thread is inside the timer...
        b_in.wait(10)    # ...and lets the worker's event run the timer too
    elif t is not main and a_in.is_set() and not done["b"]:
        done["b"] = True
        b_in.set()
        time.sleep(0.2)  # the main thread leaves its timer meanwhile
    return time.perf_counter()


def leaf():
    return 1


p = mod.Profile(timer)
out = {}


def worker():
    if sys.version_info < (3, 12):
        p.enable()  # before 3.12 the hook is per thread
    a_in.wait(10)
    leaf()
    if sys.version_info < (3, 12):
        try:
            p.disable()
            out["worker_disable"] = "ok"
        except RuntimeError as e:
            out["worker_disable"] = str(e)


p.enable()
w = threading.Thread(target=worker)
w.start()
armed[0] = True
leaf()
w.join()
out["both_timers_overlapped"] = done["a"] and done["b"]
try:
    p.disable()
    out["disable"] = "ok"
except RuntimeError as e:
    out["disable"] = str(e)
emit(out)
if out["disable"] != "ok":
    os._exit(0)
