"""What every robustness scenario imports: the profiler module named by argv[1] (`mod`), a
counting timer, a stats table in JSON-able form, an unraisable-hook recorder and the result
printer. A scenario runs as `python SCENARIO.py MODULE [ARGS...]`, MODULE being rprofile or
cProfile, and prints its result as one JSON line after the mark (tests/robustness_support.py
reads it)."""

import importlib
import json
import os
import re
import sys

MODNAME = sys.argv[1]
mod = importlib.import_module(MODNAME)
RESULT_MARK = "@@RESULT@@"


class Tick:
    """A counting timer: each call returns the next integer."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n


def label_of(key):
    return "%s:%d(%s)" % (os.path.basename(key[0]), key[1], key[2])


def table(prof, times=True, snapshot=False):
    """{label: [cc, nc, (tt, ct,) sorted callers]} from the profiler's stats dict."""
    if snapshot:
        prof.snapshot_stats()
    else:
        prof.create_stats()
    out = {}
    for key, (cc, nc, tt, ct, callers) in prof.stats.items():
        row = [cc, nc] + ([tt, ct] if times else [])
        row.append(sorted([label_of(c)] + list(v[:2]) + (list(v[2:4]) if times else [])
                          for c, v in callers.items()))
        out[label_of(key)] = row
    return out


def calls_of(tab, name):
    """nc of the one row for function `name` (0 if absent)."""
    rows = [v for k, v in tab.items() if k.endswith("(%s)" % name)]
    assert len(rows) <= 1, (name, rows)
    return rows[0][1] if rows else 0


class Unraisable:
    """Records what reaches sys.unraisablehook as [type name, message] in `seen`, and how it
    is introduced (the hook's err_msg without addresses, the object's type name) in `how`."""

    def __enter__(self):
        self.seen = []
        self.how = []
        self.old = sys.unraisablehook

        def hook(u):
            self.seen.append([type(u.exc_value).__name__, str(u.exc_value)])
            self.how.append([re.sub(r" at 0x[0-9a-f]+", "", u.err_msg or ""),
                             type(u.object).__name__])
        sys.unraisablehook = hook
        return self

    def __exit__(self, *exc):
        sys.unraisablehook = self.old


def work_a():
    return 1


def work_b():
    return 2


def work_c():
    return 3


def counts(prof):
    tab = table(prof, times=False)
    return {n: calls_of(tab, n) for n in ("work_a", "work_b", "work_c")}


def outcome(call):
    try:
        call()
        return "ok"
    except Exception as e:
        return [type(e).__name__, str(e)]


def fresh_profiler(work):
    """A new profiler of `mod` around a call of `work`: [enable()'s outcome, its counts]."""
    q = mod.Profile()
    enabled = outcome(q.enable)
    work()
    q.disable()
    return [enabled, counts(q)]


def emit(result):
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()
