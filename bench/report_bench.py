"""The HTML report of a big profile: how long it takes to write, how big it is, and how soon it
is interactive in headless Chromium. Run by hand, never a pass/fail test.

    python bench/report_bench.py [--rounds 5] [--scale 1.0]

Input: bench/stats_bench.py's synthetic profile (100,000 functions and 1,000,000 caller edges
at scale 1; made by that script on first use, into bench/.build/stats/).

Measured, each round in fresh processes:
- write: `Stats(file).to_html(path)` (the load not timed), and the whole command
  `python -m rprofile.stats --html path file` (wall time, interpreter start included);
- size of the file;
- in headless Chromium (tests/chromium.py drives Debian's `chromium` over its DevTools pipe),
  a new tab each round: `ready`, when the page's script has parsed the data and drawn the
  table (performance.now(), from the start of navigation), and `load`, the load event; then the
  interactions, each timed inside the page: sort by name, by tottime, filter by a pattern
  (regular expression), open the function with most callers, open the flame graph.

Targets (issue 27): written in <= 1 s, <= 20 MB, interactive within 2 s of load.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def synthetic(scale):
    sys.path.insert(0, HERE)
    import stats_bench

    return stats_bench.synthetic(scale)


CHILD = """
import sys, time
from rprofile import Stats
st = Stats(sys.argv[1])
t = time.perf_counter()
st.to_html(sys.argv[2])
print(time.perf_counter() - t)
"""


def write_times(prof, out):
    t = float(subprocess.run([sys.executable, "-c", CHILD, prof, out], check=True,
                             capture_output=True, text=True).stdout)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rprofile.stats", "--html", out, prof], check=True,
                   capture_output=True)
    return t, time.perf_counter() - start


# Each interaction runs inside the page and returns its milliseconds.
INTERACTIONS = {
    "sort by name": """(() => { const t = performance.now();
        document.querySelector('#v-table th:nth-child(8)').click();
        return performance.now() - t; })()""",
    "sort by tottime": """(() => { const t = performance.now();
        document.querySelector('#v-table th:nth-child(2)').click();
        return performance.now() - t; })()""",
    "filter (regex)": """(() => { const f = document.querySelector('#filter');
        f.value = 'parse_.*(node|token)'; const t = performance.now();
        const r = document.querySelector('#regex'); r.checked = true;
        r.dispatchEvent(new Event('change'));
        const ms = performance.now() - t; f.value = ''; r.checked = false;
        r.dispatchEvent(new Event('change')); return ms; })()""",
    "function with most callers": """new Promise(done => { const t = performance.now();
        location.hash = '#f/' + HUB;
        const wait = () => document.querySelector('#v-func h2') &&
            !document.querySelector('#v-func').hidden ? done(performance.now() - t)
            : requestAnimationFrame(wait);
        wait(); })""",
    "flame graph": """new Promise(done => { const t = performance.now();
        location.hash = '#flame';
        const wait = () => { const f = document.querySelector('#v-flame iframe');
            f && f.contentWindow && f.contentWindow.searchbtn ? done(performance.now() - t)
            : setTimeout(wait, 5); };
        wait(); })""",
}


def browser_times(path):
    from chromium import Browser

    out = {}
    with Browser(timeout=120) as b:
        start = time.perf_counter()
        page = b.open("file://" + os.path.abspath(path))
        out["load (wall)"] = 1000 * (time.perf_counter() - start)
        page.wait_for("window.rprofileReady !== undefined", timeout=60)
        out["ready"] = page.eval("window.rprofileReady")
        out["load event"] = page.eval("performance.getEntriesByType('navigation')[0]"
                                      ".loadEventEnd")
        # The function with most callers (untimed: the data parsed again).
        hub = page.eval("""(() => { const d = JSON.parse(document.getElementById(
            'rprofile-data').textContent); let best = 0;
            d.callers.n.forEach((n, i) => { if (n > d.callers.n[best]) best = i; });
            return best; })()""", timeout=120)
        for name, js in INTERACTIONS.items():
            out[name] = page.eval(js.replace("HUB", str(hub)), timeout=120)
        page.close()
    return out


def setup(description):
    """`(args, path)`: the options (--rounds, --scale) and the synthetic profile, said."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    prof = synthetic(args.scale)
    info = json.load(open(prof + ".json"))
    print("Python %s; %d functions, %d caller edges (%s)"
          % (sys.version.split()[0], info["functions"], info["edges"], os.path.basename(prof)))
    return args, prof


def main():
    args, prof = setup(__doc__.split("\n")[0])
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.html")
        for r in range(args.rounds):
            w, e2e = write_times(prof, out)
            rows.setdefault("to_html (s)", []).append(w)
            rows.setdefault("python -m rprofile.stats --html, whole command (s)", []).append(e2e)
            rows.setdefault("size (MB)", []).append(os.path.getsize(out) / 1e6)
            for k, v in browser_times(out).items():
                rows.setdefault("Chromium: %s (ms)" % k, []).append(v)
            print("round %d done" % (r + 1), file=sys.stderr)
    print_table(rows, args.rounds)


def print_table(rows, rounds):
    """Each row's median and range over the rounds, in a format its unit suggests."""
    width = max(len(k) for k in rows)
    print("%-*s  %10s  %s" % (width, "", "median", "(min-max), %d rounds" % rounds))
    for k, v in rows.items():
        fmt = ("%.0f" if k.endswith("(ms)") else "%.3f" if k.endswith("(s)")
               else "%.2f" if k.endswith("(ratio)") else "%.1f")
        print("%-*s  %10s  (%s-%s)" % (width, k, fmt % statistics.median(v), fmt % min(v),
                                       fmt % max(v)))


if __name__ == "__main__":
    main()
