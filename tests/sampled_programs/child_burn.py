"""Burns in child_work() for 0.6 s and prints a line (run_child.py's child): long enough for a
sampler that follows children to find it and read it on a loaded machine."""
import time


def child_work():
    end = time.perf_counter() + 0.6
    while time.perf_counter() < end:
        pass


child_work()
print("child done", flush=True)
