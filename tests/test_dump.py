"""dump_stats writes the .prof file from the native totals without building the stats dict; the
file must read back (marshal.load) as exactly the dict create_stats gives, in the same order."""

import marshal

import pytest

import rprofile
from support import Tick


def odd_program():
    ns = {}
    # Non-ASCII and undecodable (surrogate-escaped) file names, and two lambdas on one line
    # (their rows collide on one key; the later one's row wins, callers are merged).
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


def rows(stats):
    """The dict with every callers dict turned into its item list, so order is compared too."""
    return [(k, v[:4], list(v[4].items())) for k, v in stats.items()]


@pytest.mark.parametrize("subcalls", [True, False])
def test_dump_file_reads_back_as_the_stats_dict(tmp_path, subcalls):
    work = odd_program()
    p = rprofile.Profile(Tick(), 0.001, subcalls=subcalls)
    p.runcall(work)
    path = tmp_path / "out.prof"
    p.dump_stats(path)
    with open(path, "rb") as f:
        loaded = marshal.load(f)
    assert rows(loaded) == rows(p.stats)
    assert any(k[0] == "bad\udcffname.py" for k in loaded)


def test_dump_stats_takes_a_fresh_snapshot_as_cprofile_does(tmp_path):
    p = rprofile.Profile(Tick(), 0.001)
    p.runcall(odd_program())
    p.create_stats()
    p.stats = {("x.py", 1, "f"): (1, 1, 0.5, 0.5, {})}
    path = tmp_path / "out.prof"
    with open(path, "wb") as f:
        marshal.dump(p.stats, f)  # what dump_stats must write for this profile
    expected = path.read_bytes()
    # dump_stats takes a new snapshot (create_stats) first, as cProfile's does.
    p.dump_stats(path)
    assert marshal.loads(path.read_bytes()) != marshal.loads(expected)
    assert marshal.loads(path.read_bytes()) == p.stats


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
