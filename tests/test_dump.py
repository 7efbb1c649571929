"""Stats files and dicts in corner cases of cProfile's snapshot rules, compared with cProfile's
own under a counting timer: non-ASCII and undecodable file names, and two functions with one
label (the later row wins, callers are merged)."""

import cProfile
import marshal

import pytest

import rprofile
from support import Tick


def odd_program():
    ns = {}
    exec(compile("def here():\n    return 1\n", "caf\u00e9.py", "exec"), ns)
    exec(compile("def there():\n    return 2\n", "bad\udcffname.py", "exec"), ns)
    f, g = (lambda: ns["here"]()), (lambda: ns["there"]())

    def work():
        for _ in range(3):
            f()
        g()
        g()
        sorted([2, 1])
        "x".join(["a", "b"])

    return work


# The profiler's own `disable` row sorts by the address of its method table, which differs
# between the two libraries (and moves between cProfile runs): it is left out of the order.
DISABLE = ("~", 0, "<method 'disable' of '_lsprof.Profiler' objects>")


def rows(stats):
    """The dict as a list, callers dicts as item lists, so that order is compared too."""
    return [(k, v[:4], list(v[4].items())) for k, v in stats.items() if k != DISABLE]


@pytest.mark.parametrize("subcalls", [True, False])
def test_dump_file_and_stats_match_cprofile(tmp_path, subcalls):
    work = odd_program()
    work()
    loaded = {}
    for mod in (cProfile, rprofile):
        p = mod.Profile(Tick(), 0.001, subcalls=subcalls)
        p.runcall(work)
        path = tmp_path / (mod.__name__ + ".prof")
        p.dump_stats(path)
        with open(path, "rb") as f:
            loaded[mod] = marshal.load(f)
    # Rows in address order: the two lambdas' order decides which label row wins, in both.
    assert loaded[rprofile] == loaded[cProfile]
    assert rows(loaded[rprofile]) == rows(loaded[cProfile])
    assert any(k[0] == "bad\udcffname.py" for k in loaded[rprofile])


def test_dump_stats_takes_a_fresh_snapshot_as_cprofile_does(tmp_path):
    p = rprofile.Profile(Tick(), 0.001)
    p.runcall(odd_program())
    p.create_stats()
    p.stats = {("x.py", 1, "f"): (1, 1, 0.5, 0.5, {})}
    path = tmp_path / "out.prof"
    p.dump_stats(path)
    dumped = marshal.loads(path.read_bytes())
    assert ("x.py", 1, "f") not in dumped
    assert any(k[2] == "here" for k in dumped)


def test_stats_attribute_follows_create_stats():
    p = rprofile.Profile(Tick(), 0.001)
    with pytest.raises(AttributeError):
        p.stats
    p.runcall(sorted, [1])
    p.create_stats()
    first = p.stats
    assert first is p.stats, "built once, then the same dict"
    p.stats = {}
    assert p.stats == {}
    del p.stats
    with pytest.raises(AttributeError):
        p.stats
