"""Generators closed when their consumer drops them: `first` returns the first item of `outer`,
which runs `middle`, which runs `inner`; only `inner` yields inside a `try`, and its `finally`
burns a known stretch. Dropping `outer` closes the three. 3.13+ clear a generator suspended
outside any `try` without running it, so `inner`'s `finally` runs under `first`, the frame that
dropped them; 3.12 runs each, and `inner` runs under `middle`. Under a tracer (instrumented
code) every version runs each. Runs for the seconds given (default 2)."""
import sys
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def inner():
    try:
        yield 1
    finally:
        burn(0.002)


def middle():
    for x in inner():
        yield x


def outer():
    for x in middle():
        yield x


def first():
    for x in outer():
        return x


def main(seconds):
    end = time.perf_counter() + seconds
    while True:
        first()
        if time.perf_counter() >= end:
            return


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
