"""Two threads deadlocked on two locks, each holding one and waiting for the other; the main
thread says "ready" once both wait, then waits for a line on stdin."""
import sys
import threading
import time

a, b = threading.Lock(), threading.Lock()
both = threading.Barrier(2)


def first():
    with a:
        both.wait()
        b.acquire()  # first waits here


def second():
    with b:
        both.wait()
        a.acquire()  # second waits here


threads = [threading.Thread(target=first, name="first", daemon=True),
           threading.Thread(target=second, name="second", daemon=True)]
for t in threads:
    t.start()
while not (a.locked() and b.locked() and both.n_waiting == 0):
    time.sleep(0.01)
time.sleep(0.1)  # both are past the barrier and in acquire()
print("ready", flush=True)
sys.stdin.readline()
