"""A small deterministic workload shared by the CLI fixture scripts.

It gives the profile table rows of several kinds: recursion (ncalls shown as "total/primitive"),
methods, a generator, a lambda, builtins, and an exception raised and caught.
"""


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Box:
    def __init__(self, value):
        self.value = value

    def double(self):
        return Box(self.value * 2)


def numbers(n):
    yield from range(n)


def main():
    fib(8)
    boxes = sorted((Box(i).double() for i in range(5)), key=lambda box: -box.value)
    try:
        int("not a number")
    except ValueError:
        pass
    return sum(numbers(10)) + len(boxes)


if __name__ == "__main__":
    main()
