"""The sampler's `--flamegraph` SVG (inferno's): a frame per function, as the HTML report's
graph, unless `--flamegraph-lines`; and an icicle, so that a browser opening the file (at its
top) shows the frames, not the empty space a bottom-up graph leaves above a deep stack. Checked
in headless Chromium (tests/chromium.py) after the SVG's script ran; a screenshot is saved under
.build/report-screenshots/.
"""

import re
from pathlib import Path

from sampler_support import needs_sampler, run_rprofile, sampled_program

pytestmark = needs_sampler

SHOTS = Path(__file__).resolve().parents[1] / ".build" / "report-screenshots"
# tests/sampled_programs/deep.py: `down` recursing 1,000 frames deep, burning at the bottom.
PROGRAM = "deep.py"


def flamegraph(tmp_path, *flags):
    """The program's flame graph SVG, written with `flags`."""
    path = tmp_path / "graph.svg"
    run_rprofile("--sample", "-o", str(tmp_path / "p.prof"), "--flamegraph", str(path), *flags,
              sampled_program(PROGRAM))
    return path


def frame_labels(svg):
    return set(re.findall(r"<title>(.*?) \(\d[\d,]* samples?", svg.read_text()))


def test_a_frame_per_function_unless_lines_are_asked(tmp_path):
    by_function = {t for t in frame_labels(flamegraph(tmp_path)) if t.startswith("down (")}
    assert len(by_function) == 1, by_function
    [label] = by_function
    # The function's label is its first line's, as the report's graph labels it.
    assert re.fullmatch(r"down \(.*deep\.py:\d+\)", label)
    by_line = {t for t in frame_labels(flamegraph(tmp_path, "--flamegraph-lines"))
               if t.startswith("down (")}
    # deep.py's `down` ran several of its lines (the recursive call, the loop at the bottom).
    assert len(by_line) >= 2, by_line
    assert label not in by_line


def test_the_svg_opens_on_its_frames(tmp_path, browser):
    page = browser.open(flamegraph(tmp_path).as_uri(), width=1280, height=900)
    page.wait_for("typeof searchbtn !== 'undefined' && !!searchbtn")
    assert page.console_errors() == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(str(SHOTS / "flamegraph-svg.png"))
    # The frames whose box shows in the first screen, and the whole's (`all`) among them.
    seen = page.eval("""[...document.querySelectorAll('#frames > g')].filter(g => {
            const r = g.querySelector('rect').getBoundingClientRect();
            return r.width > 0 && r.bottom > 0 && r.top < innerHeight;
        }).map(g => g.querySelector('title').textContent)""")
    height = page.eval("document.documentElement.getBoundingClientRect().height")
    assert height > 900, "the graph of a 1,000-deep stack is taller than the screen"
    assert any(t.startswith("all (") for t in seen), seen[:5]
    assert any(t.startswith("<module> (") for t in seen), seen[:5]
    assert len(seen) >= 10, seen
