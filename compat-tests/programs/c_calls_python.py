"""C functions calling back into Python: key functions, map, filter, reduce."""

import functools


def key(x):
    return -x


def double(x):
    return 2 * x


def odd(x):
    return x % 2


def add(a, b):
    return a + b


def main():
    data = [4, 1, 3, 2]
    sorted(data, key=key)
    data.sort(key=key)
    min(data, key=key)
    list(map(double, data))
    list(filter(odd, data))
    functools.reduce(add, data)
    dict.fromkeys(map(double, range(3)))
