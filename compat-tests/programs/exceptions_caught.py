"""Exceptions raised in Python and in C, caught one or more frames up."""


class Custom(Exception):
    pass


def raiser(n):
    if n % 2:
        raise ValueError(n)
    return n


def two_levels(n):
    return raiser(n)


def chained():
    try:
        {}["missing"]
    except KeyError as e:
        raise Custom("wrapped") from e


def main():
    for i in range(6):
        try:
            two_levels(i)
        except ValueError:
            pass
    try:
        chained()
    except Custom:
        pass
    try:
        int("not a number")
    except ValueError:
        pass
    try:
        [].pop()
    except IndexError:
        pass
