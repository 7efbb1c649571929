"""Thousands of short-lived code objects: 3,000 functions made by exec(), each called i % 3 + 1
times and dropped at once. argv[2]: clear() the profiler after every that many functions (0:
never)."""

import sys

from prelude import Tick, emit, mod, table

N = 3000
CLEAR_EVERY = int(sys.argv[2])


def driver(prof):
    ns = {}
    for i in range(N):
        exec("def f%d(x):\n    return x + %d\n" % (i, i), ns)
        f = ns.pop("f%d" % i)
        for _ in range(i % 3 + 1):
            f(i)
        del f  # the function and (unless the profiler keeps it) its code object die here
        if CLEAR_EVERY and i % CLEAR_EVERY == CLEAR_EVERY - 1:
            prof.clear()


prof = mod.Profile(Tick(), 1.0)
prof.runcall(driver, prof)
tab = table(prof)
# Each exec compiled its own "<module>" code object; pstats keys collide for them (the stats
# dict keeps one), getstats() lists each.
modules = [e.callcount for e in prof.getstats()
           if not isinstance(e.code, str) and e.code.co_name == "<module>"]
emit({"table": tab, "module_entries": modules})
