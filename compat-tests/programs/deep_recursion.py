"""Deep recursion: 800 nested frames of one function."""

import sys

DEPTH = 800


def down(n):
    return 0 if n == 0 else down(n - 1) + 1


def main():
    old = sys.getrecursionlimit()
    # The test runner's own frames sit below main(); leave them room.
    sys.setrecursionlimit(max(old, DEPTH + 1000))
    try:
        down(DEPTH)
    finally:
        sys.setrecursionlimit(old)
