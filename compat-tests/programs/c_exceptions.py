"""C functions and methods that raise, caught by the Python caller."""

import math


def main():
    for text in ("1", "x", "2", "y"):
        try:
            float.fromhex(text)
        except ValueError:
            pass
    try:
        next(iter([]))
    except StopIteration:
        pass
    try:
        math.sqrt(-1.0)
    except ValueError:
        pass
    try:
        {}.pop("k")
    except KeyError:
        pass
    try:
        getattr(object(), "missing")
    except AttributeError:
        pass
    try:
        "abc".index("z")
    except ValueError:
        pass
