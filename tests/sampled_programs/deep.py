"""A recursion 1,000 frames deep that burns at the bottom."""
import sys
import time

sys.setrecursionlimit(5000)


def down(n):
    if n == 0:
        end = time.perf_counter() + 0.5
        while time.perf_counter() < end:
            pass
        return 0
    return down(n - 1) + 1


down(1000)
