"""A profiler enabled in one thread and disabled in another (argv[2]: disable_elsewhere or
enable_elsewhere); afterwards a new profiler must work."""

import sys
import threading

from prelude import counts, emit, fresh_profiler, mod, outcome, work_a, work_b, work_c

SCEN = sys.argv[2]

out = {}
p = mod.Profile()
if SCEN == "disable_elsewhere":
    go, back = threading.Event(), threading.Event()

    def other():
        go.wait(30)
        out["other_disable"] = outcome(p.disable)
        work_c()
        back.set()

    t = threading.Thread(target=other)
    t.start()
    p.enable()
    work_a()
    go.set()
    back.wait(30)
    work_b()
    t.join()
    out["main_disable"] = outcome(p.disable)
else:
    ready, back = threading.Event(), threading.Event()

    def other():
        p.enable()
        work_a()
        ready.set()
        back.wait(30)
        work_c()

    t = threading.Thread(target=other)
    t.start()
    ready.wait(30)
    work_b()
    back.set()
    t.join()
    out["main_disable"] = outcome(p.disable)
out["counts"] = counts(p)
# Afterwards a new profiler works.
out["fresh_enable"], out["fresh"] = fresh_profiler(work_a)
emit(out)
