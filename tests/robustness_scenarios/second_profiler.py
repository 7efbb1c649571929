"""A second profiler enabled while a first one runs; argv[2] and argv[3] name their modules
(rprofile or cProfile). argv[1] is imported but not used."""

import importlib
import sys

from prelude import counts, emit, outcome, work_a, work_b, work_c

A, B = sys.argv[2], sys.argv[3]
ma, mb = importlib.import_module(A), importlib.import_module(B)

out = {}
p1, p2 = ma.Profile(), mb.Profile()
p1.enable()
work_a()
out["enable2"] = outcome(p2.enable)
work_b()
out["disable2"] = outcome(p2.disable)
work_c()
out["disable1"] = outcome(p1.disable)
out["p1"], out["p2"] = counts(p1), counts(p2)
# Everything is released afterwards: a new profiler of either kind works.
for which, m in (("after_first", ma), ("after_second", mb)):
    q = m.Profile()
    out[which] = [outcome(q.enable), outcome(work_a), outcome(q.disable), counts(q)]
emit(out)
