"""List, dict and set comprehensions and generator expressions (inlined from 3.12 on)."""


def f(x):
    return x * 3


def main():
    [f(x) for x in range(5)]
    {x: f(x) for x in range(4)}
    {f(x) % 4 for x in range(6)}
    sum(f(x) for x in range(5))
    any(x > 2 for x in range(10))
    [[y for y in range(x)] for x in range(4)]
    list(x for x in (f(y) for y in range(3)))
