"""Stalls (`--stall MS`, `Sampler(stall=MS)`): a program that idles, freezes for 1.5 s in one
function and idles again gets one stall of about 1.5 s naming that function, whether the freeze
burns a CPU or blocks (wall mode: away from its idle wait), and none for its idle parts."""

import re
import time

import pytest

from rprofile.sampling import Sampler
from sampler_support import needs_sampler, run_rprofile, sampled_program

pytestmark = needs_sampler


def stalls_printed(text):
    """[(start, duration, thread, first function)] of a stalls report."""
    found = re.findall(r"  at ([\d.]+) s for ([\d.]+) s: (.+)\n +[\d.]+%  (\S+)", text)
    return [(float(a), float(d), thread, name) for a, d, thread, name in found]


@pytest.mark.parametrize("kind, mode, function", [("cpu", "wall", "freeze"),
                                                  ("sleep", "wall", "blocked"),
                                                  ("cpu", "cpu", "freeze"),
                                                  ("cpu", "gil", "freeze")])
def test_one_freeze_is_one_stall_naming_its_function(tmp_path, kind, mode, function):
    proc = run_rprofile("--sample", "--mode", mode, "--stall", "500", "-o",
                        str(tmp_path / "out.prof"), sampled_program("freeze.py"), kind,
                        check=False)
    if proc.returncode == 2 and "cpu mode needs the OS id" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert "Stalls of 500 ms or longer (%s mode" % mode in proc.stderr, proc.stderr
    found = stalls_printed(proc.stderr)
    assert len(found) == 1, proc.stderr
    start, duration, thread, name = found[0]
    assert name == function and thread.startswith("MainThread"), proc.stderr
    assert 1.3 <= duration <= 2.0 and 0.9 <= start <= 1.6, proc.stderr


def test_a_blocking_freeze_is_no_stall_in_cpu_mode(tmp_path):
    proc = run_rprofile("--sample", "--mode", "cpu", "--stall", "500",
                        sampled_program("freeze.py"), "sleep", check=False)
    if proc.returncode == 2 and "cpu mode needs the OS id" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    # Printed after the table, on stdout.
    assert "(cpu mode: a thread running without a break, on a CPU): 0" in proc.stdout, proc.stdout


def _wait_for_events(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.01)


def _freeze_here(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_the_stalls_of_a_sampler_in_process():
    with Sampler(rate=1000, stall=300) as s:
        _wait_for_events(0.5)
        _freeze_here(0.6)
        _wait_for_events(0.5)
    main = [st for st in s.stalls if st.thread.startswith("MainThread")]
    assert len(main) == 1, s.stalls
    stall = main[0]
    assert 0.5 <= stall.duration <= 0.9 and stall.frames[0][0] == "_freeze_here", stall
    assert stall.frames[0][1] == __file__ and stall.samples > 300
    with pytest.raises(ValueError, match="stall must be a number of milliseconds > 0"):
        Sampler(stall=0)
    with pytest.raises(ValueError, match="no stalls are looked for"):
        Sampler(rate=100).start().stop().stalls


def test_the_html_report_lists_the_stalls_and_links_their_functions(browser, tmp_path):
    from report_support import open_report, save

    html = tmp_path / "stalls.html"
    run_rprofile("--sample", "--stall", "500", "--html", str(html),
                 sampled_program("freeze.py"), "cpu")
    page = open_report(browser, html)
    assert not page.eval("document.querySelector('nav a[data-view=stalls]').hidden")
    page.eval("location.hash = '#stalls'")
    page.wait_for("!document.querySelector('#v-stalls').hidden")
    save(page, "stalls")
    stalls = page.eval("[...document.querySelectorAll('#v-stalls .stall')].map(s => s.textContent)")
    assert len(stalls) == 1, stalls
    m = re.match(r"at ([\d.]+) s for ([\d.]+) s: MainThread", stalls[0])
    assert m and 1.3 <= float(m.group(2)) <= 2.0, stalls
    note = page.eval("document.querySelector('#stalls-note').textContent")
    assert note.startswith("1 stall of 500 ms or longer (wall mode): stretches in which a thread "
                           "ran without a break, away from its idle wait."), note
    # The heaviest frame is the frozen function, linked to its row of the table.
    first = page.eval("document.querySelector('#v-stalls .stall li a.fn').textContent")
    assert "freeze" in first, first
    page.eval("document.querySelector('#v-stalls .stall li a.fn').click()")
    page.wait_for("!document.querySelector('#v-func').hidden")
    # A report of a run without --stall has no such tab.
    plain = tmp_path / "plain.html"
    run_rprofile("--sample", "--html", str(plain), sampled_program("phases.py"), "0.1", "0", "0")
    page = open_report(browser, plain)
    assert page.eval("document.querySelector('nav a[data-view=stalls]').hidden")
