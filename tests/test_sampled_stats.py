"""rprofile.Stats on the stats files of Python 3.15's sampling profiler (``profiling.sampling``).

Such a file is a stats dict of sample counts with the key ``("__sampled__",)`` added. 3.15's
pstats pops that key and makes the object a ``SampledStats``, which prints pstats' reports with
sampled column titles; older pstats fails on the key. rprofile.Stats reads them as 3.15 does on
every version. The expected text is built here from 3.15's format rules and the test's dict.
"""

import io
import marshal
import os
import time

import pstats
import pytest

import rprofile
from rprofile.stats import SampledStats

MARKER = ("__sampled__",)
INTERVAL_USEC = 1000

# 3.15's SampledStats.print_title and print_call_subheading.
SAMPLED_TITLE = " nsamples  tottime persample cumtime persample filename:lineno(function)\n"
SAMPLED_SUBHEADING = "    nsamples  tottime  cumtime"

MAIN = ("/app/run.py", 30, "main")
WORK_A = ("/app/work.py", 10, "work")
WORK_B = ("/app/work.py", 12, "work")  # the same function sampled at another line
HELPER = ("/app/lib/helper.py", 5, "helper")
REC = ("/app/lib/helper.py", 20, "rec")

# Stacks (innermost frame first) and how many samples saw each.
STACKS = [
    ([HELPER, WORK_A, MAIN], 3),
    ([WORK_B, MAIN], 2),
    ([REC, REC, MAIN], 1),
    ([MAIN], 1),
]


def sampled_stats(stacks, interval_usec=INTERVAL_USEC):
    """The dict 3.15's PstatsCollector writes for these samples: per location (cc, nc) = (samples
    with it innermost, samples with it anywhere on the stack, once per sample), times = samples x
    interval, callers as sample counts per adjacent pair of frames; the marker last."""
    direct, cumulative, callers = {}, {}, {}
    for frames, weight in stacks:
        for loc in dict.fromkeys(frames):
            cumulative[loc] = cumulative.get(loc, 0) + weight
            direct.setdefault(loc, 0)
        direct[frames[0]] += weight
        for callee, caller in zip(frames, frames[1:]):
            edges = callers.setdefault(callee, {})
            edges[caller] = edges.get(caller, 0) + weight
    interval = interval_usec / 1_000_000
    stats = {loc: (direct[loc], cumulative[loc], direct[loc] * interval,
                   cumulative[loc] * interval, dict(callers.get(loc, {})))
             for loc in cumulative}
    stats[MARKER] = True
    return stats


def write(path, stats):
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    return str(path)


def files_line(path):
    return time.ctime(os.stat(path).st_mtime) + "    " + path


def rows(stats):
    return {k: v for k, v in stats.items() if k != MARKER}


def f8(x):
    return "%8.3f" % x


std = pstats.func_std_string


# -- 3.15's reports, from its format rules -------------------------------------------------------

def expected_print_stats(files, stats, order, ordered_by=None, title=SAMPLED_TITLE):
    """print_stats(): the files, the totals line (sums of nc, cc and tt: samples, not calls),
    the listing message, the title and one line per function."""
    total_calls = sum(v[1] for v in stats.values())
    prim_calls = sum(v[0] for v in stats.values())
    total_tt = 0
    for v in stats.values():
        total_tt += v[2]
    out = "".join(f + "\n" for f in files) + ("\n" if files else "")
    out += "         %d function calls " % total_calls
    if total_calls != prim_calls:
        out += "(%d primitive calls) " % prim_calls
    out += "in %.3f seconds\n\n" % total_tt
    out += listing_message(ordered_by) + "\n"
    out += title
    for func in order:
        cc, nc, tt, ct, _ = stats[func]
        calls = str(nc) if nc == cc else "%d/%d" % (nc, cc)
        out += "%s %s %s %s %s %s\n" % (calls.rjust(9), f8(tt), f8(tt / nc) if nc else " " * 8,
                                         f8(ct), f8(ct / cc) if cc else " " * 8, std(func))
    return out + "\n\n"


def listing_message(ordered_by):
    if ordered_by is None:
        return "   Random listing order was used\n"
    return "   Ordered by: %s\n" % ordered_by


def expected_print_callers(stats, order, ordered_by=None, subheading=SAMPLED_SUBHEADING):
    """print_callers(): the heading (a sub-header only when the first row with callers has them
    as cProfile tuples), then per function its callers in key order: a sample count is printed
    as name(count) and the caller's cumulative time."""
    width = max(len(std(f)) for f in stats) + 2
    out = listing_message(ordered_by) + "\n"
    out += "Function ".ljust(width) + "was called by...\n"
    first = next((v[4] for v in stats.values() if v[4]), {})
    if first and isinstance(next(iter(first.values())), tuple):
        out += " " * width + subheading + "\n"
    for func in order:
        callers = stats[func][4]
        out += std(func).ljust(width) + "<- "
        if not callers:
            out += "\n"
        for i, caller in enumerate(sorted(callers)):
            value = callers[caller]
            if isinstance(value, tuple):
                nc, cc, tt, ct = value
                calls = str(nc) if nc == cc else "%d/%d" % (nc, cc)
                line = "%s %s %s  %s" % (calls.rjust(9 if i else 7), f8(tt), f8(ct), std(caller))
                out += (" " * (width + 1) if i else "") + line + "\n"
            else:
                line = "%s(%r) %s" % (std(caller), value, f8(stats[caller][3]))
                out += (" " * (width + 3) if i else "") + line + "\n"
    return out + "\n\n"


def report(stats_obj, *calls):
    """The text the given method calls print, e.g. ("sort_stats", "time"), ("print_stats",)."""
    out = io.StringIO()
    stats_obj.stream = out
    for name, *args in calls:
        getattr(stats_obj, name)(*args)
    return out.getvalue()


@pytest.fixture
def sampled_file(tmp_path):
    stats = sampled_stats(STACKS)
    return write(tmp_path / "sampled.pstats", stats), stats


# -- loading ------------------------------------------------------------------------------------

def test_it_loads_as_a_sampled_stats_without_the_marker(sampled_file):
    path, stats = sampled_file
    s = rprofile.Stats(path)
    assert type(s) is SampledStats and isinstance(s, rprofile.Stats)
    assert MARKER not in s.stats
    assert s.stats == rows(stats)
    assert s.files == [files_line(path)]
    assert s.total_calls == sum(v[1] for v in rows(stats).values())
    assert s.prim_calls == sum(v[0] for v in rows(stats).values())


def test_the_marker_counts_whatever_its_value_and_wherever_it_is(tmp_path):
    stats = rows(sampled_stats(STACKS))
    for value in (True, False, None, 1, 2.5, "yes"):
        marked = {MARKER: value, **stats}
        s = rprofile.Stats(write(tmp_path / "m.pstats", marked))
        assert type(s) is SampledStats and s.stats == stats


@pytest.mark.skipif(hasattr(pstats, "SampledStats"), reason="this pstats reads sampled files")
def test_the_running_pstats_still_fails_on_it(sampled_file):
    path, _ = sampled_file
    out = io.StringIO()
    with pytest.raises(TypeError):
        pstats.Stats(path, stream=out)
    assert out.getvalue() == "Invalid timing data %s\n" % files_line(path)


@pytest.mark.skipif(not hasattr(pstats, "SampledStats"), reason="a pstats without SampledStats")
def test_same_reports_as_the_running_pstats(sampled_file):
    path, _ = sampled_file
    calls = [("print_stats",), ("sort_stats", "time"), ("print_callers",), ("print_callees",)]
    assert report(rprofile.Stats(path), *calls) == report(pstats.Stats(path), *calls)


def test_a_marker_alone_is_an_empty_sampled_stats_error(tmp_path):
    path = write(tmp_path / "empty.pstats", {MARKER: True})
    with pytest.raises(TypeError) as e:
        rprofile.Stats(path)
    assert str(e.value) == "Cannot create or construct a %r object from %r" % (
        SampledStats, files_line(path))


def test_deterministic_files_are_unchanged(tmp_path):
    stats = {("a.py", 1, "f"): (1, 1, 0.5, 0.5, {})}
    s = rprofile.Stats(write(tmp_path / "det.prof", stats))
    assert type(s) is rprofile.Stats


# -- reports ------------------------------------------------------------------------------------

def test_print_stats_prints_what_315_prints(sampled_file):
    path, stats = sampled_file
    order = list(rows(stats))
    want = expected_print_stats([files_line(path)], rows(stats), order)
    assert report(rprofile.Stats(path), ("print_stats",)) == want


def test_print_stats_is_the_running_pstats_report_with_the_sampled_title(sampled_file):
    """The same through the running pstats (on the dict without the marker): 3.15 changes only
    the title line (callers and callees as sample counts print as the profile module's)."""
    path, stats = sampled_file

    class Loaded:
        def create_stats(self):
            self.stats = rows(stats)

    ref = pstats.Stats(Loaded(), stream=io.StringIO())
    ref.files = [files_line(path)]
    calls = [("print_stats",), ("print_callers",), ("sort_stats", "cumulative"),
             ("print_callees",), ("print_stats", 2)]
    plain = report(ref, *calls)
    pstats_title = "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
    assert plain.count(pstats_title) == 2
    got = report(rprofile.Stats(path), *calls)
    assert got == plain.replace(pstats_title, SAMPLED_TITLE)


def test_print_callers_prints_what_315_prints(sampled_file):
    path, stats = sampled_file
    order = list(rows(stats))
    assert report(rprofile.Stats(path), ("print_callers",)) == \
        expected_print_callers(rows(stats), order)


@pytest.mark.parametrize("key, field, description", [
    ("time", 2, "internal time"),
    ("cumulative", 3, "cumulative time"),
    ("calls", 1, "call count"),
    ("pcalls", 0, "primitive call count"),
])
def test_sorting_a_loaded_file_takes_pstats_keys(sampled_file, key, field, description):
    path, stats = sampled_file
    stats = rows(stats)
    order = sorted(stats, key=lambda f: -stats[f][field])  # stable: ties in dict order
    s = rprofile.Stats(path)
    got = report(s, ("sort_stats", key), ("print_stats",), ("print_callers",))
    want = (expected_print_stats([files_line(path)], stats, order, description)
            + expected_print_callers(stats, order, description))
    assert got == want


def test_strip_dirs_then_sort_by_name(sampled_file):
    path, stats = sampled_file
    stripped = {pstats.func_strip_path(f): (cc, nc, tt, ct,
                                            {pstats.func_strip_path(c): n for c, n in cs.items()})
                for f, (cc, nc, tt, ct, cs) in rows(stats).items()}
    order = sorted(stripped, key=lambda f: f[2])
    s = rprofile.Stats(path).strip_dirs()
    assert type(s) is SampledStats
    got = report(s, ("sort_stats", "name"), ("print_stats",))
    assert got == expected_print_stats([files_line(path)], stripped, order, "function name")


def test_built_directly_it_takes_only_its_own_sort_keys_as_315s(sampled_file):
    path, stats = sampled_file
    stats = rows(stats)
    s = SampledStats(path)
    assert sorted(s.get_sort_arg_defs()) == sorted(
        ["samples", "nsamples", "psamples", "cumtime", "cumulative", "filename", "line",
         "module", "name", "nfl", "stdname", "time", "tottime"])
    order = sorted(stats, key=lambda f: -stats[f][1])
    got = report(s, ("sort_stats", "nsamples"), ("print_stats",))
    assert got == expected_print_stats([files_line(path)], stats, order, "sample count")
    with pytest.raises(KeyError):
        s.sort_stats("calls")  # and no abbreviations either
    with pytest.raises(KeyError):
        s.sort_stats("cum")


# -- add, dump ------------------------------------------------------------------------------------

def cprofile_stats():
    """A small deterministic profile: cProfile's tuple callers."""
    f, g = ("/det/m.py", 1, "f"), ("/det/m.py", 9, "g")
    return {f: (1, 1, 0.25, 1.0, {}), g: (2, 2, 0.75, 0.75, {f: (2, 2, 0.75, 0.75)})}


def test_adding_files_keeps_the_first_ones_class_as_315(tmp_path, sampled_file):
    path, stats = sampled_file
    det = write(tmp_path / "det.prof", cprofile_stats())
    merged = {**rows(stats), **cprofile_stats()}
    s = rprofile.Stats(path, det)
    assert type(s) is SampledStats and s.stats == merged
    d = rprofile.Stats(det, path)
    assert type(d) is rprofile.Stats and d.stats == {**cprofile_stats(), **rows(stats)}
    # add() of a file: the same merge; the class stays the object's.
    assert type(rprofile.Stats(det).add(path)) is rprofile.Stats
    assert type(rprofile.Stats(path).add(det)) is SampledStats


def test_sampled_stats_with_cprofile_callers_first_prints_the_sampled_subheading(tmp_path):
    """The sub-header appears when the first row with callers has cProfile tuples: here the
    sampled rows (single-frame samples) have none."""
    flat = sampled_stats([([MAIN], 2), ([HELPER], 1)])
    det = cprofile_stats()
    path = write(tmp_path / "flat.pstats", flat)
    s = rprofile.Stats(path, write(tmp_path / "det.prof", det))
    merged = {**rows(flat), **det}
    assert report(s, ("print_callers",)) == expected_print_callers(merged, list(merged))
    assert SAMPLED_SUBHEADING in report(s, ("print_callees",))


def test_mixed_caller_forms_fail_as_pstats_add_callers_fails(tmp_path, sampled_file):
    """Where a sampled and a deterministic profile share a caller edge, its sample count and
    cProfile tuple do not add: pstats' add_callers raises, and so does the merge here."""
    path, stats = sampled_file
    det = {HELPER: (3, 3, 0.1, 0.1, {WORK_A: (3, 3, 0.1, 0.1)})}
    det_path = write(tmp_path / "det.prof", det)
    for first, second, callers in ((path, det_path, (stats[HELPER][4], det[HELPER][4])),
                                   (det_path, path, (det[HELPER][4], stats[HELPER][4]))):
        with pytest.raises(TypeError) as ref:
            pstats.add_callers(*callers)
        with pytest.raises(TypeError) as got:
            rprofile.Stats(first, second)
        assert str(got.value) == str(ref.value)


def test_dump_stats_writes_the_marker_back(tmp_path, sampled_file):
    path, stats = sampled_file
    out = str(tmp_path / "again.pstats")
    rprofile.Stats(path).dump_stats(out)
    with open(out, "rb") as f:
        again = marshal.load(f)
    assert again == {**rows(stats), MARKER: True}
    assert list(again)[-1] == MARKER  # where the sampling profiler puts it
    assert type(rprofile.Stats(out)) is SampledStats
    # A merge led by a sampled file is still samples; one led by a deterministic file is not.
    det = write(tmp_path / "det.prof", cprofile_stats())
    rprofile.Stats(det, path).dump_stats(out)
    with open(out, "rb") as f:
        assert MARKER not in marshal.load(f)


def test_stats_of_a_sampled_stats_object_stays_sampled(sampled_file, tmp_path):
    path, stats = sampled_file
    copy = rprofile.Stats(rprofile.Stats(path))
    assert type(copy) is SampledStats and copy.stats == rows(stats)


def test_data_the_engine_does_not_hold_goes_through_pstats_code_still_sampled(tmp_path):
    """A float line number sends the object to pstats' own dict-based code: the title, the
    sub-header and the marker written back stay those of a sampled profile."""
    odd = ("/app/odd.py", 7.0, "odd")
    stats = {odd: (1, 2, 0.001, 0.002, {MAIN: (1, 1, 0.001, 0.002)}),
             MAIN: (0, 2, 0.0, 0.002, {})}
    path = write(tmp_path / "odd.pstats", {**stats, MARKER: True})
    s = rprofile.Stats(path)
    assert isinstance(s, SampledStats) and MARKER not in s.stats
    order = list(stats)
    assert report(s, ("print_stats",)) == expected_print_stats([files_line(path)], stats, order)
    assert report(s, ("print_callers",)) == expected_print_callers(stats, order)
    out = str(tmp_path / "odd-again.pstats")
    s.dump_stats(out)
    with open(out, "rb") as f:
        assert marshal.load(f) == {**stats, MARKER: True}


# -- files 3.15's own sampler wrote -------------------------------------------------------------

OWN_SAMPLER_PROGRAM = """\
import threading
import time


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def outer():
    spin(0.2)
    inner()


def inner():
    spin(0.1)


worker = threading.Thread(target=inner)
worker.start()
outer()
worker.join()
"""


@pytest.mark.skipif(not hasattr(pstats, "SampledStats"), reason="no profiling.sampling here")
def test_files_of_the_running_pythons_own_sampler_print_as_its_pstats_prints(tmp_path):
    """A file `python -m profiling.sampling run --pstats` wrote (3.15+), every report as the
    running pstats prints it, byte for byte."""
    import subprocess
    import sys

    program = tmp_path / "prog.py"
    program.write_text(OWN_SAMPLER_PROGRAM)
    path = str(tmp_path / "own.pstats")
    subprocess.run([sys.executable, "-m", "profiling.sampling", "run", "-a", "--pstats",
                    "-o", path, str(program)], check=True, capture_output=True)
    with open(path, "rb") as f:
        assert MARKER in marshal.load(f)
    assert type(pstats.Stats(path)) is pstats.SampledStats
    for calls in ([("print_stats",)], [("sort_stats", "time"), ("print_stats", 5)],
                  [("print_callers",)], [("sort_stats", "cumulative"), ("print_callees",)],
                  [("strip_dirs",), ("sort_stats", "name"), ("print_stats", "spin")]):
        assert report(rprofile.Stats(path), *calls) == report(pstats.Stats(path), *calls), calls
