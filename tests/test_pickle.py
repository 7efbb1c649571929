"""Pickled profiles (issue 28): `rprofile.Stats` objects (cProfile's, rprofile's and the
`profile` module's files, profilers, merges, 3.15-style sampled files, data only pstats' code
holds), profiler snapshots and sampling runs pickle and unpickle equal, on every protocol from 2,
through a `multiprocessing` queue and back from a `ProcessPoolExecutor` under spawn; bad
payloads raise `pickle.UnpicklingError`."""

import concurrent.futures
import copy
import cProfile
import io
import marshal
import multiprocessing
import os
import pickle
import profile
import pstats
import sys
import threading

import pytest

import rprofile
from rprofile import Stats
from rprofile.stats import SampledStats, _restore_stats, _StatsCore
from sampler_support import sampler_unsupported
from support import Tick

PROTOCOLS = list(range(2, pickle.HIGHEST_PROTOCOL + 1))


def fib(k):
    return k if k < 2 else fib(k - 1) + fib(k - 2)


def work(n):
    """Recursion (nc != cc), builtins, a callee called from two callers."""
    def twice():
        return fib(5)

    return [fib(k) for k in range(n)] + sorted(range(n)) + [twice(), fib(4)]


def _profiled(prof, n=12):
    prof.runcall(work, n)
    return prof


def _file(tmp_path, name, prof):
    path = str(tmp_path / name)
    _profiled(prof).dump_stats(path)
    return path


def _sampled_file(tmp_path):
    """A file as Python 3.15's profiling.sampling writes it (sample counts, the marker key)."""
    main, f, g = ("/app/run.py", 3, "main"), ("/app/lib/w.py", 10, "f"), ("~", 0, "<len>")
    stats = {main: (0, 7, 0.0, 0.007, {}),
             f: (4, 6, 0.004, 0.006, {main: 6, f: 1}),
             g: (3, 3, 0.003, 0.003, {f: (3, 3, 0.003, 0.003)}),
             ("__sampled__",): True}
    path = str(tmp_path / "sampled.pstats")
    with open(path, "wb") as out:
        marshal.dump(stats, out)
    return path


def _general_file(tmp_path):
    """Data the engine does not hold (a float line number): pstats' own code runs on it."""
    odd, main = ("/app/odd.py", 7.5, "odd"), ("/app/run.py", 1, "main")
    stats = {odd: (1, 2, 0.001, 0.002, {main: (1, 1, 0.001, 0.002)}),
             main: (1, 1, 0.0, 0.002, {})}
    path = str(tmp_path / "odd.prof")
    with open(path, "wb") as out:
        marshal.dump(stats, out)
    return path


def _threads_profile():
    prof = rprofile.Profile(threads=True)
    prof.enable()
    t = threading.Thread(target=work, args=(10,), name="worker")
    t.start()
    work(8)
    t.join()
    prof.disable()
    return prof


SOURCES = {
    "cprofile-file": lambda d: Stats(_file(d, "cp.prof", cProfile.Profile())),
    "rprofile-file": lambda d: Stats(_file(d, "rp.prof", rprofile.Profile())),
    "rprofile-profile": lambda d: Stats(_profiled(rprofile.Profile())),
    # Integer times and plain call counts as callers.
    "profile-module": lambda d: Stats(_file(d, "p.prof", profile.Profile(timer=Tick()))),
    "merged": lambda d: Stats(_file(d, "cp.prof", cProfile.Profile()),
                              _file(d, "rp.prof", rprofile.Profile())),
    "added": lambda d: Stats(_profiled(rprofile.Profile())).add(
        _file(d, "cp.prof", cProfile.Profile()), Stats(_profiled(cProfile.Profile()))),
    "sampled-file": lambda d: Stats(_sampled_file(d)),
    "threads": lambda d: Stats(_threads_profile()),
    "general": lambda d: Stats(_general_file(d)),
}


def _hand_out_fcn_list(st):
    st.sort_stats("calls")
    st.fcn_list.reverse()  # the list handed out is the order from then on


def _edit_stats(st):
    # The dict handed out is the source of truth: a change to it must cross.
    key = next(iter(st.stats))
    cc, nc, tt, ct, callers = st.stats[key]
    st.stats[key] = (cc, nc + 3, tt, ct * 2, callers)


def _stale_callees(st):
    # pstats keeps callee lists made before an add: they cross as they are.
    st.calc_callees()
    st.add(Stats(st))


STATES = {
    "as loaded": lambda st: None,
    "sorted": lambda st: st.sort_stats("cumulative"),
    "sorted, reversed": lambda st: st.sort_stats("time", "name").reverse_order(),
    "stripped, sorted": lambda st: st.strip_dirs().sort_stats("name"),
    "sort_stats()": lambda st: st.sort_stats(),
    "fcn_list handed out": _hand_out_fcn_list,
    "stats edited": _edit_stats,
    "callees made": lambda st: st.sort_stats("tottime").calc_callees(),
    "stale callees": _stale_callees,
}


def reports(st):
    """Everything the reports print, restrictions included, into a string."""
    out = io.StringIO()
    saved, st.stream = st.stream, out
    try:
        st.print_stats()
        st.print_stats(3, "fib|main|f")
        st.print_callers()
        st.print_callees(0.5)
        st.print_callees()
    finally:
        st.stream = saved
    return out.getvalue()


def attributes(st):
    return (type(st), st.stats, st.fcn_list, st.files, st.total_calls, st.prim_calls,
            st.total_tt, st.top_level, st.max_name_len, st.sort_arg_dict,
            getattr(st, "sort_type", None))


def round_trip(obj, protocol=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(obj, protocol))


# -- Stats ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("source", list(SOURCES))
def test_stats_round_trip_equal_dicts_attributes_and_reports(tmp_path, source, state):
    st = SOURCES[source](tmp_path)
    STATES[state](st)
    want = reports(st)
    back = round_trip(st)
    assert reports(back) == want
    assert attributes(back) == attributes(st)
    assert back.stats is not st.stats
    # Further work on both gives the same results (the order and callee lists crossed).
    for s in (st, back):
        s.sort_stats("ncalls").reverse_order()
    assert reports(back) == reports(st)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("source", ["rprofile-file", "profile-module", "sampled-file",
                                    "general"])
def test_every_protocol(tmp_path, source, protocol):
    st = SOURCES[source](tmp_path)
    st.sort_stats("cumulative")
    want = reports(st)
    back = round_trip(st, protocol)
    assert attributes(back) == attributes(st)
    assert reports(back) == want


def test_the_classes_cross(tmp_path):
    sampled = Stats(_sampled_file(tmp_path))
    assert type(sampled) is SampledStats
    back = round_trip(sampled)
    assert type(back) is SampledStats
    # Built directly, a SampledStats takes only its own sort keys: that crosses too.
    direct = SampledStats(_sampled_file(tmp_path))
    assert round_trip(direct).sort_arg_dict == direct.sort_arg_dict
    round_trip(direct).sort_stats("nsamples")
    general = Stats(_general_file(tmp_path))
    assert type(general).__name__ == "Stats" and type(general) is not Stats
    back = round_trip(general)
    assert type(back) is type(general)
    # It is an engine Stats again once it loads data the engine holds, as the original is.
    path = _file(tmp_path, "rp.prof", rprofile.Profile())
    general.load_stats(path)
    back.load_stats(path)
    assert type(back) is type(general) is Stats


class MyStats(Stats):
    pass


def test_a_subclass_crosses_as_itself(tmp_path):
    st = MyStats(_file(tmp_path, "rp.prof", rprofile.Profile()))
    assert type(round_trip(st)) is MyStats


def test_an_empty_stats(tmp_path):
    st = Stats()
    back = round_trip(st)
    assert attributes(back) == attributes(st)
    assert reports(back) == reports(st)


def test_copies_are_equal_and_apart(tmp_path):
    st = Stats(_file(tmp_path, "rp.prof", rprofile.Profile())).sort_stats("time")
    for other in (copy.copy(st), copy.deepcopy(st)):
        assert attributes(other) == attributes(st)
        other.strip_dirs()
        assert other.stats != st.stats


def test_merging_unpickled_profiles_equals_merging_the_originals(tmp_path):
    a = Stats(_profiled(rprofile.Profile()))
    b = Stats(_file(tmp_path, "cp.prof", cProfile.Profile()))
    merged = Stats(a).add(b)
    again = round_trip(a).add(round_trip(b))
    assert again.stats == merged.stats
    assert reports(again.sort_stats("calls")) == reports(merged.sort_stats("calls"))


def test_data_pickle_cannot_pickle_fails_as_for_the_dict(tmp_path):
    # `python -m profile -o` (3.12+) keys its top level by a code object, which pickle refuses.
    import subprocess

    script = tmp_path / "prog.py"
    script.write_text("def f():\n    return 1\n\nf()\n")
    out = str(tmp_path / "x.prof")
    subprocess.run([sys.executable, "-m", "profile", "-o", out, str(script)], check=True,
                   timeout=120)
    theirs = pstats.Stats(out).stats
    if all(isinstance(k[2], str) for k in theirs):
        pytest.skip("this version's profile writes no code object")
    with pytest.raises(TypeError):
        pickle.dumps(theirs)
    with pytest.raises(TypeError):
        pickle.dumps(Stats(out))


# -- the stream ----------------------------------------------------------------------------------

def test_standard_streams_become_the_receivers(tmp_path):
    path = _file(tmp_path, "rp.prof", rprofile.Profile())
    assert round_trip(Stats(path)).stream is sys.stdout
    assert round_trip(Stats(path, stream=sys.stderr)).stream is sys.stderr
    assert round_trip(Stats(path, stream=sys.__stdout__)).stream is sys.stdout
    st = Stats(path)
    st.stream = None
    assert round_trip(st).stream is None


def test_other_streams_are_pickled_as_pickle_pickles_them(tmp_path):
    path = _file(tmp_path, "rp.prof", rprofile.Profile())
    text = io.StringIO()
    st = Stats(path, stream=text)
    st.print_stats()
    back = round_trip(st)
    assert back.stream is not text and back.stream.getvalue() == text.getvalue()
    # An open file cannot be pickled, as for pstats.Stats (which pickles no stream at all).
    with open(tmp_path / "out.txt", "w") as f:
        for cls in (Stats, pstats.Stats):
            with pytest.raises(TypeError):
                pickle.dumps(cls(path, stream=f))


# -- snapshots and sampling runs -----------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_snapshots_round_trip(protocol):
    prof = _profiled(rprofile.Profile())
    snap = prof._take_snapshot()
    back = round_trip(snap, protocol)
    assert type(back) is type(snap)
    assert back.to_dict() == snap.to_dict()
    assert back.marshal() == snap.marshal()
    assert round_trip(back).marshal() == snap.marshal()
    # A profiler's stats made from it, as from the original.
    assert Stats(back).stats == Stats(prof).stats


def test_thread_snapshots_round_trip():
    prof = _threads_profile()
    for ident, name, snap in prof._thread_snapshots():
        assert round_trip(snap).to_dict() == snap.to_dict()



def test_sampling_runs_round_trip():
    if sampler_unsupported():
        pytest.skip(sampler_unsupported())
    from rprofile.sampling import Sampler

    with Sampler(rate=500) as s:
        for _ in range(200):
            work(14)
    prof = s._samples()
    for protocol in PROTOCOLS:
        back = round_trip(prof, protocol)
        for attr in ("threads", "interval", "mode", "counts", "duration", "end"):
            assert getattr(back, attr) == getattr(prof, attr), attr
        assert back.summary() == prof.summary()
        assert list(Stats(back).stats.items()) == list(Stats(prof).stats.items())
        assert back.lines_report(120, 10) == prof.lines_report(120, 10)
        assert back.threads_table(120) == prof.threads_table(120)
    # A stopped Sampler pickles with its samples (a running one cannot: its thread is here).
    again = round_trip(s)
    assert again.stats().stats == s.stats().stats
    assert type(again.stats()) is SampledStats


# -- across processes ----------------------------------------------------------------------------

def worker_stats(n, path):
    """In a spawned process: profiles work(n), writes the stats file, returns the Stats (sorted)
    and its printed reports."""
    st = Stats(_profiled(rprofile.Profile(), n)).sort_stats("cumulative")
    st.dump_stats(path)
    return st, reports(st)


def put_stats(queue, n, path):
    queue.put(worker_stats(n, path))


def test_through_a_multiprocessing_queue_under_spawn(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    path = str(tmp_path / "child.prof")
    p = ctx.Process(target=put_stats, args=(queue, 9, path))
    p.start()
    try:
        st, text = queue.get(timeout=120)
    finally:
        p.join(60)
    assert p.exitcode == 0
    assert st.stats == pstats.Stats(path).stats
    assert reports(st) == text
    # The worker's Stats printed to its sys.stdout: here it prints to ours.
    assert st.stream is sys.stdout


def test_returned_from_a_process_pool_future_under_spawn(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    paths = [str(tmp_path / ("w%d.prof" % i)) for i in range(2)]
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        futures = [pool.submit(worker_stats, n, path) for n, path in zip((8, 11), paths)]
        results = [f.result(timeout=120) for f in futures]
    for (st, text), path in zip(results, paths):
        assert st.stats == pstats.Stats(path).stats
        assert reports(st) == text
    merged = Stats(results[0][0]).add(results[1][0])
    assert merged.stats == Stats(*paths).stats
    calls = {k[2]: v[1] for k, v in merged.stats.items()}
    assert calls["work"] == 2
    assert calls["fib"] == sum(fib_calls(k) for n in (8, 11) for k in range(n)) + 2 * (
        fib_calls(5) + fib_calls(4))


def fib_calls(k):
    return 1 if k < 2 else 1 + fib_calls(k - 1) + fib_calls(k - 2)


# -- bad payloads --------------------------------------------------------------------------------

class Crafted:
    """Pickles as a Stats whose payload is `payload`."""

    def __init__(self, payload):
        self.payload = payload

    def __reduce__(self):
        return (_restore_stats, (Stats, self.payload, None, {}))


def _payload(tmp_path):
    st = Stats(_file(tmp_path, "p.prof", profile.Profile(timer=Tick()))).sort_stats("time")
    st.calc_callees()
    return st.__reduce__()[1][1]


def test_bad_payloads_raise_unpickling_error(tmp_path):
    payload = _payload(tmp_path)
    assert isinstance(pickle.loads(pickle.dumps(Crafted(payload))), Stats)
    for bad in (b"", b"garbage", payload[:-1], payload[: len(payload) // 2],
                payload + b".", pickle.dumps({"a": 1})):
        with pytest.raises(pickle.UnpicklingError, match="rprofile.stats payload"):
            pickle.loads(pickle.dumps(Crafted(bad)))
    # Something an unpickler would import and call: refused, not run.
    with pytest.raises(pickle.UnpicklingError, match="unexpected opcode"):
        _StatsCore._from_pickle(pickle.dumps(os.system, 3))


def test_every_truncation_and_flipped_byte_is_an_error_or_a_stats(tmp_path):
    payload = _payload(tmp_path)
    for n in range(len(payload)):
        with pytest.raises(pickle.UnpicklingError):
            _StatsCore._from_pickle(payload[:n])
    loaded = 0
    for i in range(len(payload)):
        for bit in range(8):
            bad = bytearray(payload)
            bad[i] ^= 1 << bit
            try:
                core = _StatsCore._from_pickle(bytes(bad))
            except pickle.UnpicklingError:
                continue
            loaded += 1
            core.to_dict()
    # Flips inside a float or a count still read: the check is the structure, not a checksum.
    assert loaded > 0


def test_another_format_is_named(tmp_path):
    payload = _payload(tmp_path)
    kind = b"rprofile.stats"
    at = payload.index(kind) + len(kind)
    assert payload[at:at + 5] == b"J\x01\x00\x00\x00"  # the format number, BININT
    future = payload[:at] + b"J\x02\x00\x00\x00" + payload[at + 5:]
    with pytest.raises(pickle.UnpicklingError, match="format 2: this rprofile reads format 1"):
        pickle.loads(pickle.dumps(Crafted(future)))


def test_other_native_payloads_are_refused_by_kind(tmp_path):
    payload = _payload(tmp_path)
    snap_cls = type(rprofile.Profile()._take_snapshot())
    # A Stats payload is a stats model: a snapshot reads it.
    assert snap_cls._from_pickle(payload).to_dict() == _StatsCore._from_pickle(payload).to_dict()
    from rprofile._rprofile import SampledProfile

    with pytest.raises(pickle.UnpicklingError, match="not an rprofile.samples payload"):
        SampledProfile._from_pickle(payload)
    with pytest.raises(pickle.UnpicklingError):
        snap_cls._from_pickle(payload[:-3])
