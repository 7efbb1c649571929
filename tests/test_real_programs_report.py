"""The HTML report's flame graph on real programs (tests/real_programs/: a Jinja2 render loop
with macros, a recursive macro, loops and includes, its templates from files or from strings;
a docutils conversion of a generated document of nested sections and lists), traced through the
command line and opened in headless Chromium (tests/chromium.py). The oracle is the program and
its own profile: the program's entry function (`main`, which the profile says holds most of the
time) holds its share of the graph's width; the graph has tens of frames, no frame wider than
its parent, children that fit in their parent, a whole as long as the profile's total time, and
no frame of a function whose own width is far more than the function's own time (an empty
interior, as `str.join` had when the stats lost the caller edge to the templates' code); where
the estimate folded recursion, the page says so.
"""

import pstats
import subprocess
import sys
from pathlib import Path

import pytest

from report_support import SHOTS

PROGRAMS = Path(__file__).resolve().parent / "real_programs"
ENTRY = "main"
# The share of the profile's time the entry function must hold, in the profile and the graph.
SHARE = 0.9

pytest.importorskip("jinja2", reason="tools/test-requirements.txt installs jinja2")
pytest.importorskip("docutils", reason="tools/test-requirements.txt installs docutils")


@pytest.fixture(scope="module", params=["jinja_loop.py", "jinja_loop.py --strings",
                                        "docutils_rst.py"])
def traced(request, tmp_path_factory):
    """The program traced by `python -m rprofile -o P.prof --html P.html`: its name, stats and
    report."""
    name, *args = request.param.split()
    d = tmp_path_factory.mktemp(name.replace(".", "_"))
    proc = subprocess.run([sys.executable, "-m", "rprofile", "-o", "p.prof", "--html", "p.html",
                           str(PROGRAMS / name), *args], cwd=d, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return name, pstats.Stats(str(d / "p.prof")), d / "p.html", "-".join([name[:-3], *args])


def label(func):
    """A pstats key as the report labels frames."""
    file, line, name = func
    return name if (file, line) == ("~", 0) else "%s (%s:%d)" % (name, file, line)


def open_flame(browser, path, shot):
    page = browser.open(Path(path).as_uri())
    page.wait_for("document.body.dataset.ready === '1'")
    page.eval("location.hash = '#flame'")
    page.wait_for("(() => { const f = [...document.querySelectorAll('#v-flame iframe')]"
                  ".find(f => !f.hidden); return !!(f && f.contentWindow.searchbtn); })()")
    assert page.console_errors() == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(str(SHOTS / (shot + ".png")))
    return page


def frames(page):
    """Every frame of the shown graph, after the graph's script ran: label, x and width (in
    the graph's counts), depth (0 for `all`), microseconds from its title, and its parent's
    index (the frame one row up that spans it; None for `all`)."""
    return page.eval("""(() => {
        const fr = [...document.querySelectorAll('#v-flame iframe')].find(f => !f.hidden);
        const gs = [...fr.contentDocument.querySelectorAll('#frames > g')].map(g => {
            const r = g.querySelector('rect'), t = g.querySelector('title').textContent;
            const m = t.match(/ \\(([\\d,]+) (?:µs|ns)[^()]*\\)$/);
            return {label: t.replace(/ \\([^()]*\\)$/, ''), x: +r.getAttribute('fg:x'),
                    w: +r.getAttribute('fg:w'), y: +r.getAttribute('y'),
                    count: m ? +m[1].replace(/,/g, '') : null,
                    unit: / ns[,)]/.test(t) ? 1e-9 : 1e-6};
        });
        const ys = [...new Set(gs.map(g => g.y))].sort((a, b) => a - b);
        for (const g of gs) {
            g.depth = ys.indexOf(g.y);
            const up = ys[g.depth - 1];
            const i = up === undefined ? -1 : gs.findIndex(p => p.y === up && p.x <= g.x &&
                                                           g.x + g.w <= p.x + p.w);
            g.parent = i < 0 ? null : i;
        }
        return gs;
    })()""")


def test_the_entry_function_holds_its_share_and_frames_nest(browser, traced):  # noqa: F811
    name, st, html, shot = traced
    total = st.total_tt
    entry = [f for f in st.stats if f[2] == ENTRY and f[0].endswith(name)]
    assert len(entry) == 1, entry
    # The program is the oracle: its entry function holds most of its profile.
    assert st.stats[entry[0]][3] >= SHARE * total, "the program spends too little in main"
    page = open_flame(browser, html, "real-" + shot)
    fs = frames(page)
    whole = [f for f in fs if f["depth"] == 0]
    assert len(whole) == 1 and whole[0]["label"] == "all", whole[:1]
    width = whole[0]["w"]
    # Tens of frames, and the whole is the profile's total time.
    assert len(fs) >= 30, [f["label"] for f in fs]
    seconds = whole[0]["count"] * whole[0]["unit"]
    assert seconds == pytest.approx(total, rel=0.01), (seconds, total)
    # The entry function's frames (outermost ones: not inside another of its frames).
    mine = [f for f in fs if f["label"] == label(entry[0])]
    outer = [f for f in mine
             if not any(o is not f and o["x"] <= f["x"] and f["x"] + f["w"] <= o["x"] + o["w"]
                        and o["depth"] < f["depth"] for o in mine)]
    share = sum(f["w"] for f in outer) / width
    assert share >= SHARE, "main holds %.1f%% of the flame graph: %s" % (
        100 * share, sorted(((f["w"], f["label"]) for f in fs), reverse=True)[:5])
    # No frame wider than its parent; children fit in it.
    kids = {}
    for i, f in enumerate(fs):
        if f["depth"] == 0:
            continue
        assert f["parent"] is not None, f
        parent = fs[f["parent"]]
        assert f["w"] <= parent["w"], (f, parent)
        kids[f["parent"]] = kids.get(f["parent"], 0) + f["w"]
    for i, w in kids.items():
        assert w <= fs[i]["w"], fs[i]


def test_no_frame_has_an_empty_interior_and_folds_are_named(browser, traced):  # noqa: F811
    """A frame's own width (what its children leave) is the function's own time, give or take
    what the estimate leaves inside a frame (light callees): at most a few percent of the
    whole more, but for the cycles the page names as folded, whose frames hold their
    members' own time."""
    name, st, html, shot = traced
    page = open_flame(browser, html, "real-%s-folds" % shot)
    fs = frames(page)
    width = max(f["w"] for f in fs)
    note = page.eval("(document.querySelector('#flame-folded') || {}).textContent || ''")
    own = {}
    for i, f in enumerate(fs):
        inside = sum(c["w"] for c in fs if c["parent"] == i)
        own[f["label"]] = own.get(f["label"], 0) + f["w"] - inside
    tottime = {label(func): v[2] for func, v in st.stats.items()}
    for lbl, w in own.items():
        if lbl == "all" or lbl in note:
            continue
        assert lbl in tottime, lbl
        assert w / width <= tottime[lbl] / st.total_tt + 0.03, (
            "%s: %.1f%% of the width its own, %.1f%% of the time" % (
                lbl, 100 * w / width, 100 * tottime[lbl] / st.total_tt))
    # Both programs recurse through functions that call each other (a macro through Jinja's
    # runtime, docutils' state machine through nested parsing): the page names the fold.
    assert note.startswith("Recursion folded"), note
    assert "calling each other" in note, note
    folded = page.eval("JSON.parse(document.getElementById('rprofile-data').textContent)"
                       ".flame.folded")
    assert folded and all(f["funcs"] for f in folded)
    for f in folded:
        for lbl in f["funcs"]:
            assert lbl in note
