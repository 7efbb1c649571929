"""Builtin methods called through their unbound descriptors (list.append(l, x)).

_lsprof reports such a call as the bound method; a descriptor call without a first argument,
or with one of the wrong type, is not reported at all.
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
        list.append("not a list", 1)
    except TypeError:
        pass
    try:
        str.upper()
    except TypeError:
        pass
