"""A Python timer that raises or returns the wrong thing (argv[2] picks which) while a small
workload runs."""

import sys

from prelude import Tick, Unraisable, emit, mod, table

KIND = sys.argv[2]


class Raising(Tick):
    def __call__(self):
        n = Tick.__call__(self)
        if n % 3 == 0:
            raise ZeroDivisionError("tick %d" % n)
        return n


def make_timer():
    t = Tick()
    return {
        "raises": (Raising(), 1.0),
        "str": (lambda: "12", None),
        "none": (lambda: None, None),
        "object": (lambda: object(), None),
        "float_with_unit": (lambda: t() + 0.5, 1.0),
        "float_seconds": (lambda: t() * 0.5, None),
        "nan": (lambda: float("nan"), None),
        "overflow_float": (lambda: 1e300, None),
        "overflow_int_unit": (lambda: 2 ** 70, 1.0),
        "overflow_int": (lambda: 2 ** 70, None),
    }[KIND]


def leaf(i):
    return i


def work(n):
    return sum([leaf(i) for i in range(n)])


timer, unit = make_timer()
prof = mod.Profile(timer, unit) if unit is not None else mod.Profile(timer)
with Unraisable() as u:
    result = prof.runcall(work, 4)
    tab = table(prof)
emit({"result": result, "unraisable": u.seen, "how": u.how, "table": tab})
