"""Generators' close() and throw() under profiling, with the default clock or a timer that
raises (argv[2]); the program's view (exceptions, tracebacks, sys.exc_info()) must be the
unprofiled one."""

import sys
import traceback

from prelude import Unraisable, emit, mod, table

TIMER = sys.argv[2]


class MyErr(Exception):
    pass


def gen_plain():
    yield 1
    yield 2


def gen_catch():
    try:
        yield 1
    except MyErr:
        yield "caught"
    yield 3


def gen_finally(log):
    try:
        yield 1
    finally:
        log.append("finally ran")


def gen_bad():
    try:
        yield 1
    finally:
        yield 2


def outer():
    r = yield from gen_catch()
    return r


def fresh_gen_function():
    ns = {}  # a new code object at each call
    exec("def fresh():\n    yield 1\n    yield 2\n", ns)
    return ns["fresh"]


def describe(got, sent):
    return [type(got).__name__, got is sent, got.args, got.__context__ is None,
            [f.name for f in traceback.extract_tb(got.__traceback__)]]


def scenario():
    out = []
    # throw() into a never-started generator whose code object the profiler has never seen.
    e = MyErr("fresh")
    g = fresh_gen_function()()
    try:
        g.throw(e)
    except MyErr as got:
        out.append(["fresh"] + describe(got, e))
    # throw() into a started generator that does not catch it.
    g = gen_plain()
    next(g)
    e = MyErr("started")
    try:
        g.throw(e)
    except MyErr as got:
        out.append(["started"] + describe(got, e))
    # throw() that the generator handles, and through yield from.
    g = gen_catch()
    next(g)
    out.append(["caught", g.throw(MyErr("z")), next(g)])
    g = outer()
    next(g)
    out.append(["delegated", g.throw(MyErr("d")), next(g)])
    # close(): finally blocks run, GeneratorExit never escapes.
    log = []
    g = gen_finally(log)
    next(g)
    out.append(["close", g.close(), log, g.gi_frame is None])
    g = gen_bad()
    next(g)
    try:
        g.close()
    except RuntimeError as got:
        out.append(["close_yields", str(got)])
    # throw() while another exception is being handled.
    try:
        raise KeyError("outer")
    except KeyError as handling:
        g = gen_plain()
        next(g)
        e = MyErr("nested")
        try:
            g.throw(e)
        except MyErr as got:
            out.append(["nested"] + describe(got, e) + [sys.exc_info()[1] is handling])
    out.append(["exc_info_clean", sys.exc_info() == (None, None, None)])
    return out


class Raising:
    def __call__(self):
        raise ValueError("timer")


# The rows compared: the generators' functions and methods, found by the label without its
# file's name (this file's name has "gen" in it).
WORDS = ("gen", "fresh", "outer")


def name_of(label):
    return label.split(":", 1)[1]


reference = scenario()
if TIMER == "raising":
    prof = mod.Profile(Raising())
else:
    prof = mod.Profile()
with Unraisable() as u:
    profiled = prof.runcall(scenario)
    tab = table(prof, times=False)
emit({"same_as_unprofiled": profiled == reference, "profiled": profiled,
      "timer_errors": sorted({t for t, _ in u.seen}),
      "rows": {k: v for k, v in tab.items() if any(w in name_of(k) for w in WORDS)}})
