"""Objects of a class with an `__init__`, made in a loop: from 3.13 the interpreter runs its own
code object (`_Py_InitCleanup`) in a frame between the caller and `__init__`. Runs for the
seconds given (default 2)."""
import sys
import time


class Point:
    def __init__(self, x):
        self.x = x
        self.y = sum(range(x % 50))


def make(n):
    return [Point(i) for i in range(n)]


def main(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        make(200)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
