"""A thread waits on a lock the main thread holds while the main thread burns."""
import threading
import time

lock = threading.Lock()
lock.acquire()
started = threading.Event()


def waiter():
    started.set()
    with lock:
        pass


def burner():
    end = time.perf_counter() + 0.8
    while time.perf_counter() < end:
        pass


t = threading.Thread(target=waiter, name="waiter")
t.start()
started.wait()
burner()
lock.release()
t.join()
