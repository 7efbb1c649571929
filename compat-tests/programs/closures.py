"""Closures: nonlocal state, closures made in a loop, and closures three levels deep."""


def make_counter():
    count = 0

    def increment(step=1):
        nonlocal count
        count += step
        return count

    return increment


def make_adders(n):
    return [lambda x, i=i: x + i for i in range(n)]


def outer(a):
    def middle(b):
        def inner(c):
            return a + b + c

        return inner

    return middle


def main():
    counter = make_counter()
    for _ in range(5):
        counter()
    counter(10)
    for adder in make_adders(4):
        adder(1)
    outer(1)(2)(3)
