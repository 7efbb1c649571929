"""A recursion 1,000 frames deep that waits at the bottom for a line on stdin."""
import sys

sys.setrecursionlimit(5000)


def down(n):
    if n == 0:
        print("ready", flush=True)
        return len(sys.stdin.readline())
    return down(n - 1) + 1


down(1000)
