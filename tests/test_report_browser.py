"""The HTML report in a real browser: headless Chromium (Debian's `chromium`, which
tools/test-all installs) opens each report file from disk, and once its scripts ran the tests
read the DOM: one row per function, pstats' orders, a function's callers, a flame graph node per
call path, search, the comparison; and every kind of profile renders. Without Chromium these
tests fail, saying why. A screenshot of each view is saved under .build/report-screenshots/.
"""

import json
import marshal
import os
import pstats
import textwrap

import pytest

from report_support import PROGRAM, open_report, run, save

PATHS = {"<module>", "<module>;main", "<module>;main;a", "<module>;main;a;leaf",
         "<module>;main;b", "<module>;main;b;leaf", "<module>;main;c"}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    (d / "prog.py").write_text(PROGRAM)
    return d


@pytest.fixture(scope="module")
def c_report(work):
    """`work`, holding prog.py's cProfile file c.prof and its report c.html (made once, whichever
    test asks first)."""
    run("-m", "cProfile", "-o", "c.prof", "prog.py", cwd=work)
    run("-m", "rprofile.stats", "--html", "c.html", "c.prof", cwd=work)
    return work


@pytest.fixture(scope="module")
def t_report(work):
    """`work`, holding prog.py's timeline t.json and its report t.html."""
    run("-m", "rprofile", "--timeline", "t.json", "--html", "t.html", "prog.py", cwd=work)
    return work


def table_names(page):
    return page.eval("[...document.querySelectorAll('#v-table tbody tr:not(.spacer) a.fn')]"
                     ".map(a => a.title)")


def pstats_order(path, *keys):
    st = pstats.Stats(str(path))
    st.sort_stats(*keys)
    return [pstats.func_std_string(f) for f in st.fcn_list]


def show(page, view):
    page.eval("location.hash = %s" % json.dumps(view))
    page.wait_for("!document.querySelector('#v-%s').hidden"
                  % ("func" if view.startswith("#f/") else view[1:]))


def flame_paths(page, program="prog.py"):
    """Each frame of the shown flame graph as the path of labels from the top, keeping the
    frames of `program` (the call paths of the program itself)."""
    return page.eval("""(() => {
        const fr = [...document.querySelectorAll('#v-flame iframe')].find(f => !f.hidden);
        const gs = [...fr.contentDocument.querySelectorAll('#frames > g')].map(g => {
            const r = g.querySelector('rect');
            return {label: g.querySelector('title').textContent.replace(/ \\([^()]*\\)$/, ''),
                    x: +r.getAttribute('fg:x'), w: +r.getAttribute('fg:w'),
                    y: +r.getAttribute('y')};
        });
        // An icicle: a frame's caller is the frame just above it that spans it.
        const ys = [...new Set(gs.map(g => g.y))].sort((a, b) => a - b);
        return gs.map(g => {
            const path = [g.label];
            let cur = g;
            for (;;) {
                const up = ys[ys.indexOf(cur.y) - 1];
                if (up === undefined) break;
                cur = gs.find(p => p.y === up && p.x <= cur.x && cur.x + cur.w <= p.x + p.w);
                if (!cur) break;
                path.unshift(cur.label);
            }
            return path;
        });
    })()""")


def program_paths(paths, program="prog.py"):
    out = []
    for path in paths:
        mine = [p.split(" (")[0] for p in path if program in p]
        if mine and program in path[-1]:
            out.append(";".join(mine))
    return out


def open_flame(page):
    show(page, "#flame")
    page.wait_for("(() => { const f = [...document.querySelectorAll('#v-flame iframe')]"
                  ".find(f => !f.hidden); return !!(f && f.contentWindow.searchbtn); })()")


# -- the table ---------------------------------------------------------------------------------

def test_one_row_per_function_sorted_as_pstats_sorts(browser, c_report):
    work = c_report
    page = open_report(browser, work / "c.html", "table-cprofile")
    st = pstats.Stats(str(work / "c.prof"))
    assert page.eval("document.querySelector('#count').textContent") == \
        "%d functions" % len(st.stats)
    # Shown sorted by tottime first, as pstats sorts (ties in its order).
    names = table_names(page)
    assert len(names) == len(st.stats)
    assert names == pstats_order(work / "c.prof", "tottime")
    for column, key in ((1, "calls"), (5, "cumulative"), (8, "stdname"), (2, "tottime")):
        page.click("#v-table th:nth-child(%d)" % column)
        assert table_names(page) == pstats_order(work / "c.prof", key), key
    # Again on the same column: pstats' reverse_order.
    page.click("#v-table th:nth-child(2)")
    assert table_names(page) == pstats_order(work / "c.prof", "tottime")[::-1]
    save(page, "table-cprofile-reversed")


def sorted_heading(page):
    return page.eval("document.querySelector('#v-table th.sorted').textContent")


def test_the_table_opens_in_the_order_of_the_stats_sort_or_of_dash_s(browser, work):
    run("-m", "cProfile", "-o", "s.prof", "prog.py", cwd=work)
    rprofile_stats = __import__("rprofile").Stats
    for key, heading in (("cumulative", "cumtime"), ("calls", "ncalls"), ("time", "tottime")):
        rprofile_stats(str(work / "s.prof")).sort_stats(key).to_html(str(work / "s.html"))
        page = open_report(browser, work / "s.html")
        assert sorted_heading(page) == heading
        assert table_names(page) == pstats_order(work / "s.prof", key), key
    rprofile_stats(str(work / "s.prof")).sort_stats("name", "line").to_html(str(work / "s.html"))
    assert sorted_heading(open_report(browser, work / "s.html")) == "filename:lineno(function)"
    # The command line's -s, for the profile it wrote beside; without -s, tottime.
    run("-m", "rprofile", "-s", "cumulative", "-o", "cli.prof", "--html", "cli.html", "prog.py",
        cwd=work)
    page = open_report(browser, work / "cli.html", "table-sorted-by-dash-s")
    assert sorted_heading(page) == "cumtime"
    assert table_names(page) == pstats_order(work / "cli.prof", "cumulative")
    run("-m", "rprofile", "-o", "cli.prof", "--html", "cli.html", "prog.py", cwd=work)
    assert sorted_heading(open_report(browser, work / "cli.html")) == "tottime"


def test_filter_and_strip_dirs(browser, c_report):
    work = c_report
    page = open_report(browser, work / "c.html")
    page.type("#filter", "leaf")
    page.wait_for("document.querySelector('#count').textContent.startsWith('1 of')")
    assert [n.rsplit(":", 1)[1] for n in table_names(page)] == ["1(leaf)"]
    page.eval("document.querySelector('#filter').value = ''")
    page.click("#regex")
    page.type("#filter", r"\(.\)$")
    page.wait_for("document.querySelector('#count').textContent.startsWith('3 of')")
    assert sorted(n[-3:] for n in table_names(page)) == ["(a)", "(b)", "(c)"]
    page.click("#strip")
    shown = page.eval("[...document.querySelectorAll('#v-table tbody a.fn')]"
                      ".map(a => a.textContent)")
    assert sorted(shown) == ["prog.py:10(b)", "prog.py:13(c)", "prog.py:7(a)"]
    save(page, "table-filtered-stripped")


# -- a function's page ---------------------------------------------------------------------------

def test_clicking_a_function_shows_its_callers_and_back_returns(browser, c_report):
    work = c_report
    page = open_report(browser, work / "c.html")
    page.click("#v-table a.fn[title$=':1(leaf)']")
    page.wait_for("!document.querySelector('#v-func').hidden")
    heading = page.eval("document.querySelector('#v-func h2').textContent")
    assert heading.endswith("prog.py:1(leaf)")
    callers = page.eval("[...document.querySelectorAll('#callers + table a.fn')]"
                        ".map(a => a.title.split(':').pop())")
    assert sorted(callers) == sorted(["7(a)", "10(b)"])
    # What print_callers prints for it: the same callers with the same call counts.
    st = pstats.Stats(str(work / "c.prof"))
    leaf = next(f for f in st.stats if f[2] == "leaf")
    counts = page.eval("[...document.querySelectorAll('#callers + table tbody tr')]"
                       ".map(tr => [tr.cells[3].textContent.split(':').pop(), tr.cells[0].textContent])")
    assert sorted(counts) == sorted(["%d(%s)" % (f[1], f[2]), str(v[0])]
                                    for f, v in st.stats[leaf][4].items())
    save(page, "function-leaf")
    # Its callee's page, then back twice: the browser's history holds the views.
    page.click("#callers + table a.fn[title$='(a)']")
    page.wait_for("document.querySelector('#v-func h2').textContent.endsWith('(a)')")
    assert page.eval("[...document.querySelectorAll('#callees + table a.fn')].map(a => a.title)"
                     ".every(t => t.endsWith('(leaf)'))")
    page.eval("history.back()")
    page.wait_for("document.querySelector('#v-func h2').textContent.endsWith('(leaf)')")
    page.eval("history.back()")
    page.wait_for("!document.querySelector('#v-table').hidden")


# -- flame graphs -------------------------------------------------------------------------------

def test_flame_graph_has_a_node_per_call_path_from_the_timeline(browser, t_report):
    work = t_report
    page = open_report(browser, work / "t.html")
    open_flame(page)
    assert "recorded" in page.eval("document.querySelector('#flame-note').textContent")
    paths = program_paths(flame_paths(page))
    assert sorted(paths) == sorted(PATHS)
    save(page, "flame-timeline")


def test_flame_graph_estimated_from_the_caller_graph_says_so(browser, c_report):
    work = c_report
    page = open_report(browser, work / "c.html")
    open_flame(page)
    assert page.eval("document.querySelector('#flame-note').textContent").startswith("Estimated")
    assert sorted(program_paths(flame_paths(page))) == sorted(PATHS)
    save(page, "flame-estimated")


def test_search_highlights_the_matching_nodes(browser, t_report):
    work = t_report
    page = open_report(browser, work / "t.html")
    open_flame(page)
    page.type("#flame-search", "leaf")
    fills = page.eval("""[...[...document.querySelectorAll('#v-flame iframe')].find(f => !f.hidden)
        .contentDocument.querySelectorAll('#frames > g')].map(g =>
        [g.querySelector('title').textContent, g.querySelector('rect').getAttribute('fill')])""")
    hit = [t for t, fill in fills if fill == "rgb(230,0,230)"]
    assert len(hit) == 2 and all(t.startswith("leaf ") for t in hit), fills
    assert not any(fill == "rgb(230,0,230)" for t, fill in fills if not t.startswith("leaf "))
    save(page, "flame-search")
    # A new search replaces the old highlights; clearing it removes them.
    page.eval("document.querySelector('#flame-search').value = ''")
    page.type("#flame-search", "main")
    fills = page.eval("""[...[...document.querySelectorAll('#v-flame iframe')].find(f => !f.hidden)
        .contentDocument.querySelectorAll('#frames > g')].filter(g =>
        g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)').length""")
    assert fills == 1
    # Clicking a frame zooms to it: frames beside it are hidden, it spans the width.
    zoomed = page.eval("""(() => {
        const doc = [...document.querySelectorAll('#v-flame iframe')].find(f => !f.hidden)
            .contentDocument;
        const g = [...doc.querySelectorAll('#frames > g')].find(g =>
            g.querySelector('title').textContent.startsWith('a (prog.py'));
        g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
        const hidden = [...doc.querySelectorAll('#frames > g.hide title')].map(t => t.textContent);
        return [g.querySelector('rect').getAttribute('width'), hidden];
    })()""")
    assert zoomed[0] == "100.0000%"
    assert any(t.startswith("b (prog.py") for t in zoomed[1])
    save(page, "flame-zoomed")


# -- comparison --------------------------------------------------------------------------------

def test_comparison_shows_the_one_function_that_changed(browser, tmp_path):
    slow = "def slow():\n    s = 0\n    for i in range(%d):\n        s += i\n    return s\n"
    rest = textwrap.dedent("""\
        def steady():
            s = 0
            for i in range(100000):
                s += i
            return s

        for _ in range(3):
            steady()
            slow()
        """)
    for name, n in (("before", 20000), ("after", 400000)):
        (tmp_path / "prog.py").write_text(slow % n + rest)
        run("-m", "cProfile", "-o", name + ".prof", "prog.py", cwd=tmp_path)
    # Wide enough for before and after side by side, one row a function.
    proc = run("-m", "rprofile.stats", "--compare", "before.prof", "after.prof", cwd=tmp_path,
               env=dict(os.environ, COLUMNS="300"))
    assert proc.stdout.splitlines()[3].endswith("prog.py:1(slow)"), proc.stdout
    run("-m", "rprofile.stats", "--html", "cmp.html", "--compare", "before.prof", "after.prof",
        cwd=tmp_path)
    page = open_report(browser, tmp_path / "cmp.html")
    show(page, "#compare")
    first = page.eval("(() => { const tr = document.querySelector('#v-compare tbody "
                      "tr:not(.spacer)'); return [tr.querySelector('a.fn').title, "
                      "tr.cells[0].textContent, tr.cells[0].querySelector('span').className]; })()")
    assert first[0].endswith("prog.py:1(slow)")
    assert first[1].startswith("+") and first[2] == "num-bad"
    save(page, "compare")
    open_flame(page)
    assert page.eval("document.querySelector('#flame-note').textContent").startswith("Comparison")
    save(page, "compare-flame")


# -- every kind of profile ----------------------------------------------------------------------

THREADS = textwrap.dedent("""\
    import threading

    def work(n):
        s = 0
        for i in range(n):
            s += i
        return s

    keep = []

    def alloc():
        block = []
        for _ in range(3000):
            block.append(bytes(100))
        keep.append(block)

    ts = [threading.Thread(target=work, args=(200000,), name="worker-%d" % i) for i in range(2)]
    for t in ts:
        t.start()
    alloc()
    work(50000)
    for t in ts:
        t.join()
    """)

SAMPLED = textwrap.dedent("""\
    import threading
    import time

    def spin(seconds):
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n

    def main():
        spin(0.3)
        spin(0.2)

    worker = threading.Thread(target=spin, args=(0.4,), name="worker-0")
    worker.start()
    main()
    worker.join()
    """)


def make(kind, d):
    """Writes the report of a profile of `kind` in `d`; returns (report, stats files the
    table should match)."""
    (d / "prog.py").write_text(PROGRAM)
    (d / "threads.py").write_text(THREADS)
    (d / "sampled.py").write_text(SAMPLED)
    if kind == "cprofile":
        run("-m", "cProfile", "-o", "x.prof", "prog.py", cwd=d)
    elif kind == "profile":
        # Through its API: its command line puts a code object in a key (read by rprofile.Stats
        # too: tests/test_stats_files.py), which the report's table would show by address.
        (d / "drive.py").write_text("import profile, runpy\np = profile.Profile()\n"
                                    "p.runcall(runpy.run_path, 'prog.py')\n"
                                    "p.dump_stats('x.prof')\n")
        run("drive.py", cwd=d)
    elif kind == "rprofile":
        run("-m", "rprofile", "-o", "x.prof", "prog.py", cwd=d)
    elif kind in ("threads", "memory", "timeline"):
        flags = {"threads": ["--threads", "--clock", "thread_cpu"], "memory": ["--memory"],
                 "timeline": ["--timeline", "t.json", "--threads"]}[kind]
        run("-m", "rprofile", *flags, "-o", "x.prof", "threads.py", cwd=d)
        run("-m", "rprofile", *flags, "--html", "r.html", "threads.py", cwd=d)
        return d / "r.html", ["x.prof"]
    elif kind == "sampled":
        run("-m", "rprofile", "--sample", "--html", "r.html", "sampled.py", cwd=d)
        return d / "r.html", None
    elif kind == "sampled-file":
        # A file of Python 3.15's sampling profiler: samples, marked as such.
        run("-m", "rprofile", "--sample", "-o", "s.prof", "sampled.py", cwd=d)
        stats = marshal.loads((d / "s.prof").read_bytes())
        stats[("__sampled__",)] = True
        (d / "x.prof").write_bytes(marshal.dumps(stats))
        run("-m", "rprofile.stats", "--html", "r.html", "x.prof", cwd=d)
        return d / "r.html", None
    elif kind == "merged":
        run("-m", "cProfile", "-o", "a.prof", "prog.py", cwd=d)
        run("-m", "rprofile", "-o", "b.prof", "threads.py", cwd=d)
        run("-m", "rprofile.stats", "--html", "r.html", "a.prof", "b.prof", cwd=d)
        return d / "r.html", ["a.prof", "b.prof"]
    run("-m", "rprofile.stats", "--html", "r.html", "x.prof", cwd=d)
    return d / "r.html", ["x.prof"]


# Why this interpreter cannot be sampled, or None: the sampler's own tests' check.
from sampler_support import sampler_unsupported  # noqa: E402


KINDS = ["cprofile", "profile", "rprofile", "threads", "timeline", "memory", "sampled",
         "sampled-file", "merged"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_profile_renders(browser, tmp_path, kind):
    if kind.startswith("sampled") and sampler_unsupported():
        pytest.skip(sampler_unsupported())
    report, files = make(kind, tmp_path)
    page = open_report(browser, report, "kind-%s-table" % kind)
    count = page.eval("document.querySelector('#count').textContent")
    if files is not None:
        st = pstats.Stats(*[str(tmp_path / f) for f in files])
        assert count == "%d functions" % len(st.stats)
    assert int(count.split()[0]) > 0
    assert len(table_names(page)) > 0
    tabs = page.eval("[...document.querySelectorAll('nav a')].filter(a => !a.hidden)"
                     ".map(a => a.dataset.view)")
    assert "flame" in tabs
    assert "types" not in tabs  # no objects were counted
    open_flame(page)
    assert page.eval("[...document.querySelectorAll('#v-flame iframe')].find(f => !f.hidden)"
                     ".contentDocument.querySelectorAll('#frames > g').length") > 1
    save(page, "kind-%s-flame" % kind)
    if kind in ("threads", "timeline", "sampled"):
        # A thread filter: each worker's own rows.
        options = page.eval("[...document.querySelectorAll('#thread option')].map(o => o.text)")
        assert "worker-0" in options, options
        assert len(options) >= 2
        show(page, "#table")
        page.eval("const s = document.querySelector('#thread'); s.selectedIndex = 1; "
                  "s.dispatchEvent(new Event('change'))")
        assert page.eval("document.querySelector('#count').textContent") != count
        save(page, "kind-%s-thread" % kind)
    if kind == "memory":
        assert "memory" in tabs
        show(page, "#memory")
        first = page.eval("document.querySelector('#v-memory tbody tr:not(.spacer) a.fn').title")
        assert first.endswith("(alloc)")
        save(page, "kind-memory-memory")
    if kind == "sampled":
        assert "lines" in tabs
        show(page, "#lines")
        hot = page.eval("[...document.querySelectorAll('#v-lines tbody tr:not(.spacer)')]"
                        ".filter(tr => tr.cells[1].textContent).map(tr => tr.cells[3].textContent.trim())")
        assert any("perf_counter" in line or "n += 1" in line for line in hot), hot
        save(page, "kind-sampled-lines")
    if kind == "sampled-file":
        assert page.eval("document.querySelector('#v-table th').textContent") == "nsamples"


# -- the report inline in a notebook: %rprofile, %rsample, a Stats' rich display ---------------

# PROGRAM's functions (main -> a, b -> leaf), one that burns CPU and big stats.
NOTEBOOK_WORK = PROGRAM[:PROGRAM.rindex("main()")] + textwrap.dedent("""\
    import marshal, time
    from rprofile import Stats

    def burn(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            leaf(100)

    def big(n):
        d = {("big.py", i + 1, "f%d" % i): (1, 1, 0.001, 0.001 * (n - i), {})
             for i in range(n)}
        with open("big.prof", "wb") as f:
            marshal.dump(d, f)
        return Stats("big.prof")
    """)


def frame_eval(page, i, expression):
    """`expression` evaluated with `d` the document of the notebook's i-th report frame."""
    return page.eval("(() => { const d = document.querySelectorAll('iframe.rprofile-report')"
                     "[%d].contentDocument; return %s; })()" % (i, expression))


def test_a_notebooks_inline_reports_run_in_their_frames(browser, tmp_path):
    from notebooks import execute, html_page
    from rprofile.outputs.inline import FUNCTIONS

    cells = ["%load_ext rprofile", NOTEBOOK_WORK, "%rprofile -s cumulative main()",
             "%%rprofile\nmain()\nleaf(5)", "%rprofile -q -r main()", "big(%d)" % (3 * FUNCTIONS)]
    sampled = sampler_unsupported() is None
    if sampled:
        cells.append("%rsample --rate 1000 burn(0.3)")
    nb = execute(cells, tmp_path)
    (tmp_path / "notebook.html").write_text(html_page(nb))
    page = browser.open((tmp_path / "notebook.html").as_uri())
    n = page.eval("document.querySelectorAll('iframe.rprofile-report').length")
    assert n == len(cells) - 2
    page.wait_for("[...document.querySelectorAll('iframe.rprofile-report')].every(f => "
                  "f.contentDocument && f.contentDocument.body && "
                  "f.contentDocument.body.dataset.ready === '1')")
    assert page.console_errors() == []
    save(page, "notebook")
    for i in range(n):
        names = frame_eval(page, i, "[...d.querySelectorAll('#v-table tbody tr:not(.spacer) "
                                    "a.fn')].map(a => a.title)")
        count = frame_eval(page, i, "d.querySelector('#count').textContent")
        if i == 3:  # big(): its heaviest functions and one row for the rest
            assert count == "%d functions" % (FUNCTIONS + 1)
            assert "{%d more functions: their own time}" % (2 * FUNCTIONS) in names
            continue
        assert any(name.endswith("(main)") for name in names) or \
            (i == 4 and any(name.endswith("(burn)") for name in names)), names
        assert any(name.endswith("(leaf)") for name in names), names
        # The flame graph: the report's own frame inside this one, drawn by its script.
        frame_eval(page, i, "d.defaultView.location.hash = '#flame'")
        page.wait_for("(() => { const d = document.querySelectorAll('iframe.rprofile-report')"
                      "[%d].contentDocument; const f = [...d.querySelectorAll('#v-flame iframe')]"
                      ".find(f => !f.hidden); return !!(f && f.contentWindow.searchbtn); })()" % i)
        labels = frame_eval(page, i, "[...[...d.querySelectorAll('#v-flame iframe')].find(f => "
                                     "!f.hidden).contentDocument.querySelectorAll('#frames > g "
                                     "title')].map(t => t.textContent)")
        assert any(label.startswith("leaf (") for label in labels), labels
    assert page.console_errors() == []
    save(page, "notebook-flame")
    # The notebook's page is as it was: its title, style and URL; nothing of the reports'.
    assert page.eval("[document.title, location.hash, getComputedStyle(document.body).color, "
                     "getComputedStyle(document.body).display, typeof window.rprofileReady]") == \
        ["notebook", "", "rgb(1, 2, 3)", "block", "undefined"]
    heights = page.eval("[...document.querySelectorAll('iframe.rprofile-report')]"
                        ".map(f => f.getBoundingClientRect().height)")
    assert all(360 <= h <= 602 for h in heights), heights
