"""Direct recursion: the same function is on the stack many times at once."""


def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    factorial(12)
    fib(10)
