"""The pprof export (`dump_pprof`, `--pprof`): each file is decoded with the protobuf package
against our own description of the format (tests/pprof/profile.proto, compiled here with
grpc_tools.protoc) and checked for what readers rely on (string 0 is "", ids nonzero and
resolvable) and against the stats it was written from: totals, every function's own figures,
caller edges, names, files and lines. Where Go is installed, `go tool pprof` reads them too."""

import errno
import gzip
import importlib.util
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import rprofile
from rprofile import Stats
from report_support import cli
from sampler_support import sampler_unsupported

HERE = Path(__file__).resolve().parent

PROGRAM = textwrap.dedent("""\
    def leaf(n):
        return sum(range(n))

    def mid(n):
        for _ in range(5):
            leaf(n)

    def main():
        for _ in range(40):
            mid(3000)
        len("x")

    main()
    """)


def _work():
    """Calls with a dominant callee: leaf (200 calls) under mid (40), under main (1)."""
    def leaf(n):
        return sum(range(n))

    def mid(n):
        for _ in range(5):
            leaf(n)

    for _ in range(40):
        mid(3000)
    return leaf, mid


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    protoc = pytest.importorskip("grpc_tools.protoc")
    pytest.importorskip("google.protobuf")
    out = tmp_path_factory.mktemp("pb")
    rc = protoc.main(["protoc", "-I%s" % (HERE / "pprof"), "--python_out=%s" % out,
                      "profile.proto"])
    assert rc == 0
    spec = importlib.util.spec_from_file_location("profile_pb2", out / "profile_pb2.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Decoded:
    """A pprof file decoded and checked for the references readers follow."""

    def __init__(self, pb, path):
        self.p = pb.Profile()
        self.p.ParseFromString(gzip.decompress(Path(path).read_bytes()))
        self._check()

    def _check(self):
        p = self.p
        n = len(p.string_table)
        assert n and p.string_table[0] == ""
        for ids in ([f.id for f in p.function], [loc.id for loc in p.location],
                    [m.id for m in p.mapping]):
            assert 0 not in ids and len(set(ids)) == len(ids)
        self.functions = {f.id: f for f in p.function}
        self.locations = {loc.id: loc for loc in p.location}
        mappings = {m.id for m in p.mapping}
        for f in p.function:
            assert 0 <= f.name < n and 0 <= f.system_name < n and 0 <= f.filename < n
            assert self.s(f.name)
        for loc in p.location:
            assert loc.mapping_id in mappings and loc.line
            assert all(line.function_id in self.functions for line in loc.line)
        for t in list(p.sample_type) + [p.period_type]:
            assert 0 <= t.type < n and 0 <= t.unit < n
        assert 0 < p.default_sample_type < n and all(0 < c < n for c in p.comment)
        for s in p.sample:
            assert s.location_id and all(i in self.locations for i in s.location_id)
            assert len(s.value) == len(p.sample_type)
            assert all(0 < lab.key < n and 0 <= lab.str < n for lab in s.label)

    def s(self, i):
        return self.p.string_table[i]

    def types(self):
        return [(self.s(t.type), self.s(t.unit)) for t in self.p.sample_type]

    def frames(self, sample):
        """[(name, file, start line, line)] innermost first."""
        out = []
        for i in sample.location_id:
            line = self.locations[i].line[0]
            f = self.functions[line.function_id]
            out.append((self.s(f.name), self.s(f.filename), f.start_line, line.line))
        return out

    def totals(self):
        return [sum(s.value[i] for s in self.p.sample) for i in range(len(self.p.sample_type))]

    def flat(self):
        """{(name, file, start line): [values summed over samples it is innermost in]}."""
        out = {}
        for s in self.p.sample:
            name, file, start, _ = self.frames(s)[0]
            acc = out.setdefault((name, file, start), [0] * len(s.value))
            for i, v in enumerate(s.value):
                acc[i] += v
        return out


def _pprof_function(key):
    """How a stats key `(file, line, name)` is named in pprof: built-ins as pstats prints them
    ({...}), with no file."""
    file, line, name = key
    if file == "~" and line == 0:
        if name.startswith("<") and name.endswith(">"):
            name = "{%s}" % name[1:-1]
        return (name, "", 0)
    return (name, file, line)


def _check_against_stats(d, stats):
    """Totals, each function's own figures and each caller edge of `d` are those of `stats`
    (for sampled stats, samples where cProfile has calls)."""
    sampled = type(stats).__name__ == "SampledStats"
    count = "samples" if sampled else "calls"
    assert d.types() == [(count, "count"), ("cpu", "nanoseconds")]
    assert d.s(d.p.default_sample_type) == "cpu"
    calls = (lambda row: row[0]) if sampled else (lambda row: row[1])
    calls_total, ns_total = d.totals()
    assert calls_total == sum(calls(row) for row in stats.stats.values())
    assert abs(ns_total - stats.total_tt * 1e9) < 1.0001
    keys = {}
    for key, row in stats.stats.items():
        keys[_pprof_function(key)] = key
        for caller in row[4]:
            keys[_pprof_function(caller)] = caller
    flat = d.flat()
    assert set(flat) <= set(keys)
    for key, row in stats.stats.items():
        got_calls, got_ns = flat.get(_pprof_function(key), [0, 0])
        assert got_calls == calls(row), key
        assert abs(got_ns - row[2] * 1e9) < 1.0001, key
    for s in d.p.sample:
        frames = d.frames(s)
        assert len(frames) <= 2
        assert all(f[3] == f[2] for f in frames)  # locations at the first line
        if len(frames) == 2:
            callee, caller = (keys[f[:3]] for f in frames)
            edge = stats.stats[callee][4][caller]
            if isinstance(edge, int):  # the profile module's callers: counts, no times
                assert list(s.value) == [edge, 0]
                continue
            assert s.value[0] == (edge[1] if sampled else edge[0])
            assert abs(s.value[1] - edge[2] * 1e9) <= 1


def test_a_profile_as_caller_edges(pb, tmp_path):
    prof = rprofile.Profile()
    with prof:
        leaf, mid = _work()
        len("x")
    prof.dump_pprof(tmp_path / "p.pb.gz")
    stats = Stats(prof)
    d = Decoded(pb, tmp_path / "p.pb.gz")
    _check_against_stats(d, stats)
    flat = d.flat()
    code = leaf.__code__
    key = (code.co_name, code.co_filename, code.co_firstlineno)
    assert flat[key][0] == 200
    assert flat[("{built-in method builtins.len}", "", 0)][0] == 1
    # leaf's samples: called by mid (an edge) only.
    leaf_samples = [d.frames(s) for s in d.p.sample if d.frames(s)[0][:3] == key]
    assert [[f[0] for f in fr] for fr in leaf_samples] == [["leaf", "mid"]]
    system = {d.s(f.name): d.s(f.system_name) for f in d.p.function}
    assert system["leaf"] == "%s:%d(leaf)" % (code.co_filename, code.co_firstlineno)
    assert system["{built-in method builtins.len}"] == "<built-in method builtins.len>"


def test_cprofile_files_and_their_merge(pb, tmp_path):
    import cProfile

    c = cProfile.Profile()
    c.runcall(_work)
    c.dump_stats(tmp_path / "c.prof")
    r = rprofile.Profile()
    r.runcall(_work)
    r.dump_stats(tmp_path / "r.prof")
    one = Stats(str(tmp_path / "c.prof"))
    one.dump_pprof(str(tmp_path / "c.pb.gz"))
    _check_against_stats(Decoded(pb, tmp_path / "c.pb.gz"), one)
    merged = Stats(str(tmp_path / "c.prof"), str(tmp_path / "r.prof"))
    merged.dump_pprof(os.fsencode(tmp_path / "m.pb.gz"))  # a bytes path
    d = Decoded(pb, tmp_path / "m.pb.gz")
    _check_against_stats(d, merged)
    assert d.totals()[0] == one.total_calls + Stats(str(tmp_path / "r.prof")).total_calls
    assert d.s(d.p.comment[0]) == "c.prof + r.prof"


def test_the_profile_modules_caller_counts(pb, tmp_path):
    import profile

    p = profile.Profile()
    p.runcall(_work)
    stats = Stats(p)
    stats.dump_pprof(tmp_path / "p.pb.gz")
    _check_against_stats(Decoded(pb, tmp_path / "p.pb.gz"), stats)


def test_a_timeline_gives_whole_call_paths(pb, tmp_path):
    prof = rprofile.Profile(timeline=True)
    with prof:
        leaf, mid = _work()
    prof.dump_pprof(tmp_path / "t.pb.gz")
    stats = Stats(prof)
    d = Decoded(pb, tmp_path / "t.pb.gz")
    assert d.types() == [("calls", "count"), ("cpu", "nanoseconds")]
    paths = [[f[0] for f in d.frames(s)] for s in d.p.sample]
    assert ["leaf", "mid", "_work"] in [p[:3] for p in paths]
    assert any(p[:4] == ["{built-in method builtins.sum}", "leaf", "mid", "_work"]
               for p in paths)
    # The same calls as the stats, function by function; the same total time, up to the
    # rounding of two sums of the same readings.
    flat = d.flat()
    for key, row in stats.stats.items():
        assert flat.get(_pprof_function(key), [0])[0] == row[1], key
    calls_total, ns_total = d.totals()
    assert calls_total == stats.total_calls
    assert ns_total == pytest.approx(stats.total_tt * 1e9, rel=1e-6, abs=2)


def test_a_timeline_that_dropped_events_falls_back_to_the_edges(pb, tmp_path):
    prof = rprofile.Profile(timeline=True, buffer_size=100)
    with prof:
        _work()
    assert prof.timeline._counts()[1] > 0  # it dropped events
    prof.dump_pprof(tmp_path / "t.pb.gz")
    _check_against_stats(Decoded(pb, tmp_path / "t.pb.gz"), Stats(prof))


def _sampler_or_skip():
    unsupported = sampler_unsupported()
    if unsupported is not None:
        pytest.skip(unsupported)  # a version the sampler cannot read yet
    from rprofile.sampling import Sampler

    return Sampler


def _spin(seconds):
    import time

    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def test_a_sampling_run_by_stack_and_line(pb, tmp_path):
    Sampler = _sampler_or_skip()
    with Sampler(rate=500) as s:
        _spin(0.3)
    s.dump_pprof(tmp_path / "s.pb.gz")
    d = Decoded(pb, tmp_path / "s.pb.gz")
    assert d.types() == [("samples", "count"), ("wall", "nanoseconds")]
    assert (d.s(d.p.period_type.type), d.p.period) == ("wall", 2_000_000)
    samples, ns = d.totals()
    assert samples == sum(t[3] for t in s.threads) > 0
    assert abs(ns - samples * 2_000_000) < 1.0001
    # One sample per distinct (thread, stack).
    assert len(d.p.sample) == len({(tuple(x.location_id), tuple(
        (lab.key, lab.str, lab.num) for lab in x.label)) for x in d.p.sample})
    code = _spin.__code__
    last = max(line for _, _, line in code.co_lines() if line is not None)
    spun = [(d.frames(x), x) for x in d.p.sample
            if any(f[:3] == ("_spin", code.co_filename, code.co_firstlineno)
                   for f in d.frames(x))]
    assert spun
    for frames, x in spun:
        labels = {d.s(lab.key): lab for lab in x.label}
        assert d.s(labels["thread"].str) == "MainThread"
        assert labels["thread_id"].num in (t[0] or t[1] for t in s.threads)
        line = next(f[3] for f in frames if f[0] == "_spin")
        assert code.co_firstlineno < line <= last
    assert d.s(d.p.comment[-1]).startswith("rprofile: Sampled ")
    # Its stats (a SampledStats, no stacks) as caller edges, counting samples.
    stats = s.stats()
    stats.dump_pprof(tmp_path / "ss.pb.gz")
    _check_against_stats(Decoded(pb, tmp_path / "ss.pb.gz"), stats)


@pytest.fixture
def prog(tmp_path):
    """A folder with prog.py and its cProfile stats, c.prof."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    proc = cli("-m", "cProfile", "-o", "c.prof", "prog.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path


def test_the_command_lines(pb, prog):
    proc = cli("-m", "rprofile", "--pprof", "p.pb.gz", "prog.py", cwd=prog)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    d = Decoded(pb, prog / "p.pb.gz")
    flat = d.flat()
    assert flat[("leaf", "prog.py", 1)][0] == 200
    assert flat[("mid", "prog.py", 4)][0] == 40
    assert d.s(d.p.comment[0]) == "prog.py"
    proc = cli("-m", "rprofile.stats", "--pprof", "m.pb.gz", "c.prof", "c.prof", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    merged = Stats(str(prog / "c.prof"), str(prog / "c.prof"))
    _check_against_stats(Decoded(pb, prog / "m.pb.gz"), merged)


def test_the_sampling_command_line(pb, prog):
    _sampler_or_skip()
    # A second of spinning: long enough to be sampled on a busy machine.
    (prog / "spin.py").write_text("import time\nend = time.time() + 1\n"
                                  "while time.time() < end:\n    pass\n")
    proc = cli("-m", "rprofile", "--sample", "--mode", "cpu", "--pprof", "s.pb.gz",
                "spin.py", cwd=prog)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert "Sampled " in proc.stderr
    d = Decoded(pb, prog / "s.pb.gz")
    assert d.types() == [("samples", "count"), ("cpu", "nanoseconds")]
    assert any(f[0] == "<module>" and f[1].endswith("spin.py") and f[3] in (3, 4)
               for x in d.p.sample for f in d.frames(x))


@pytest.mark.parametrize("args, message", [
    (["-m", "rprofile", "--pprof", "no/such/dir/p.pb.gz", "prog.py"], "no such directory"),
    (["-m", "rprofile", "--pprof", ".", "prog.py"], "is a directory"),
    (["-m", "rprofile", "--sample", "--pprof", "no/such/dir/p.pb.gz", "prog.py"],
     "no such directory"),
    (["-m", "rprofile.stats", "--pprof", "no/such/dir/p.pb.gz", "c.prof"], "no such directory"),
    (["-m", "rprofile.stats", "--pprof", "p.pb.gz"], "--pprof needs at least one stats file"),
    (["-m", "rprofile.stats", "--pprof"], "--pprof needs a file name"),
    (["-m", "rprofile.stats", "--pprof", "p.pb.gz", "--compare", "c.prof", "c.prof"],
     "does not go with --compare"),
])
def test_bad_paths_are_one_line_usage_errors(prog, args, message):
    proc = cli(*args, cwd=prog)
    assert proc.returncode == 2, proc
    last = proc.stderr.strip().splitlines()[-1]
    assert message in last, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(prog / "p.pb.gz")


def test_errors_are_oserrors_with_errno(prog):
    stats = Stats(str(prog / "c.prof"))
    with pytest.raises(FileNotFoundError) as e:
        stats.dump_pprof(prog / "missing" / "p.pb.gz")
    assert e.value.errno == errno.ENOENT and e.value.filename == prog / "missing" / "p.pb.gz"
    with pytest.raises(IsADirectoryError):
        stats.dump_pprof(str(prog))
    # python -m profile -o keys its top level by a code object: pstats' code reads it, the
    # engine does not hold it.
    proc = cli("-m", "profile", "-o", "pm.prof", "prog.py", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(TypeError, match="shape pprof cannot show"):
        Stats(str(prog / "pm.prof")).dump_pprof(prog / "p.pb.gz")
    assert not os.path.exists(prog / "p.pb.gz")
    prof = rprofile.Profile()
    with prof:
        _work()
    with pytest.raises(FileNotFoundError):
        prof.dump_pprof(prog / "missing" / "p.pb.gz")
    from rprofile.sampling import Sampler

    with pytest.raises(RuntimeError):
        Sampler().dump_pprof(prog / "s.pb.gz")


GO = shutil.which("go")


@pytest.mark.skipif(GO is None, reason="go is not installed (tools/test-all installs it as root)")
def test_go_tool_pprof_reads_them(prog):
    stats = Stats(str(prog / "c.prof"))
    stats.dump_pprof(prog / "c.pb.gz")

    def top(*options):
        proc = subprocess.run([GO, "tool", "pprof", "-top", *options, "c.pb.gz"], cwd=prog,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        total = re.search(r"of (\d+)(ns)? total", proc.stdout)
        assert total, proc.stdout
        rows = proc.stdout.split("cum%", 1)[1].splitlines()[1:]
        # flat flat% sum% cum cum% name (which may hold blanks)
        return int(total.group(1)), rows[0].split(None, 5)[5], proc.stdout

    calls, _, _ = top("-sample_index=calls")
    assert calls == stats.total_calls
    ns, first, out = top("-unit=ns")
    assert abs(ns - stats.total_tt * 1e9) < 1.0001, out
    # The first row is the function with the most tottime: sum, called by leaf.
    busiest = max(stats.stats, key=lambda k: stats.stats[k][2])
    assert busiest == ("~", 0, "<built-in method builtins.sum>")
    assert first == "{built-in method builtins.sum}", out


def test_a_threads_profile_labels_each_threads_edges(pb, tmp_path):
    import threading

    prof = rprofile.Profile(threads=True)
    with prof:
        workers = [threading.Thread(target=_work, name="worker-%d" % i) for i in range(2)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        _work()
    prof.dump_pprof(tmp_path / "p.pb.gz")
    d = Decoded(pb, tmp_path / "p.pb.gz")
    label = {}
    for s in d.p.sample:
        assert [d.s(lab.key) for lab in s.label] == ["thread"]
        label.setdefault(d.s(s.label[0].str), []).append(s)
    snapshots = {name: snap for _, name, snap in prof._thread_snapshots()}
    assert set(label) == set(snapshots) == {"MainThread", "worker-0", "worker-1"}
    # Each thread's samples are its own stats' edges, as a profile of that thread alone.
    for name, samples in label.items():
        one = type(d.p)()
        one.CopyFrom(d.p)
        del one.sample[:]
        one.sample.extend(samples)
        (tmp_path / "one.pb.gz").write_bytes(gzip.compress(one.SerializeToString()))
        (tmp_path / "one.prof").write_bytes(snapshots[name].marshal())
        _check_against_stats(Decoded(pb, tmp_path / "one.pb.gz"),
                             Stats(str(tmp_path / "one.prof")))
        leaf = [s for s in samples if d.frames(s)[0][0] == "leaf"]
        assert sum(s.value[0] for s in leaf) == 200, name
    # The threads add up to the profile.
    assert d.totals()[0] == Stats(prof).total_calls
