"""Recursion under profiling: argv[2] calls deep (argv[3] "deep") or unbounded until
RecursionError (argv[3] "unbounded")."""

import sys

from prelude import Tick, emit, mod, table

N, KIND = int(sys.argv[2]), sys.argv[3]
sys.setrecursionlimit(N + 1000 if KIND == "deep" else 3000)


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


def unbounded(n):
    return unbounded(n + 1)


def driver():
    if KIND == "deep":
        return rec(N)
    try:
        unbounded(0)
    except RecursionError:
        return "RecursionError"


prof = mod.Profile(Tick(), 1.0)
result = prof.runcall(driver)
tab = table(prof)
emit({"result": result,
      "rows": {k: v for k, v in tab.items() if k.endswith(("(rec)", "(unbounded)", "(driver)"))}})
