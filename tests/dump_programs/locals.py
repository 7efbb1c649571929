"""A frame holding one local of each kind `rprofile dump --locals` shows, waiting for a line on
stdin; an outer frame holds a variable its inner function reads (a cell)."""
# ruff: noqa: F841 (its locals are there to be read from outside)
import sys


class Basket:
    pass


def hold(count):
    big = -(2 ** 100)
    ratio = 2.5
    text = "x" * 300
    raw = b"\x00bytes\xff"
    table = {"a": 1, "b": 2, "c": 3}
    items = [1, 2]
    pair = (1, "two")
    seen = {1, 2, 3, 4}
    basket = Basket()
    nothing = None
    flag = True
    print("ready", flush=True)
    return len(sys.stdin.readline()) + count + len(text)


def outer():
    shared = 7

    def inner():
        return hold(shared)

    return inner()


outer()
