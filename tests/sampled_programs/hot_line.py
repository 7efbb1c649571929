"""One function with a hot line and a cold line."""
import time


def work():
    total = 0
    end = time.perf_counter() + 0.8
    while time.perf_counter() < end:
        total += sum(range(200))  # hot
    total += 1  # cold
    return total


work()
