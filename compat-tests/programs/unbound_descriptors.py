"""Builtin methods called through their unbound descriptors (list.append(l, x)).

_lsprof reports such a call as the bound method; a descriptor call without a first argument is
not reported at all. (Nor is one whose first argument has the wrong type, but cProfile 3.12.1 and
3.13.0 raise SystemError on that call, CPython issue #132250, so it is left out.)
"""


def main():
    items = []
    for i in range(3):
        list.append(items, i)
    str.upper("a")
    str.join(",", ["x", "y"])
    dict.get({"k": 1}, "k")
    set.add(set(), 1)
    bytes.hex(b"\x01")
    int.bit_length(255)
    dict.fromkeys("ab")
    f = list.pop
    f(items)
    try:
        str.upper()
    except TypeError:
        pass
