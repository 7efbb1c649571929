"""KeyboardInterrupt in the middle of a profiled run: raised by code, or SIGINT delivered by
_thread.interrupt_main, os.kill, signal.raise_signal or a timer thread (argv[2])."""

import _thread
import os
import signal
import sys
import threading
import time

from prelude import Tick, emit, mod, table

KIND = sys.argv[2]
# Python leaves SIGINT ignored when it starts ignoring it, as a shell's background job does:
# KeyboardInterrupt is what this scenario is about, whoever started the tests.
signal.signal(signal.SIGINT, signal.default_int_handler)
count = [0]


def step(i):
    count[0] += 1
    return i * 2


def raiser():
    raise KeyboardInterrupt("from code")


def mid():
    step(1)
    raiser()


def spin():
    if KIND == "interrupt_main":
        _thread.interrupt_main()
    elif KIND == "kill":
        os.kill(os.getpid(), signal.SIGINT)
    elif KIND == "raise_signal":
        signal.raise_signal(signal.SIGINT)
    elif KIND == "thread":
        threading.Timer(0.05, _thread.interrupt_main).start()
    deadline = time.monotonic() + 60
    i = 0
    while time.monotonic() < deadline:
        step(i)
        i += 1
    return "not interrupted"


prof = mod.Profile(Tick(), 1.0) if KIND == "code" else mod.Profile()
out = {"interrupted": False}
try:
    out["returned"] = prof.runcall(mid if KIND == "code" else spin)
except KeyboardInterrupt:
    out["interrupted"] = True
tab = table(prof, times=KIND == "code")
out["step_runs"] = count[0]
out["rows"] = {k: v for k, v in tab.items()
               if k.endswith(("(step)", "(spin)", "(mid)", "(raiser)"))}
emit(out)
