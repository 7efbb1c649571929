"""One function sleeps, one burns CPU, each for the same time."""
import time


def sleeper():
    time.sleep(0.6)


def burner():
    end = time.perf_counter() + 0.6
    while time.perf_counter() < end:
        pass


sleeper()
burner()
