"""A profiler dropped (and collected) while enabled, plainly or in a reference cycle through its
timer (argv[2]: plain or cycle); what holds it, and whether a next profiler can start."""

import gc
import sys
import weakref

from prelude import Tick, emit, fresh_profiler, mod, work_a, work_b

CYCLE = sys.argv[2] == "cycle"

out = {}
if CYCLE:  # profiler -> timer -> profiler: only the garbage collector can free it
    timer = Tick()
    p = mod.Profile(timer, 1.0)
    timer.prof = p
    del timer
else:
    p = mod.Profile()
p.enable()
work_a()
ref = weakref.ref(p)
del p
gc.collect()
out["alive_after_collect"] = ref() is not None
work_a()
out["second_enable"], out["second"] = fresh_profiler(work_b)
gc.collect()
out["alive_after_second"] = ref() is not None
if sys.version_info >= (3, 12):
    M = sys.monitoring
    out["tool_taken"] = M.get_tool(M.PROFILER_ID) is not None
    # Release what the lost profiler holds, by hand.
    M.set_events(M.PROFILER_ID, 0)
    for name in dir(M.events):
        ev = getattr(M.events, name)
        if isinstance(ev, int) and ev and not ev & (ev - 1):
            M.register_callback(M.PROFILER_ID, ev, None)
    M.free_tool_id(M.PROFILER_ID)
    gc.collect()
    out["alive_after_release"] = ref() is not None
    out["third_enable"], out["third"] = fresh_profiler(work_b)
emit(out)
