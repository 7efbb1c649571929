"""The HTML report's time view (issue 37): each thread's activity over a sampling run, its stalls
marked, and the table and flame graph of the stretch dragged across with a real mouse in
headless Chromium. Where a phase ran is read from the report's data (its stacks by time); what
the view shows after the drag is read from the page."""

import re
import time

import pytest

from report_support import open_report, report_data, save
from rprofile.sampling import Sampler
from sampler_support import native_holder, needs_sampler, run_rprofile, sampled_program

pytestmark = needs_sampler


def bins_of(data, name):
    """The bins (columns) whose samples have a function called `name` on the stack."""
    T, names = data["time"], data["strings"]
    fn = {i for i, n in enumerate(data["fn"]["name"]) if names[n] == name}
    starts = [0]
    for n in T["stacks"]["n"]:
        starts.append(starts[-1] + n)
    holds = {s for s in range(len(T["stacks"]["n"]))
             if fn & set(T["stacks"]["f"][starts[s]:starts[s + 1]])}
    found, k = [], 0
    for b, n in enumerate(T["cells"]["n"]):
        if any(T["cells"]["s"][k + i] in holds for i in range(n)):
            found.append(b)
        k += n
    return found


def plot_box(page):
    return page.eval("(() => { const r = document.querySelector('#time-lanes .time-plot')"
                     ".getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()")


def drag_bins(page, n, first, last):
    """Drags across the columns first..last (of n), from the middle of one to the other."""
    x, y, w, _ = plot_box(page)
    page.drag(x + w * (first + 0.5) / n, y + 8, x + w * (last + 0.5) / n, y + 8)


def shown(page):
    """The functions of the view's table (their names) and of its flame graph."""
    table = page.eval("[...document.querySelectorAll('#time-table tbody tr[data-row] a.fn')]"
                      ".map(a => a.textContent)")
    flame = page.eval("[...document.querySelectorAll('#time-flame g.tf title')]"
                      ".map(t => t.textContent)")
    return table, flame


def names_in(texts):
    return {m.group(1) for t in texts for m in [re.search(r"\((\w+)\)", t)] if m}


@pytest.fixture(scope="module")
def phases_report(tmp_path_factory):
    html = tmp_path_factory.mktemp("time") / "phases.html"
    run_rprofile("--sample", "--html", str(html), sampled_program("phases.py"), "1", "1", "0.3")
    return html


def test_a_drag_over_one_phase_shows_that_phase_alone(browser, phases_report):
    data = report_data(phases_report)
    n = data["time"]["n"]
    a, b = bins_of(data, "phase_a"), bins_of(data, "phase_b")
    assert a and b and max(a) <= min(b) + 1, (a, b)
    page = open_report(browser, phases_report)
    page.eval("location.hash = '#time'")
    page.wait_for("!document.querySelector('#v-time').hidden")
    # The whole run at first: both phases, at the top of the table by cumtime.
    page.click("#time-table th[data-i='3']")
    table, flame = shown(page)
    assert {"phase_a", "phase_b", "burn"} <= names_in(table), table
    assert {"phase_a", "phase_b"} <= names_in(flame), flame
    assert page.eval("document.querySelector('#time-clear').disabled")
    # The middle half of phase A, then of phase B, dragged each way.
    for phase, other, span, backwards in (("phase_a", "phase_b", a, False),
                                          ("phase_b", "phase_a", b, True)):
        quarter = (span[-1] - span[0]) // 4
        first, last = span[0] + quarter, span[-1] - quarter
        if backwards:
            first, last = last, first
        drag_bins(page, n, first, last)
        page.wait_for("!document.querySelector('#time-clear').disabled")
        table, flame = shown(page)
        assert phase in names_in(table) and other not in names_in(table), (phase, table)
        assert phase in names_in(flame) and other not in names_in(flame), (phase, flame)
        note = page.eval("document.querySelector('#time-sel-note').textContent")
        assert note.startswith("Selected "), note
        # The samples it counts are those the data has in the columns of the stretch it names.
        t0, t1 = (float(x) for x in re.search(r"Selected ([\d.]+)–([\d.]+) s", note).groups())
        T = data["time"]
        lo, hi = (round((t - T["origin"]) / T["width"]) for t in (t0, t1))
        assert lo <= min(first, last) + 1 and hi >= max(first, last), (lo, hi, first, last)
        cells, k, want = T["cells"], 0, 0
        for bin_, count in enumerate(cells["n"]):
            if lo <= bin_ < hi:
                want += sum(cells["w"][k:k + count])
            k += count
        got = int(re.search(r": ([\d,]+) samples", note).group(1).replace(",", ""))
        assert got == want, (note, want)
        # Each function of the stretch (the table sorted by cumtime) is on its every sample.
        rows = page.eval("[...document.querySelectorAll('#time-table tbody tr[data-row]')]"
                         ".map(r => r.textContent)")
        assert len(rows) == 3 and all(r.count("100.00%") == (2 if "(burn)" in r else 1)
                                      for r in rows), rows
        save(page, "time-" + phase)
    # A click (no drag) keeps the selection; the button clears it.
    page.click("#time-clear")
    page.wait_for("document.querySelector('#time-clear').disabled")
    table, _ = shown(page)
    assert {"phase_a", "phase_b"} <= names_in(table), table
    assert page.eval("document.querySelector('#time-sel').hidden")
    assert page.console_errors() == []


def test_a_click_on_a_flame_frame_zooms_to_it_and_back(browser, phases_report):
    page = open_report(browser, phases_report)
    page.eval("location.hash = '#time'")
    page.wait_for("!!document.querySelector('#time-flame g.tf')")
    all_width = page.eval("document.querySelector('#time-flame svg').getAttribute('width')")
    page.click("#time-flame g.tf[data-f='%d']" % page.eval(
        "(() => { const D = JSON.parse(document.getElementById('rprofile-data').textContent);"
        " return D.fn.name.findIndex((n) => D.strings[n] === 'phase_a'); })()"))
    # phase_a is now as wide as the graph, and phase_b is gone.
    _, flame = shown(page)
    assert "phase_a" in names_in(flame) and "phase_b" not in names_in(flame), flame
    rects = page.eval("[...document.querySelectorAll('#time-flame g.tf')].map(g => "
                      "[g.querySelector('title').textContent, +g.querySelector('rect')"
                      ".getAttribute('width')])")
    width = [w for t, w in rects if "(phase_a)" in t][0]
    assert width >= float(all_width) - 2, (width, all_width)
    # A click on the root ("all") goes back.
    page.click("#time-flame g.tf[data-f='-1']")
    _, flame = shown(page)
    assert {"phase_a", "phase_b"} <= names_in(flame), flame


def test_a_stall_is_marked_on_its_thread_and_a_click_selects_it(browser, tmp_path):
    html = tmp_path / "freeze.html"
    run_rprofile("--sample", "--stall", "500", "--html", str(html), sampled_program("freeze.py"),
                 "cpu")
    page = open_report(browser, html)
    page.eval("location.hash = '#time'")
    page.wait_for("!document.querySelector('#v-time').hidden")
    marks = page.eval("[...document.querySelectorAll('.time-lane .time-stall')].map(m => "
                      "[m.parentNode.dataset.thread, m.title])")
    assert len(marks) == 1, marks
    assert "freeze" in marks[0][1], marks
    page.click(".time-stall")
    page.wait_for("!document.querySelector('#time-clear').disabled")
    save(page, "time-stall")
    top = page.eval("[...document.querySelector('#time-table tbody tr[data-row]').cells]"
                    ".map(c => c.textContent)")
    # Its stretch is the stall's to a column (a few ms) either side: the frozen function is
    # nearly all of it.
    assert "(freeze)" in top[5] and float(top[2].rstrip("%")) >= 95, top


def test_a_flight_recorder_dump_opens_on_its_window(browser, tmp_path):
    # A run of 2.5 s recorded for its last second: the view spans that second, phase B alone.
    html = tmp_path / "recent.html"
    run_rprofile("--sample", "--record-last", "1", "--html", str(html),
                 sampled_program("phases.py"), "1", "1.5", "0")
    data = report_data(html)
    T = data["time"]
    # B lasts longer than the window: whenever the sampler attached, A is out of it.
    assert T["n"] * T["width"] <= 1.0 + 2 * T["width"], T
    assert bins_of(data, "phase_b") and not bins_of(data, "phase_a")
    page = open_report(browser, html)
    page.eval("location.hash = '#time'")
    table, _ = shown(page)
    assert "phase_b" in names_in(table) and "phase_a" not in names_in(table), table


TRACED_PHASES = """
import time

def step(seconds):
    time.sleep(seconds)

def phase_a():
    for _ in range(30):
        step(0.01)

def phase_b():
    for _ in range(30):
        step(0.01)

phase_a()
phase_b()
"""


def test_a_traced_timeline_has_a_time_view_by_its_calls(browser, tmp_path):
    script = tmp_path / "two_phases.py"
    script.write_text(TRACED_PHASES)
    html = tmp_path / "traced.html"
    run_rprofile("--timeline", str(tmp_path / "t.json"), "--html", str(html), str(script))
    data = report_data(html)
    assert data["time"]["mode"] == "traced"
    a, b = bins_of(data, "phase_a"), bins_of(data, "phase_b")
    assert a and b and max(a) <= min(b) + 1, (a, b)
    page = open_report(browser, html)
    page.eval("location.hash = '#time'")
    page.wait_for("!document.querySelector('#v-time').hidden")
    # The time in calls of the whole run: both phases, each about 0.3 s.
    table, _ = shown(page)
    assert {"phase_a", "phase_b", "step"} <= names_in(table), table
    quarter = (a[-1] - a[0]) // 4
    drag_bins(page, data["time"]["n"], a[0] + quarter, a[-1] - quarter)
    page.wait_for("!document.querySelector('#time-clear').disabled")
    table, flame = shown(page)
    assert "phase_a" in names_in(table) and "phase_b" not in names_in(table), table
    assert "phase_a" in names_in(flame) and "phase_b" not in names_in(flame), flame
    note = page.eval("document.querySelector('#time-sel-note').textContent")
    t0, t1, inside = (float(x) for x in re.search(
        r"Selected ([\d.]+)–([\d.]+) s: ([\d.]+) s in calls", note).groups())
    # One thread, in a call all along: its time in calls is the stretch's length.
    assert abs(inside - (t1 - t0)) <= 0.002, note
    save(page, "time-traced")


def test_reports_without_samples_or_calls_by_time_have_no_time_view(browser, tmp_path):
    # A traced run's report without a timeline: nothing by time.
    html = tmp_path / "traced.html"
    run_rprofile("--html", str(html), sampled_program("phases.py"), "0.05", "0", "0")
    assert report_data(html)["time"] is None
    page = open_report(browser, html)
    assert page.eval("document.querySelector('nav a[data-view=time]').hidden")


def test_the_thread_filter_shows_one_threads_samples_and_each_thread_has_a_lane(browser,
                                                                                  tmp_path):
    html = tmp_path / "threads.html"
    run_rprofile("--sample", "--html", str(html), sampled_program("gil_wait.py"))
    page = open_report(browser, html)
    page.eval("location.hash = '#time'")
    page.wait_for("!document.querySelector('#v-time').hidden")
    lanes = page.eval("[...document.querySelectorAll('.time-name')].map(n => n.textContent)")
    assert lanes[:2] == ["MainThread", "waiter"], lanes
    table, _ = shown(page)
    assert {"burner", "waiter"} <= names_in(table), table
    page.eval("const s = document.querySelector('#thread');"
              " s.value = [...s.options].find(o => o.textContent.startsWith('waiter')).value;"
              " s.dispatchEvent(new Event('change'))")
    page.wait_for("document.querySelector('#time-sel-note').textContent.includes(' of waiter')")
    table, flame = shown(page)
    assert "waiter" in names_in(table) and "burner" not in names_in(table), table
    assert "burner" not in names_in(flame), flame


def test_a_thread_in_no_python_code_has_a_lane_drawn_so_in_wall_mode(browser, tmp_path):
    # Wall mode counts every read that has a stack: its idle reads are a C thread's, in no
    # Python code, drawn in their own colour and named in the legend.
    holder = native_holder(tmp_path)
    ident = holder.start_holding()
    try:
        with Sampler(rate=500) as s:
            end = time.perf_counter() + 0.5
            while time.perf_counter() < end:
                pass
    finally:
        holder.stop_holding()
    html = tmp_path / "c_thread.html"
    s.to_html(str(html))
    lanes = report_data(html)["time"]["lanes"]
    held = [i for i, lane in enumerate(lanes) if sum(lane["idle"]) and not sum(lane["counted"])]
    assert len(held) == 1, lanes
    page = open_report(browser, html)
    page.eval("location.hash = '#time'")
    page.wait_for("!document.querySelector('#v-time').hidden")
    assert "in no Python code" in page.eval("document.querySelector('#time-note').textContent")
    save(page, "time-c-thread")
    # Across the middle of its lane, what is drawn (columns without a read are blank) is the
    # legend's colour for it (#dcdce2).
    drawn = page.eval("(() => { const c = document.querySelectorAll('.time-lane canvas')[%d];"
                      " const d = c.getContext('2d').getImageData(0, c.height >> 1, c.width, 1)"
                      ".data; const out = []; for (let i = 0; i < d.length; i += 4)"
                      " if (d[i + 3]) out.push([d[i], d[i + 1], d[i + 2]].join()); return out;"
                      " })()" % held[0])
    width = page.eval("document.querySelectorAll('.time-lane canvas')[%d].width" % held[0])
    # A loaded machine leaves many columns unread.
    assert len(drawn) > width / 10, (len(drawn), width)
    assert set(drawn) == {"220,220,226"}, sorted(set(drawn))[:5]
