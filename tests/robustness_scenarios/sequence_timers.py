"""A Python timer that returns a tuple or a list (or, for comparison, their sum); argv[2] picks
which."""

import sys

from prelude import Tick, Unraisable, emit, mod, table

KIND = sys.argv[2]
t = Tick()
timer, unit = {
    "tuple_int": (lambda: (t(), 2 * t.n), 1.0),          # n + 2n
    "sum_int": (lambda: 3 * t(), 1.0),
    "list_float": (lambda: [t() * 0.5, t.n * 0.25], None),  # 0.75 n seconds
    "sum_float": (lambda: t() * 0.75, None),
    "tuple_bad_item": (lambda: (t(), "x"), 1.0),
}[KIND]


def leaf(i):
    return i


def work(n):
    return [leaf(i) for i in range(n)]


prof = mod.Profile(timer, unit) if unit is not None else mod.Profile(timer)
with Unraisable() as u:
    prof.runcall(work, 3)
    tab = table(prof)
emit({"unraisable": u.seen, "table": tab})
