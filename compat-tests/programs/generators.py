"""Generators: each resumption is a new call of the generator's code."""

import itertools


def countdown(n):
    while n > 0:
        yield n
        n -= 1


def naturals():
    n = 0
    while True:
        yield n
        n += 1


def squares(it):
    for x in it:
        yield x * x


def main():
    for _ in countdown(5):
        pass
    g = countdown(3)
    next(g)
    next(g)
    list(squares(countdown(4)))
    list(itertools.islice(naturals(), 6))
    list(zip(countdown(3), naturals()))
