"""Many C functions and methods of builtin types and of C modules."""

import math
import operator


def main():
    data = [5, 3, 8, 1]
    len(data)
    sorted(data)
    min(data)
    max(data, key=abs)
    sum(data)
    abs(-3)
    divmod(17, 5)
    round(2.675, 2)
    isinstance(data, list)
    hasattr(data, "append")
    getattr(data, "missing", None)
    ",".join(["a", "b", "c"])
    "a b c".split()
    "hello".replace("l", "L")
    "{}-{}".format(1, 2)
    data.append(9)
    data.sort()
    data.index(8)
    d = {"k": 1}
    d.get("k")
    d.get("absent", 0)
    d.setdefault("n", []).append(1)
    list(d.items())
    s = set()
    s.add(1)
    s.update([2, 3])
    (1, 2, 1).count(1)
    b"hello world".find(b"world")
    bytearray(b"ab").extend(b"cd")
    int.from_bytes(b"\x01\x02", "big")
    (1024).to_bytes(2, "little")
    math.sqrt(16.0)
    math.gcd(12, 18)
    math.floor(2.5)
    operator.add(1, 2)
    repr(data)
    iter(data).__next__()
