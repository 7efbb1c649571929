"""Forks two children with os.fork(): one burns in victim() until the parent kills it with
SIGKILL (after 0.3 s), the other burns in survivor() for 0.5 s and exits. The parent reaps both
and prints their pids as JSON."""
import json
import os
import signal
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def victim():
    burn(60)


def survivor():
    burn(0.5)


def start(work):
    pid = os.fork()
    if pid == 0:
        work()
        os._exit(0)
    return pid


killed = start(victim)
survived = start(survivor)
time.sleep(0.3)
os.kill(killed, signal.SIGKILL)
statuses = {pid: os.waitpid(pid, 0)[1] for pid in (killed, survived)}
print(json.dumps({"killed": killed, "survived": survived,
                  "statuses": [statuses[killed], statuses[survived]]}), flush=True)
