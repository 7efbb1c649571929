"""Burns in child_work() for 0.3 s and prints a line (run_child.py's child)."""
import time


def child_work():
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        pass


child_work()
print("child done", flush=True)
