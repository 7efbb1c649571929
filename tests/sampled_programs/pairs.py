"""Two call chains that never cross: main -> mid_a -> leaf_a and main -> mid_b -> leaf_b, in
turn, each call short, so that frames are freed and reused while a sampler reads them. A
sampled stack with leaf_b under mid_a (or leaf_a under mid_b) never happened. Runs for the
seconds given (default 2)."""
import sys
import time


def leaf_a(n):
    return sum(range(n))


def leaf_b(n):
    return sum(range(n))


def mid_a(n):
    return leaf_a(n) + 1


def mid_b(n):
    one = 1  # a frame a word bigger than mid_a's: the slot's two uses lie apart above it
    return leaf_b(n) + one


def main(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        for n in range(20):
            total += mid_a(n)
            total += mid_b(n)
    return total


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
