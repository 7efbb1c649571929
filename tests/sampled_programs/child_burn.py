"""Burns in child_work() for 1.2 s (found and read under load too), prints a line: run_child's."""
import time


def child_work():
    end = time.perf_counter() + 1.2
    while time.perf_counter() < end:
        pass


child_work()
print("child done", flush=True)
