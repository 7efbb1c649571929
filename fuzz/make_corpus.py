"""Writes the seed corpus for the marshal reader fuzzers (fuzz/corpus/marshal_reader/).

Run it with each interpreter whose stats files should be in the corpus; every run writes the
files of its own version (cProfile's and the pure-Python profile module's) and, with --edge, the
hand-made edge cases:

    PY=$(pyenv root)/versions
    $PY/3.10.13/bin/python fuzz/make_corpus.py
    $PY/3.13.0/bin/python fuzz/make_corpus.py
    $PY/3.12.1/bin/python fuzz/make_corpus.py --edge

The files are named *.marshal, not *.prof: the repository's .gitignore ignores *.prof.
The profiles use a fake, ticking timer so that their bytes do not depend on the machine's speed
(only on the interpreter version and the workload).
"""

import cProfile
import marshal
import os
import profile
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "marshal_reader")
TAG = "py%d.%d" % sys.version_info[:2]


class Tick:
    """A deterministic timer: each call advances 1 ms."""

    def __init__(self):
        self.t = 0

    def __call__(self):
        self.t += 1
        return self.t


# The workload: recursion (primitive vs total calls), a caller graph with several callers, built-in
# functions and methods, a generator, a class.
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def squares(n):
    for i in range(n):
        yield i * i


class Acc:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)
        return len(self.items)


def helper(acc, n):
    for x in squares(n):
        acc.add(x)
    return sorted(acc.items, reverse=True)


def work():
    acc = Acc()
    helper(acc, 5)
    fib(6)
    "-".join(str(i) for i in range(3))
    helper(acc, 3)
    return max(acc.items)


def write(name, data):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(data)
    print("%6d  %s" % (len(data), os.path.relpath(path)))


def dumped(prof):
    """The bytes Profile.dump_stats writes (marshal.dump of the stats dict, version 4)."""
    prof.create_stats()
    return marshal.dumps(prof.stats)


def profiles():
    p = cProfile.Profile(Tick(), 0.001)
    p.runcall(work)
    write("cprofile-%s.marshal" % TAG, dumped(p))
    p = profile.Profile(Tick())
    p.runcall(work)
    write("profile-%s.marshal" % TAG, dumped(p))


def edge_cases():
    fn = ("/src/app/mod.py", 12, "f")
    g = ("~", 0, "<built-in method builtins.len>")
    stats = {
        fn: (3, 2, 0.25, 1.5, {g: (1, 1, 0.0, 0.0)}),
        g: (7, 7, 1e-06, 1e-06, {fn: (7, 7, 1e-06, 1e-06)}),
    }
    # An empty stats file (a profiler that saw nothing).
    write("empty-dict.marshal", marshal.dumps({}))
    # Back-references: the same key tuple three times and shared strings (FLAG_REF + 'r').
    write("refs.marshal", marshal.dumps(stats))
    shared = [fn, fn]
    write("refs-nested.marshal", marshal.dumps((shared, shared, fn, (fn, g), {fn: shared})))
    # Ints of every size: 'i', and 'l' with 1..n 15-bit digits, both signs.
    big = [0, 1, -1, 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**62, 2**63 - 1, -(2**63),
           2**63, 2**64, -(2**64) - 1, 2**100, -(2**200), 3**300]
    write("bigints.marshal", marshal.dumps({fn: tuple(big) + ({g: (2**70, 1, 0.5, 0.5)},)}))
    # Text floats ('f', and 'x' for complex): marshal versions 0 and 1 write floats as repr.
    floats = (0.0, -0.0, 0.1, 1e-300, 1.5e300, float("inf"), -float("inf"), float("nan"), 1j,
              complex(-2.5, float("inf")))
    write("textfloat-v0.marshal", marshal.dumps((stats, floats), 0))
    write("textfloat-v1.marshal", marshal.dumps((stats, floats), 1))
    # Version 2: binary floats ('g', 'y'), no references; version 3: references, no short forms.
    write("binfloat-v2.marshal", marshal.dumps((stats, floats), 2))
    write("v3.marshal", marshal.dumps((stats, floats), 3))
    # Large tuples: '(' with a 4-byte size (>= 256 items), and a stats dict with 300 functions.
    write("large-tuple.marshal", marshal.dumps(tuple(range(-500, 500))))
    many = {("/src/m%d.py" % (i % 7), i, "f%d" % i): (i + 1, i + 1, i * 0.001, i * 0.002,
            {("/src/m0.py", 0, "f0"): (1, 1, 0.0, 0.0)} if i else {}) for i in range(300)}
    write("large-dict.marshal", marshal.dumps(many))
    # Every other type the reader accepts: None, bools, Ellipsis, StopIteration, bytes, str in
    # each form (short/long ASCII, interned, non-ASCII, lone surrogate), list, set, frozenset.
    misc = [None, True, False, ..., StopIteration, b"", b"\x00\xff", "", "a" * 300,
            sys.intern("interned_name"), "n\u00e9e \u2603 \U0001f600", "\udc80lone", [1, [2]],
            {1, "a", (2, 3)}, frozenset({b"x", None}), frozenset()]
    write("misc-types.marshal", marshal.dumps(misc))
    # Python 3.15's sampling profiler: direct/cumulative sample counts as (cc, nc), times of
    # samples x interval, callers as sample counts, and ("__sampled__",): True added last.
    sampled = {fn: (2, 5, 0.002, 0.005, {}), g: (3, 3, 0.003, 0.003, {fn: 3})}
    sampled[("__sampled__",)] = True
    write("sampled.marshal", marshal.dumps(sampled))


if __name__ == "__main__":
    profiles()
    if "--edge" in sys.argv[1:]:
        edge_cases()
