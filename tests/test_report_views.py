"""The HTML report on real programs, in headless Chromium (issue 34): its tabs and links work
when the report is a notebook's inline frame, a timeline that dropped events says so, the
table's columns fit their values, and a comparison pairs the functions of two checkouts and
built-ins named by an address. Screenshots go to .build/report-screenshots/.
"""

import json
import marshal
import pstats
import re
import runpy
import textwrap

import pytest

import rprofile
from report_support import PROGRAM, open_report, run, save


# -- tabs and links inside a notebook's frame ---------------------------------------------------

def frame_click(page, selector, frame=0):
    """A real mouse click at the middle of `selector` in the `frame`-th report frame of the
    page (the element's place in the frame plus the frame's place in the page)."""
    box = page.eval("""(() => {
        const f = document.querySelectorAll('iframe.rprofile-report')[%d];
        const e = f.contentDocument.querySelector(%s);
        if (!e) return null;
        e.scrollIntoView({block: 'center'});
        const o = f.getBoundingClientRect(), r = e.getBoundingClientRect();
        return [o.x + f.clientLeft + r.x + r.width / 2, o.y + f.clientTop + r.y + r.height / 2];
    })()""" % (frame, json.dumps(selector)))
    assert box is not None, selector
    x, y = box
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        page.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def in_frame(expression, frame=0):
    """`expression` with `d` the document of the `frame`-th report frame (null when the frame
    no longer shows a report)."""
    return ("(() => { const f = document.querySelectorAll('iframe.rprofile-report')[%d]; "
            "const d = f && f.contentDocument; if (!d || !d.getElementById('rprofile-data')) "
            "return null; return %s; })()" % (frame, expression))


def shown_view(page):
    return page.eval(in_frame("[...d.querySelectorAll('main > section')].filter(s => "
                              "!s.hidden).map(s => s.id).join()"))


def test_tabs_and_links_route_inside_a_notebooks_frame(browser, tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    run("-m", "cProfile", "-o", "p.prof", "prog.py", cwd=tmp_path)
    output = rprofile.Stats(str(tmp_path / "p.prof"))._repr_html_()
    # As Jupyter shows an output: the text/html inside the notebook's own page.
    (tmp_path / "notebook.html").write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>notebook</title></head><body>"
        "<h1>notebook</h1><div class='output_html'>%s</div></body></html>" % output)
    page = browser.open((tmp_path / "notebook.html").as_uri(), width=1100, height=900)
    page.wait_for(in_frame("d.body.dataset.ready === '1'"))
    assert shown_view(page) == "v-table"
    frame_click(page, "nav a[data-view=flame]")
    page.wait_for(in_frame("!d.querySelector('#v-flame').hidden && "
                           "[...d.querySelectorAll('#v-flame iframe')].some(f => !f.hidden && "
                           "f.contentWindow.searchbtn)"), timeout=5)
    assert shown_view(page) == "v-flame"
    save(page, "notebook-tab-flame")
    frame_click(page, "nav a[data-view=table]")
    page.wait_for(in_frame("!d.querySelector('#v-table').hidden"), timeout=5)
    # A function's link: its page, then its caller's through the caller's link.
    frame_click(page, "#v-table a.fn[title$='(leaf)']")
    page.wait_for(in_frame("!d.querySelector('#v-func').hidden"), timeout=5)
    assert page.eval(in_frame("d.querySelector('#v-func h2').textContent")).endswith("(leaf)")
    caller = page.eval(in_frame("d.querySelector('#callers + table a.fn').title"))
    frame_click(page, "#callers + table a.fn")
    page.wait_for(in_frame("d.querySelector('#v-func h2').textContent === %s" % json.dumps(caller)),
                  timeout=5)
    save(page, "notebook-function-page")
    # The notebook's page itself never moved.
    assert page.eval("[location.pathname.endsWith('notebook.html'), location.hash]") == [True, ""]
    assert page.console_errors() == []


def test_tabs_still_route_by_the_url_in_a_file(browser, tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    run("-m", "rprofile", "--html", "r.html", "prog.py", cwd=tmp_path)
    page = open_report(browser, tmp_path / "r.html")
    page.click("nav a[data-view=flame]")
    page.wait_for("location.hash === '#flame' && !document.querySelector('#v-flame').hidden")
    page.click("nav a[data-view=table]")
    page.wait_for("location.hash === '#table' && !document.querySelector('#v-table').hidden")
    page.eval("history.back()")
    page.wait_for("location.hash === '#flame' && !document.querySelector('#v-flame').hidden")


# -- a timeline that dropped events says so --------------------------------------------------------

# Many calls: a few thousand events.
CALLS = textwrap.dedent("""\
    def one(i):
        return i

    def main():
        return sum(one(i) for i in range(2000))

    main()
    """)


def banner(page):
    """The text of the page's warning, when shown in its header."""
    return page.eval("(() => { const w = document.querySelector('header .warning'); return w "
                     "&& !w.hidden && w.getBoundingClientRect().height > 0 ? w.textContent "
                     ": null; })()")


@pytest.mark.parametrize("when_full", ["keep_newest", "keep_oldest"])
def test_a_timeline_that_dropped_events_says_how_many_and_which(browser, tmp_path, when_full):
    (tmp_path / "calls.py").write_text(CALLS.rsplit("main()", 1)[0])
    namespace = runpy.run_path(str(tmp_path / "calls.py"))
    prof = rprofile.Profile(timeline=True, buffer_size=50, when_full=when_full)
    prof.enable()
    namespace["main"]()
    prof.disable()
    dropped = prof.timeline.dropped
    assert dropped > 0
    prof.to_html(str(tmp_path / "r.html"))
    page = open_report(browser, tmp_path / "r.html", "timeline-dropped-" + when_full)
    text = banner(page)
    assert text is not None
    assert format(dropped, ",") in text
    assert ("oldest" if when_full == "keep_newest" else "newest") in text
    assert "buffer_size=" in text and "--buffer-size" in text


def test_the_command_lines_timeline_report_says_what_it_dropped(browser, tmp_path):
    (tmp_path / "prog.py").write_text(CALLS)
    proc = run("-m", "rprofile", "--timeline", "t.json", "--buffer-size", "100", "--html",
               "r.html", "prog.py", cwd=tmp_path)
    dropped = int(re.search(r"(\d+) earlier ones were dropped", proc.stderr).group(1))
    page = open_report(browser, tmp_path / "r.html")
    text = banner(page)
    assert text is not None and format(dropped, ",") in text and "oldest" in text
    # A buffer that held everything: nothing to say.
    run("-m", "rprofile", "--timeline", "t.json", "--html", "r.html", "prog.py", cwd=tmp_path)
    assert banner(open_report(browser, tmp_path / "r.html")) is None


# -- the table's columns fit their values --------------------------------------------------------

# Many recursive calls (ncalls "200000/100000") in a file deep in directories.
RECURSIVE = textwrap.dedent("""\
    def down(n):
        return down(n - 1) if n else 0

    def main():
        for _ in range(100000):
            down(1)

    main()
    """)


def test_the_tables_columns_fit_their_values_in_a_900_pixel_window(browser, tmp_path):
    deep = tmp_path.joinpath(*["a_rather_long_directory_name_%d" % i for i in range(6)])
    deep.mkdir(parents=True)
    (deep / "recursive_prog.py").write_text(RECURSIVE)
    run("-m", "rprofile", "-o", str(tmp_path / "r.prof"), "--html", str(tmp_path / "r.html"),
        str(deep / "recursive_prog.py"), cwd=deep)
    st = pstats.Stats(str(tmp_path / "r.prof"))
    (func, (cc, nc, *_)), = [(f, v) for f, v in st.stats.items() if f[2] == "down"]
    assert nc != cc
    page = browser.open((tmp_path / "r.html").as_uri(), width=900, height=700)
    page.wait_for("document.body.dataset.ready === '1'")
    save(page, "table-900px")
    cells = page.eval("""(() => {
        const a = document.querySelector("#v-table a.fn[title$='(down)']");
        const tr = a.closest('tr'), calls = tr.cells[0], td = a.closest('td');
        const text = a.firstChild, range = document.createRange();
        const box = (i, j) => { range.setStart(text, i); range.setEnd(text, j);
                                return range.getBoundingClientRect(); };
        const cell = td.getBoundingClientRect(), n = text.length;
        const name = text.data.lastIndexOf('/') + 1;
        return {calls: [calls.textContent, calls.scrollWidth, calls.clientWidth],
                title: a.title, text: text.data, cell: [cell.left, cell.right],
                first: box(0, 1).left, name: box(name, name + 1).left, last: box(n - 1, n).right};
    })()""")
    shown, scroll, client = cells["calls"]
    assert shown == "%d/%d" % (nc, cc)
    assert scroll <= client, cells
    # The file's name and the function are in view; the directories are cut from the left.
    assert cells["text"].endswith("recursive_prog.py:1(down)")
    assert cells["title"] == pstats.func_std_string(func)
    left, right = cells["cell"]
    assert left <= cells["name"] and cells["last"] <= right, cells
    assert cells["first"] < left, cells


def test_cumulative_times_above_the_total_are_explained(browser, tmp_path):
    # As a 3.12 profile of two threads on one stack has them (cProfile's too): calls closed out
    # of order, a time counted in two outermost calls, so cumtime exceeds the sum of tottimes.
    outer, inner = ("w.py", 1, "outer"), ("w.py", 5, "inner")
    stats = {outer: (1, 1, 0.1, 0.5, {}), inner: (2, 2, 0.1, 0.4, {outer: (2, 2, 0.1, 0.4)})}
    (tmp_path / "w.prof").write_bytes(marshal.dumps(stats))
    run("-m", "rprofile.stats", "--html", "w.html", "w.prof", cwd=tmp_path)
    page = open_report(browser, tmp_path / "w.html", "table-above-100")
    st = pstats.Stats(str(tmp_path / "w.prof"))
    most = "%.2f%%" % (100 * max(v[3] for v in st.stats.values()) / st.total_tt)
    note = page.eval("(() => { const n = document.querySelector('#table-note'); return n && "
                     "!n.hidden && n.getBoundingClientRect().height > 0 ? n.textContent : null; "
                     "})()")
    assert note is not None and ("up to %s" % most) in note and "threads=True" in note
    # The cell says it too, on hover.
    cell = page.eval("[...document.querySelectorAll('#v-table tbody tr:not(.spacer)')].find(tr => "
                     "tr.cells[5].textContent === %s).cells[5].querySelector('[title]').title"
                     % json.dumps(most))
    assert "More than the total" in cell
    # Within the total: no note.
    del stats[inner]
    stats[outer] = (1, 1, 0.5, 0.5, {})
    (tmp_path / "w.prof").write_bytes(marshal.dumps(stats))
    run("-m", "rprofile.stats", "--html", "w.html", "w.prof", cwd=tmp_path)
    assert open_report(browser, tmp_path / "w.html").eval(
        "document.querySelector('#table-note').hidden")


# -- a comparison pairs the functions of two checkouts and built-ins named by an address ----------

CHECKOUT = {
    "prog.py": "from pkg.helper import helper\n\ndef main():\n    return [helper(i) for i in "
               "range(100)]\n\nmain()\n",
    "pkg/__init__.py": "",
    "pkg/helper.py": "def helper(i):\n    return twice(i) + 1\n\ndef twice(i):\n    return 2 * i\n",
}

# A class whose instances are made by object.__new__: a built-in named by the address of
# `object`, which moves from run to run (address space randomization).
ADDRESS = textwrap.dedent("""\
    class Made:
        def __new__(cls):
            return super().__new__(cls)

    def main():
        return [Made() for _ in range(10)]

    main()
    """)


def compared_rows(page, text):
    """The rows of the comparison whose name has `text`: [name, before shown, after shown]."""
    page.eval("location.hash = '#compare'")
    page.wait_for("!document.querySelector('#v-compare').hidden")
    page.type("#filter", text)
    page.wait_for("document.querySelector('#count').textContent.includes(' of ')")
    return page.eval("[...document.querySelectorAll('#v-compare tbody tr:not(.spacer)')].map(tr =>"
                     " [tr.querySelector('a.fn').title, tr.cells[2].textContent !== '\\u2013',"
                     " tr.cells[3].textContent !== '\\u2013'])")


def paired_line(text):
    # The terminal breaks the sentence to its width: read it as one line.
    text = " ".join(text.split())
    m = re.search(r"Functions paired: (\d+) by key.*?, (\d+) by path.*?, (\d+) by name with "
                  r"addresses masked.*?; (\d+) only before.*?, (\d+) only after", text)
    assert m, text
    return [int(x) for x in m.groups()]


def test_two_checkouts_of_one_program_are_compared_function_by_function(browser, tmp_path):
    for copy in ("one", "two"):
        root = tmp_path / copy / "proj"
        for name, text in CHECKOUT.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        run("-m", "rprofile", "-o", str(tmp_path / (copy + ".prof")), str(root / "prog.py"),
            cwd=root)
    files = [str(tmp_path / "one.prof"), str(tmp_path / "two.prof")]
    before, after = (pstats.Stats(f) for f in files)
    def mine(st):
        return {(f[0].split("/proj/")[1],) + f[1:] for f in st.stats if "/proj/" in f[0]}

    assert mine(before) == mine(after) and len(mine(before)) >= 4
    # The terminal's table says how they were paired: the program's functions by path.
    text = run("-m", "rprofile.stats", "--compare", *files, cwd=tmp_path).stdout
    key, path, address, gone, new = paired_line(text)
    assert path == len(mine(before)) and (gone, new) == (0, 0)
    assert key + path + address == len(before.stats) == len(after.stats)
    run("-m", "rprofile.stats", "--html", "cmp.html", "--compare", *files, cwd=tmp_path)
    page = open_report(browser, tmp_path / "cmp.html")
    ours = compared_rows(page, "/proj/")
    save(page, "compare-checkouts")
    assert len(ours) == len(mine(before)) and all(r[1] and r[2] for r in ours), ours
    note = page.eval("document.querySelector('#compare-note').textContent")
    assert paired_line(note) == [key, path, address, gone, new]
    assert str(tmp_path / "one") in note and str(tmp_path / "two") in note


def test_a_built_in_named_by_its_address_is_paired_across_runs(browser, tmp_path):
    (tmp_path / "prog.py").write_text(ADDRESS)
    labels = []
    for name in ("a.prof", "b.prof"):
        run("-m", "rprofile", "-o", name, "prog.py", cwd=tmp_path)
        st = pstats.Stats(str(tmp_path / name))
        labels.append([f[2] for f in st.stats if "__new__ of type object at 0x" in f[2]])
    assert len(labels[0]) == len(labels[1]) == 1
    if labels[0] == labels[1]:
        # No address space randomization here: the second run's object as elsewhere, moved.
        moved = labels[1][0].replace(" at 0x", " at 0x1")
        stats = marshal.loads((tmp_path / "b.prof").read_bytes())
        stats = {(f[0], f[1], moved if f[2] == labels[1][0] else f[2]): v for f, v in stats.items()}
        (tmp_path / "b.prof").write_bytes(marshal.dumps(stats))
    text = run("-m", "rprofile.stats", "--compare", "a.prof", "b.prof", cwd=tmp_path).stdout
    assert paired_line(text)[2] == 1
    run("-m", "rprofile.stats", "--html", "cmp.html", "--compare", "a.prof", "b.prof",
        cwd=tmp_path)
    new = compared_rows(open_report(browser, tmp_path / "cmp.html"), "__new__ of type object")
    assert len(new) == 1 and new[0][1] and new[0][2], new
