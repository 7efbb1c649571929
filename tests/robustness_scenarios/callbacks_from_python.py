"""The profiler's sys.monitoring callbacks (3.12+) called from Python, badly and well."""

import sys

from prelude import calls_of, emit, mod, table

M = sys.monitoring
E = M.events
out = {}


def work():
    return 1


p = mod.Profile()
p.enable()
callbacks = {}
for name in ("PY_START", "PY_RETURN", "CALL", "C_RETURN"):
    ev = getattr(E, name)
    cb = M.register_callback(M.PROFILER_ID, ev, None)
    M.register_callback(M.PROFILER_ID, ev, cb)
    callbacks[name] = cb


def outcome(f, *a, **k):
    try:
        f(*a, **k)
        return "ok"
    except Exception as e:
        return type(e).__name__


for name, cb in callbacks.items():
    out[name] = [outcome(cb), outcome(cb, work.__code__, 0, x=1)]
out["new"] = outcome(type(callbacks["PY_START"]))
# Well-formed calls from Python are events like any other.
out["start"] = outcome(callbacks["PY_START"], work.__code__, 0)
out["return"] = outcome(callbacks["PY_RETURN"], work.__code__, 0, None)
out["call"] = outcome(callbacks["CALL"], work.__code__, 0, len, M.MISSING)
out["creturn"] = outcome(callbacks["C_RETURN"], work.__code__, 0, len, M.MISSING)
work()
p.disable()
out["work"] = calls_of(table(p, times=False), "work")
emit(out)
