"""rprofile.Stats on files that are not stats files: the exception type pstats raises, the file
named in the message, and memory bounded by what marshal.load would read."""

import io
import marshal
import os
import subprocess
import sys

import pstats
import pytest

import rprofile

CHILD = r"""
import resource, sys
import {module} as m
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    m.Stats(sys.argv[1])
except Exception as e:
    kind = type(e).__name__
else:
    kind = "ok"
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(kind, (after - before) // 1024)
"""


def _load_in_child(module, path):
    out = subprocess.run([sys.executable, "-c", CHILD.format(module=module), path],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    kind, mib = out.split()
    return kind, int(mib)


@pytest.mark.parametrize("content", [b"\0", b"{\xe9", b"[\xff\xff\xff\x7f"],
                         ids=["zeros", "dict-then-junk", "huge-list-claim"])
def test_a_huge_file_of_junk_fails_fast_in_little_memory(tmp_path, content):
    path = tmp_path / "huge.prof"
    with open(path, "wb") as f:
        f.write(content)
        f.truncate(3 << 30)  # 3 GiB, sparse: no disk is used
    expected, _ = _load_in_child("pstats", str(path))
    kind, mib = _load_in_child("rprofile.stats", str(path))
    assert kind == expected and kind != "ok"
    assert mib < 64, "rprofile.Stats grew by %d MiB reading a junk file" % mib


@pytest.mark.parametrize("data", [b"", b"\xff", b"{", b"{)\x03", b"[\x01\x00\x00\x00i"],
                         ids=["empty", "bad-code", "open-dict", "truncated-key", "list"])
def test_damaged_files_raise_pstats_type_naming_the_file(tmp_path, data):
    path = str(tmp_path / "bad.prof")
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(Exception) as ref:
        pstats.Stats(path, stream=open(os.devnull, "w"))
    with pytest.raises(type(ref.value)) as got:
        rprofile.Stats(path, stream=open(os.devnull, "w"))
    assert type(got.value) is type(ref.value)
    if not isinstance(ref.value, (TypeError, AttributeError)) or "bad.prof" in str(ref.value):
        assert "bad.prof" in str(got.value)


def _same_report(tmp_path, stats, act):
    path = str(tmp_path / "s.prof")
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    texts = []
    for cls in (pstats.Stats, rprofile.Stats):
        out = io.StringIO()
        act(cls(path, stream=out))
        texts.append(out.getvalue())
    assert texts[1] == texts[0]


def test_nan_times_sort_as_pstats_sorts_them(tmp_path):
    nan = float("nan")
    stats = {("a.py", i, "f%d" % i): (1, 1, [0.5, nan, 0.25, nan, 1.0][i % 5], 1.0, {})
             for i in range(40)}
    _same_report(tmp_path, stats, lambda s: s.sort_stats("time", "name").print_stats())


def test_a_row_of_another_shape_added_later_prints_as_pstats(tmp_path):
    stats = {("a.py", 1, "f"): (1, 1, 0.5, 1.0, {}), ("b.py", 2, "g"): (2, 2, 0.25, 0.5, {})}

    def act(s):
        s.sort_stats("cumulative").print_stats()
        s.stats[("c.py", 1.5, "h")] = (1, 1, 0.0, 0.0, {})
        s.print_stats()
        s.print_callers()
        s.load_stats(path_again[0])
        s.print_stats()

    path_again = [None]
    path = str(tmp_path / "again.prof")
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    path_again[0] = path
    _same_report(tmp_path, stats, act)


# Marshal data holding itself, as marshal.dump writes a list or dict that contains itself (with
# a reference back to the container still being written). marshal.load builds the same cycle,
# and pstats then fails on it (or loads it) in its own code.
def _self_list():
    items = []
    items.append(items)
    return items


def _self_dict():
    d = {}
    d[("a.py", 1, "f")] = d
    return d


def _row_with_self_list(place):
    items = [1]
    items.append(items)
    row = [1, 1, 1.0, 1.0, {}]
    row[place] = items
    return {("a.py", 1, "f"): tuple(row)}


def _callers_holding_themselves():
    callers = {}
    callers[("b.py", 2, "g")] = callers
    return {("a.py", 1, "f"): (1, 1, 1.0, 1.0, callers), ("b.py", 2, "g"): (1, 1, 0.5, 0.5, {})}


def _tuple_through_a_list():
    t = ([],)
    t[0].append(t)
    return t


SELF_CONTAINING = {
    "list": _self_list,
    "dict": _self_dict,
    "row's callers a list": lambda: _row_with_self_list(4),
    "row's count a list": lambda: _row_with_self_list(0),
    "row's time a list": lambda: _row_with_self_list(2),
    "callers dict": _callers_holding_themselves,
    "tuple": _tuple_through_a_list,
}


def _outcome(thunk):
    try:
        thunk()
        return "ok"
    except Exception as e:
        return type(e), str(e)


@pytest.mark.parametrize("label", sorted(SELF_CONTAINING))
def test_self_containing_data_loads_or_fails_as_pstats(tmp_path, label):
    data = marshal.dumps(SELF_CONTAINING[label]())
    assert b"r" in data  # a reference back to a container
    path = str(tmp_path / "cycle.prof")
    with open(path, "wb") as f:
        f.write(data)
    results = []
    for cls in (pstats.Stats, rprofile.Stats):
        out = io.StringIO()
        holder = {}
        got = [_outcome(lambda: holder.setdefault("s", cls(path, stream=out)))]
        s = holder.get("s")
        if s is not None:  # loaded: the reports go the same way
            for report in ("print_stats", "print_callers", "print_callees"):
                got.append(_outcome(getattr(s, report)))
        results.append((got, out.getvalue()))
    # The exception type and message (pstats' own code raises it, for both), or the same
    # reports, and the same text ("Invalid timing data" included).
    assert results[1] == results[0]


def _masked(text):
    import re
    return re.sub(r" at 0x[0-9a-f]+", " at 0x?", text)


@pytest.mark.parametrize("pad", [0, 2_000_000], ids=["small", "over-probe-size"])
def test_profile_command_line_files_with_a_code_object_key_read_as_pstats(tmp_path, pad):
    # `python -m profile -o` keys its top level by the code object it ran; pstats reads it.
    script = tmp_path / "prog.py"
    script.write_text("def f():\n    return sum(range(10))\n\nfor i in range(3):\n    f()\n"
                      + "PAD = '%s'\n" % ("x" * pad))
    out = tmp_path / "x.prof"
    subprocess.run([sys.executable, "-m", "profile", "-o", str(out), str(script)],
                   check=True, timeout=120)
    codes = [k for k in pstats.Stats(str(out)).stats if not isinstance(k[2], str)]
    if pad:
        assert os.path.getsize(out) > 1 << 20  # read past the first megabyte's probe
    mine, theirs = io.StringIO(), io.StringIO()
    pstats.Stats(str(out), stream=theirs).sort_stats("cumulative").print_stats()
    stats = rprofile.Stats(str(out), stream=mine)
    stats.sort_stats("cumulative").print_stats()
    assert _masked(mine.getvalue()) == _masked(theirs.getvalue())
    assert set(stats.stats) == set(pstats.Stats(str(out)).stats)
    assert codes == [k for k in stats.stats if not isinstance(k[2], str)]


def test_a_code_object_is_refused_by_an_error_type_of_its_own():
    # What rprofile.Stats turns to marshal.loads on (above); a ValueError with marshal's wording.
    from rprofile._rprofile import _CodeObjectData, _marshal_loads

    data = marshal.dumps({("f.py", 1, "f"): compile("x = 1", "f.py", "exec")})
    with pytest.raises(_CodeObjectData) as caught:
        _marshal_loads(data)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == "bad marshal data (a code object is not stats data)"
    with pytest.raises(ValueError) as other:
        _marshal_loads(b"\xff")
    assert type(other.value) is ValueError
