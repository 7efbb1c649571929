"""rprofile's marshal reader (the Stats engine's loader) against CPython's marshal.loads: the same
objects for real stats files (cProfile's, rprofile's, the pure-Python profile module's); for
damaged ones, the exception marshal.loads raises (type and message), or the same objects where it
succeeds."""

import ast
import cProfile
import inspect
import marshal
import os
import pathlib
import random
import subprocess
import sys
import sysconfig

import pytest

import rprofile
from rprofile._rprofile import _marshal_loads
from support import Tick

HERE = pathlib.Path(__file__).parent


def deep_equal(a, b):
    """Equal, with dict order and types compared too (1 == 1.0 == True would hide mistakes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def stats_files():
    """Marshal data of real stats files."""
    import importlib

    work = importlib.import_module("programs.recursion").main
    files = {}
    for mod in (cProfile, rprofile):
        p = mod.Profile(Tick(), 0.001)
        p.runcall(work)
        p.create_stats()
        files[mod.__name__ + "-marshal.dumps"] = marshal.dumps(p.stats)
    p = rprofile.Profile(Tick(), 0.001)
    p.runcall(work)
    p.create_stats()
    files["rprofile-writer"] = p.__dict__["_snapshot"].marshal()
    pck = os.path.join(sysconfig.get_paths()["stdlib"], "test", "pstats.pck")
    if os.path.exists(pck):  # written by the pure-Python profile module: int callers
        with open(pck, "rb") as f:
            files["profile-pstats.pck"] = f.read()
    return files


FILES = stats_files()


@pytest.mark.parametrize("name", sorted(FILES))
def test_real_stats_files_read_as_marshal_reads_them(name):
    data = FILES[name]
    assert deep_equal(_marshal_loads(data), marshal.loads(data))


def test_comparison_can_fail():
    assert not deep_equal({1: 1.0}, {1: 1})
    assert not deep_equal({1: 0, 2: 0}, {2: 0, 1: 0})


# Where rprofile's reader refuses on purpose what marshal.load does otherwise: a dict key or set
# item holding itself or a tuple still being read (marshal.load crashes hashing it) and a code
# object (marshal.load reads one, or fails in its fields). Only `python -m profile -o` writes a
# code object in a stats file: rprofile.Stats hands such a file to marshal.load, as pstats does.
DIVERGENT = {
    "bad marshal data (a key holds itself or a tuple still being read)",
    "bad marshal data (a code object is not stats data)",
}


def canon(o, seen=()):
    """repr, with set items sorted: their order follows string hashes, which differ between
    processes (the reference outcomes come from a child)."""
    if not isinstance(o, (list, tuple, dict, set, frozenset)) and type(o).__name__ != "frozendict":
        return repr(o)
    if id(o) in seen:
        return "..."
    seen += (id(o),)
    if hasattr(o, "items"):
        items = ["%s: %s" % (canon(k, seen), canon(v, seen)) for k, v in o.items()]
    else:
        items = [canon(x, seen) for x in o]
    if isinstance(o, (set, frozenset)):
        items.sort()
    return "%s(%s)" % (type(o).__name__, ", ".join(items))


def outcome(data):
    try:
        return "ok", canon(_marshal_loads(data))
    except (EOFError, ValueError, TypeError) as e:
        return type(e).__name__, str(e)


# CPython's marshal.loads is not safe on damaged data (it can crash the interpreter), so the
# reference outcomes come from child processes, restarted past any case that kills them. It also
# allocates whatever a damaged size claims (tens of seconds for one case): the children's memory is
# capped, and a case over the cap counts as a crash, not compared.
CHILD = inspect.getsource(canon) + r"""
import marshal, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
cases = marshal.load(open(sys.argv[1], "rb"))
for i in range(int(sys.argv[2]), len(cases)):
    try:
        out = "ok", canon(marshal.loads(cases[i]))
    except (EOFError, ValueError, TypeError) as e:
        out = type(e).__name__, str(e)
    sys.stdout.write("%d\t%s\t%s\n" % (i, out[0], ascii(out[1])))
    sys.stdout.flush()
"""


def reference_outcomes(cases, tmp_path):
    path = tmp_path / "cases.marshal"
    path.write_bytes(marshal.dumps(cases))
    results, start = {}, 0
    while start < len(cases):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(start)],
                              capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            i, kind, rep = line.split("\t", 2)
            results[int(i)] = (kind, ast.literal_eval(rep))
        start = max(results, default=-1) + 1
        if proc.returncode != 0 and start < len(cases):
            results[start] = ("crash", None)
            start += 1
    return [results[i] for i in range(len(cases))]


@pytest.mark.parametrize("name", sorted(FILES))
def test_damaged_files_fail_as_marshal_fails(name, tmp_path):
    data = FILES[name]
    rng = random.Random(name)
    cases = [data[:n] for n in range(0, len(data), max(1, len(data) // 100))]
    for _ in range(150):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    refs = reference_outcomes(cases, tmp_path)
    assert any(kind != "ok" for kind, _ in refs), "the damage must break some cases"
    for case, ref in zip(cases, refs):
        mine = outcome(case)  # must not crash, whatever CPython's reader does with it
        if ref[0] != "crash" and mine[1] not in DIVERGENT:
            assert mine == ref, (mine, ref, case[:60])


def graph_equal(a, b, seen=None):
    """deep_equal for objects that may hold themselves: also the same sharing, each container of
    `a` matched by one of `b` wherever it occurs."""
    if seen is None:
        seen = ({}, {})
    if type(a) is not type(b):
        return False
    if not isinstance(a, (list, tuple, dict, set)):
        return deep_equal(a, b)
    there, back = seen
    if id(a) in there or id(b) in back:
        return there.get(id(a)) is b and back.get(id(b)) is a
    there[id(a)], back[id(b)] = b, a
    if isinstance(a, dict):
        return list(a) == list(b) and all(graph_equal(a[k], b[k], seen) for k in a)
    if isinstance(a, set):
        return a == b
    return len(a) == len(b) and all(graph_equal(x, y, seen) for x, y in zip(a, b))


def _cyclic_values():
    a = []
    a.append(a)
    b = {}
    b["me"] = b
    c = [1, {"k": None}, (2, 3)]
    c[1]["k"] = c
    c.append(c)
    d = ([],)
    d[0].append(d)
    e = {("a.py", 1, "f"): (1, 1, 1.0, 1.0, {})}
    e[("a.py", 1, "f")][4][("b.py", 2, "g")] = e[("a.py", 1, "f")][4]
    f = [[], []]
    f[0].append(f[1])
    f[1].append(f[0])
    return {"list": a, "dict": b, "mixed": c, "tuple through a list": d, "callers": e,
            "two lists": f}


CYCLIC = _cyclic_values()


@pytest.mark.parametrize("name", sorted(CYCLIC))
def test_self_containing_data_reads_as_marshal_reads_it(name):
    data = marshal.dumps(CYCLIC[name])
    got, ref = _marshal_loads(data), marshal.loads(data)
    assert graph_equal(got, ref) and graph_equal(got, CYCLIC[name])
    assert not graph_equal(CYCLIC["list"], [[]]), "the comparison can fail"


# Hand-made references to containers being read, hashed as a dict key or set item.
HASHED_CYCLES = [
    b"\xfbr\x00\x00\x00\x00N0",                            # a dict keyed by itself
    b"\xbc\x01\x00\x00\x00r\x00\x00\x00\x00",             # a set holding itself
    b"\xbe\x01\x00\x00\x00r\x00\x00\x00\x00",             # a frozenset holding itself
    b"\xdb\x01\x00\x00\x00<\x01\x00\x00\x00)\x01r\x00\x00\x00\x00",   # {(the list,)}
    b"\xa9\x02[\x00\x00\x00\x00{r\x00\x00\x00\x00N0",      # ([], {the tuple: None})
    b"\xa9\x02N{r\x00\x00\x00\x00N0",                      # (None, {the tuple: None})
    b"\xa9\x01r\x00\x00\x00\x00",                          # a tuple holding itself
    b"[\x02\x00\x00\x00\xa9\x01)\x01r\x00\x00\x00\x00{r\x00\x00\x00\x00N0",  # t = ((t,),)
]


def test_references_to_containers_being_read_fail_as_marshal_fails(tmp_path):
    refs = reference_outcomes(HASHED_CYCLES, tmp_path)
    assert ("crash", None) in refs  # marshal.load crashes on some: those are refused
    for case, ref in zip(HASHED_CYCLES, refs):
        mine = outcome(case)
        if ref[0] == "crash":
            assert mine == ("ValueError", "bad marshal data (a key holds itself or a tuple "
                            "still being read)"), case
        else:
            assert mine == ref, (mine, ref, case)
