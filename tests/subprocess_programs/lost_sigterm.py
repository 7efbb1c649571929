"""Run as a child: waits on a multiprocessing lock that nobody releases, while a thread sends
SIGTERM to itself. The signal reaches that thread, not the waiting main thread, which no signal
then interrupts: SIGTERM's default action ends the process at once; a Python handler would
never run (as when SIGTERM comes just before the main thread blocks)."""
import multiprocessing
import signal
import threading
import time


def waiting(lock):
    lock.acquire()


def poke():
    time.sleep(0.2)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)


lock = multiprocessing.Lock()
lock.acquire()
threading.Thread(target=poke, daemon=True).start()
waiting(lock)
