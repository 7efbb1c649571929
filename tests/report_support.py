"""What the report's test modules share: a program with known call paths, running Python, and
opening a report in headless Chromium (the `browser` fixture, conftest.py) with a screenshot of
each view saved under .build/report-screenshots/."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / ".build" / "report-screenshots"

# main -> a -> leaf, main -> b -> leaf, main -> c: each function takes visible time, and
# calls no builtin, so the call paths are known exactly.
PROGRAM = textwrap.dedent("""\
    def leaf(n):
        s = 0
        for i in range(n):
            s += i
        return s

    def a():
        return leaf(60000)

    def b():
        return leaf(30000)

    def c():
        s = 0
        for i in range(40000):
            s += i
        return s

    def main():
        for _ in range(3):
            a()
            b()
            c()

    main()
    """)


def report_data(path):
    """The data a report's scripts draw from (its `rprofile-data` blob), from the file `path`."""
    text = Path(path).read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="rprofile-data">(.*?)</script>', text,
                  re.S)
    assert m, "no data blob in %s" % path
    return json.loads(m.group(1))


def run(*args, cwd, env=None):
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def cli(*args, cwd, env=None):
    """`python *args`, its output captured, whatever its exit status."""
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, **(env or {})))


def open_report(browser, path, shot=None):
    page = browser.open(Path(path).as_uri())
    page.wait_for("document.body.dataset.ready === '1'")
    assert page.console_errors() == []
    if shot:
        save(page, shot)
    return page


def save(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(str(SHOTS / (name + ".png")))
