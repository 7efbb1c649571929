"""Lambdas, including two on one line: same (file, line, name) label, two code objects."""

inc, dec = (lambda x: x + 1), (lambda x: x - 1)


def main():
    for i in range(3):
        inc(i)
    for i in range(5):
        dec(i)
    sorted([3, 1, 2], key=lambda v: -v)
    list(map(lambda v: v * 2, range(4)))
    square = lambda v: v * v  # noqa: E731
    square(7)
