"""Generators resumed every way a program resumes them: by a `for` loop, by `sum()` (a
built-in), by `next()`, by `yield from` and by a generator expression; each step is short, so a
sampler often reads a thread while a generator yields or resumes. Every stack through a
generator has `main` and `<module>` under it. Runs for the seconds given (default 2)."""
import sys
import time


def numbers(n):
    for i in range(n):
        yield i * 2


def squares(n):
    for x in numbers(n):
        yield x * x


def delegate(n):
    yield from squares(n)


def by_for(n):
    total = 0
    for x in squares(n):
        total += x
    return total


def by_sum(n):
    return sum(squares(n)) + sum(x + 1 for x in numbers(n))


def by_next(n):
    it = delegate(n)
    total = 0
    while True:
        try:
            total += next(it)
        except StopIteration:
            return total


def main(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += by_for(50) + by_sum(50) + by_next(50)
    return total


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
