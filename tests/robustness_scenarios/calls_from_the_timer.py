"""A Python timer that calls disable() or clear() (argv[2]) of the profiler it times, letting the
refusal propagate or catching it (argv[3]); "reference" raises the refusal's error itself and
"plain" calls nothing."""

import sys

from prelude import Tick, Unraisable, emit, mod, table

WHAT, MODE = sys.argv[2], sys.argv[3]
holder, caught = [], []


class T(Tick):
    def __call__(self):
        n = Tick.__call__(self)
        if n == 5:
            if MODE == "reference":  # what the refusal must amount to: a timer that raises
                raise RuntimeError("cannot %s profiler in external timer" % WHAT)
            if MODE == "propagate":
                getattr(holder[0], WHAT)()
            elif MODE == "catch":
                try:
                    getattr(holder[0], WHAT)()
                except RuntimeError as e:
                    caught.append(str(e))
        return n


def leaf(i):
    return i


def work(n):
    return [leaf(i) for i in range(n)]


prof = mod.Profile(T(), 1.0)
holder.append(prof)
with Unraisable() as u:
    prof.runcall(work, 3)
    tab = table(prof)
emit({"unraisable": u.seen, "caught": caught, "table": tab})
