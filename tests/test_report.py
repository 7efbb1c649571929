"""The HTML report without a browser: what the file holds (one self-contained page, its data
as one JSON blob), the Python API (`Stats.to_html`, `Profile.to_html`, `Sampler.to_html`) and
the command lines' `--html` and `--compare`, with their errors."""

import errno
import os
import re
import textwrap

import pytest

import rprofile
from rprofile import Stats
from report_support import cli, report_data
from sampler_support import sampler_unsupported

PROGRAM = textwrap.dedent("""\
    def leaf(n):
        return sum(range(n))

    def main():
        for _ in range(3):
            leaf(1000)

    main()
    """)


def data_of(path):
    return open(path, encoding="utf-8").read(), report_data(path)


@pytest.fixture
def prof_file(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    proc = cli("-m", "cProfile", "-o", "c.prof", "prog.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "c.prof"


def test_one_self_contained_file_with_the_stats_as_json(prof_file, tmp_path):
    st = Stats(str(prof_file))
    assert st.to_html(tmp_path / "r.html") is st
    html, data = data_of(tmp_path / "r.html")
    # Nothing is fetched: no script, style, image or font from elsewhere.
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "@import" not in html
    assert html.count("<script") == 2
    assert len(data["rows"]["nc"]) == len(st.stats)
    names = {data["strings"][n] for n in data["fn"]["name"]}
    assert {"leaf", "main", "<module>"} <= names
    assert data["title"] == "c.prof"
    assert data["flame"]["estimate"] is True
    # pstats' totals.
    assert data["total"]["calls"] == st.total_calls
    assert data["total"]["prim"] == st.prim_calls


def test_ranks_are_pstats_orders(prof_file, tmp_path):
    st = Stats(str(prof_file))
    st.to_html(tmp_path / "r.html")
    _, data = data_of(tmp_path / "r.html")
    keys = list(st.stats)
    for field, sort in (("ttRank", "tottime"), ("ctRank", "cumulative")):
        order = sorted(range(len(keys)), key=lambda i: data["rows"][field][i])
        assert [keys[i] for i in order] == Stats(str(prof_file)).sort_stats(sort).fcn_list


def test_errors_are_oserrors_with_errno(prof_file, tmp_path):
    st = Stats(str(prof_file))
    with pytest.raises(FileNotFoundError) as e:
        st.to_html(tmp_path / "missing" / "r.html")
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == tmp_path / "missing" / "r.html"
    with pytest.raises(IsADirectoryError):
        st.to_html(tmp_path)


def test_a_comparison_in_the_data_and_in_the_terminal(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    cli("-m", "cProfile", "-o", "before.prof", "prog.py", cwd=tmp_path)
    (tmp_path / "prog.py").write_text(PROGRAM.replace("range(3)", "range(30)"))
    cli("-m", "cProfile", "-o", "after.prof", "prog.py", cwd=tmp_path)
    after = Stats(str(tmp_path / "after.prof"))
    after.to_html(tmp_path / "r.html", compare=str(tmp_path / "before.prof"))
    _, data = data_of(tmp_path / "r.html")
    assert data["before"]["title"] == "before.prof"
    assert data["flame"]["compare"] is True
    # A terminal wide enough for before and after side by side.
    proc = cli("-m", "rprofile.stats", "--compare", "before.prof", "after.prof", cwd=tmp_path,
               env={"COLUMNS": "300"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "calls before" in lines[1]
    # The largest change of tottime first, whichever function's it was in these two runs.
    import pstats
    b, a = (pstats.Stats(str(tmp_path / n)).stats for n in ("before.prof", "after.prof"))
    largest = max(a, key=lambda k: abs(a[k][2] - b.get(k, (0, 0, 0))[2]))
    assert lines[3].endswith(pstats.func_std_string(largest)), (largest, lines[3])
    assert re.search(r"\b3\s+30\b", proc.stdout)


def test_profile_and_sampler_reports(tmp_path):
    prof = rprofile.Profile(timeline=True, memory=True)
    with prof:
        # Blocks no free list can give back (a range iterator may come from one on 3.14+).
        kept = [str(i) * 3 for i in range(1000)]
    del kept
    prof.to_html(tmp_path / "p.html")
    _, data = data_of(tmp_path / "p.html")
    assert data["flame"]["estimate"] is False
    assert data["memory"] is not None
    from rprofile.sampling import Sampler

    if sampler_unsupported() is not None:
        pytest.skip(sampler_unsupported())  # a version the sampler does not read
    with Sampler(rate=1000) as s:
        sum(i for i in range(200000))
    s.to_html(tmp_path / "s.html")
    _, data = data_of(tmp_path / "s.html")
    assert data["sampled"] is True and data["run"].startswith("Sampled ")


def test_the_table_opens_by_the_column_of_the_first_sort_key(tmp_path):
    from rprofile.stats import SortKey, report_sort

    # Every pstats key (abbreviated too, as sort_stats takes them), the legacy numbers, and a
    # Stats' descriptions of its sort.
    cases = {"calls": "ncalls", "ncalls": "ncalls", "pcalls": "ncalls", "cumu": "cumtime",
             "cumulative": "cumtime", "cumtime": "cumtime", "time": "tottime",
             "tottime": "tottime", "name": "name", "file": "name", "module": "name",
             "line": "name", "nfl": "name", "stdname": "name", SortKey.CUMULATIVE: "cumtime",
             -1: "name", 0: "ncalls", 1: "tottime", 2: "cumtime", None: "tottime"}
    assert {key: report_sort(key) for key in cases} == cases
    assert report_sort(sort_type="cumulative time, internal time") == "cumtime"
    assert report_sort(sort_type="sample count") == "ncalls"
    assert report_sort(sort_type="") == "tottime"
    with pytest.raises(KeyError):
        report_sort("no such key")
    # Into the page's data: a Profile's, a Sampler's, and a bad column refused.
    prof = rprofile.Profile()
    with prof:
        sum(range(1000))
    prof.to_html(tmp_path / "p.html", sort="cumulative")
    assert data_of(tmp_path / "p.html")[1]["sort"] == "cumtime"
    prof.to_html(tmp_path / "p.html")
    assert data_of(tmp_path / "p.html")[1]["sort"] == "tottime"
    from rprofile._rprofile import _write_report

    with pytest.raises(ValueError, match="sort must be one of ncalls, tottime, cumtime, name"):
        _write_report(str(tmp_path / "x.html"), Stats(prof)._html_core(), sort="calls")
    assert not (tmp_path / "x.html").exists()
    from rprofile.sampling import Sampler

    if sampler_unsupported() is not None:
        pytest.skip(sampler_unsupported())  # a version the sampler does not read
    with Sampler(rate=1000) as s:
        sum(i for i in range(100000))
    s.to_html(tmp_path / "s.html", sort="calls")
    assert data_of(tmp_path / "s.html")[1]["sort"] == "ncalls"


def test_the_command_lines(prof_file, tmp_path):
    d = tmp_path
    proc = cli("-m", "rprofile", "--html", "r.html", "prog.py", cwd=d)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    _, data = data_of(d / "r.html")
    assert data["title"] == "prog.py"
    # -s given sorts the report's table too (its default, cumulative from 3.11, does not).
    assert data["sort"] == "tottime"
    for mode in ([], ["--sample"]):
        proc = cli("-m", "rprofile", *mode, "-s", "calls", "--html", "s.html", "prog.py", cwd=d)
        assert proc.returncode == 0, proc.stderr
        assert data_of(d / "s.html")[1]["sort"] == "ncalls", mode
    proc = cli("-m", "rprofile.stats", "--html", "m.html", "c.prof", "c.prof", cwd=d)
    assert proc.returncode == 0, proc.stderr
    _, data = data_of(d / "m.html")
    assert data["total"]["calls"] == 2 * Stats(str(prof_file)).total_calls


@pytest.mark.parametrize("args, message", [
    (["-m", "rprofile.stats", "--html", "no/such/dir/r.html", "c.prof"], "no such directory"),
    (["-m", "rprofile.stats", "--html", ".", "c.prof"], "is a directory"),
    (["-m", "rprofile.stats", "--html", "r.html", "missing.prof"], "missing.prof: no such file"),
    (["-m", "rprofile.stats", "--html", "r.html", "prog.py"], "cannot read prog.py"),
    (["-m", "rprofile.stats", "--html", "r.html"], "at least one stats file"),
    (["-m", "rprofile.stats", "--compare", "c.prof"], "needs two files"),
    (["-m", "rprofile.stats", "--html"], "--html needs a file name"),
    (["-m", "rprofile", "--html", "no/such/dir/r.html", "prog.py"], "no such directory"),
    (["-m", "rprofile", "--sample", "--html", "no/such/dir/r.html", "prog.py"],
     "no such directory"),
])
def test_bad_paths_are_one_line_usage_errors(prof_file, args, message):
    proc = cli(*args, cwd=prof_file.parent)
    assert proc.returncode == 2, proc
    last = proc.stderr.strip().splitlines()[-1]
    assert message in last, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(prof_file.parent / "r.html")
