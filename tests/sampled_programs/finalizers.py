"""Half the time in a finalizer: `make` returns and, as its frame is cleared (unlinked from
the thread's chain, not yet off the data stack), the object it made runs `__del__`, whose frame
lies after `make`'s; the other half in a direct call. Runs for the seconds given (default 2)."""
import sys
import time


def busy():
    t = time.perf_counter()
    while time.perf_counter() - t < 0.002:
        pass


class Dropped:
    def __del__(self):
        busy()


def make():
    kept = Dropped()  # noqa: F841 (freed as make returns)
    return 1


def direct():
    busy()


def main(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        make()
        direct()


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
