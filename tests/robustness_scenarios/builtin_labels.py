"""A builtin whose label is made by Python code (a __repr__ that raises, calls functions,
clears or disables the profiler: argv[2])."""

import sys

from prelude import emit, mod, table

MODE = sys.argv[2]
holder = []


class OddRepr:
    def __repr__(self):
        if MODE == "raise":
            raise ValueError("bad repr")
        if MODE == "calls":
            return "odd-" + str(sum(len(str(i)) for i in range(3)))
        if MODE == "clear":
            holder[0].clear()
        if MODE == "disable":
            holder[0].disable()
        return "odd"


class Y(list):
    append = OddRepr()  # what the label of list.append bound to a Y is made from


def work():
    y = Y()
    bound = list.append.__get__(y)
    bound(1)
    bound(2)
    return len(y)


p = mod.Profile()
holder.append(p)
out = {}
p.enable()
out["result"] = work()
try:
    p.disable()
    out["disable"] = "ok"
except Exception as e:
    out["disable"] = [type(e).__name__, str(e)]
tab = table(p, times=False)
out["rows"] = {k: v[:2] for k, v in tab.items()}
emit(out)
