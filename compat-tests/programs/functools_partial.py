"""functools.partial of Python functions, of builtins, of partials, and partialmethod."""

import functools


def power(base, exponent):
    return base**exponent


class Switch:
    def set(self, state):
        self.state = state

    on = functools.partialmethod(set, True)


def main():
    square = functools.partial(power, exponent=2)
    cube_of_two = functools.partial(power, 2)
    for i in range(3):
        square(i)
    cube_of_two(3)
    functools.partial(square)(5)
    functools.partial(int, base=2)("101")
    functools.partial(max, 0)(-1, 3)
    Switch().on()
