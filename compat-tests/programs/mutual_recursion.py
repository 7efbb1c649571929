"""Mutual recursion: recursion counted across a cycle of two and of three functions."""


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def a(n):
    return n if n <= 0 else b(n - 1) + 1


def b(n):
    return c(n - 1) if n > 0 else 0


def c(n):
    return a(n - 1) if n > 0 else 0


def main():
    is_even(15)
    is_odd(8)
    a(20)
