"""``yield from``: delegation to sub-generators, their return values, and C iterators."""


def inner(n):
    for i in range(n):
        yield i
    return n * 10


def middle(n):
    result = yield from inner(n)
    yield result
    yield from [1, 2]


def outer():
    yield from middle(2)
    yield from middle(3)


def main():
    list(outer())
    g = outer()
    next(g)
    next(g)
