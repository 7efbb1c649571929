"""Profiled code that calls disable(), clear(), disable() then enable(), or snapshot_stats() of
its own profiler (argv[2]) in the middle of a call."""

import sys

from prelude import Tick, emit, mod, table

WHAT = sys.argv[2]
holder = []


def leaf(i):
    return i


def f():
    leaf(1)
    if WHAT == "disable":
        holder[0].disable()
    elif WHAT == "clear":
        holder[0].clear()
    elif WHAT == "reenable":
        holder[0].disable()
        leaf(2)
        holder[0].enable()
    elif WHAT == "snapshot":
        holder[0].snapshot_stats()
    leaf(3)


def g():
    f()
    leaf(4)


prof = mod.Profile(Tick(), 1.0)
holder.append(prof)
prof.enable()
g()
leaf(5)
prof.disable()
emit(table(prof))
