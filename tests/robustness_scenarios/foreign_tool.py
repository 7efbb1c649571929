"""enable() while another tool holds sys.monitoring's profiler id (3.12+)."""

import sys

from prelude import calls_of, emit, mod, table

M = sys.monitoring
M.use_tool_id(M.PROFILER_ID, "someone else")
out = {}
try:
    mod.Profile().enable()
    out["enable"] = "ok"
except Exception as e:
    out["enable"] = [type(e).__name__, str(e)]
out["tool"] = M.get_tool(M.PROFILER_ID)
M.free_tool_id(M.PROFILER_ID)


def work():
    return 1


p = mod.Profile()
p.runcall(work)
out["after"] = calls_of(table(p, times=False), "work")
emit(out)
