"""Objects by type (issue 38, "Cost"): what `Profile(types=True)` costs a real program that builds
many small objects, beside pymemtrace's ReferenceTracing (installed from PyPI by the bench when
it builds here). Run by hand, never a pass/fail test; needs Python 3.13.3+.

    python bench/types_bench.py [--rounds 5] [--seconds 1.0] [--modes none,types,...]

The program is tests/sampled_programs/docutils_html.py's: docutils turning a generated
reStructuredText document into HTML, a fixed number of times (how many the bare program does in
`--seconds`, counted once). Each round runs every mode once in a fresh process, the order
rotating, and times the work alone:

- `none`: the program alone;
- `profile`: `rprofile.Profile()` (the call tracer that types=True rides on);
- `types`, `types+builtins`, `types-one-class`: `Profile(types=True)` without builtin types,
  with them, and with `types_only=["paragraph"]`; the same three with `-no-calls`:
  `Profile(types=True, calls=False)`, objects counted with no call profiled;
- `pymemtrace`, `pymemtrace+builtins`, `pymemtrace-one-class`: pymemtrace's
  `cPyMemTrace.ReferenceTracing` (a log of every creation and destruction) the same three ways,
  its log in a temporary folder.

Printed: each mode's median time and its ratio to `none`, and each types mode's ratio to the
pymemtrace mode of the same filter.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchsite  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(HERE), "tests", "sampled_programs", "docutils_html.py")
MODES = ["none", "profile", "types", "types+builtins", "types-one-class", "types-no-calls",
         "types+builtins-no-calls", "types-one-class-no-calls", "pymemtrace",
         "pymemtrace+builtins", "pymemtrace-one-class"]
ONE_CLASS = "paragraph"

CHILD = r"""
import os, sys, time
sys.argv = [sys.argv[0]]
mode, rounds, site = os.environ["TB_MODE"], int(os.environ["TB_ROUNDS"]), os.environ["TB_SITE"]
if site:
    sys.path.insert(0, site)
import runpy
ns = runpy.run_path(os.environ["TB_PROGRAM"], run_name="docutils_program")
from docutils.core import publish_string
text = ns["document"](3, 3)

def work():
    for _ in range(rounds):
        publish_string(text, writer_name="html", settings_overrides={"report_level": 5})

work()  # warm: imports and caches are not what is measured
if mode == "none":
    ctx = None
elif mode.startswith("pymemtrace"):
    from pymemtrace import cPyMemTrace
    kw = {"filepath": os.path.join(os.environ["TB_TMP"], "refs.log"), "gc_collect_on_exit": -1}
    if mode.endswith("builtins"):
        kw["include_builtins"] = True
    if mode.endswith("one-class"):
        kw["include_tp_names"] = [os.environ["TB_ONE"]]
    ctx = cPyMemTrace.ReferenceTracing(**kw)
else:
    import rprofile
    kw = {}
    if mode.endswith("-no-calls"):
        mode = mode[:-len("-no-calls")]
        kw["calls"] = False
    if mode.startswith("types"):
        kw["types"] = True
    if mode.endswith("builtins"):
        kw["types_builtins"] = True
    if mode.endswith("one-class"):
        kw["types_only"] = [os.environ["TB_ONE"]]
    ctx = rprofile.Profile(**kw)
t = time.perf_counter()
if ctx is None:
    work()
else:
    with ctx:
        work()
print(time.perf_counter() - t)
"""


def run_mode(mode, rounds, site):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TB_MODE=mode, TB_ROUNDS=str(rounds), TB_SITE=site or "",
                   TB_PROGRAM=PROGRAM, TB_TMP=tmp, TB_ONE=ONE_CLASS)
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                             text=True)
        if out.returncode != 0:
            print("%s failed:\n%s" % (mode, out.stderr[-2000:]), file=sys.stderr)
            return None
        return float(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--modes", default=",".join(MODES),
                    help="which modes (none is always run: the ratios are to it)")
    args = ap.parse_args()
    asked = set(args.modes.split(",")) | {"none"}
    unknown = asked - set(MODES)
    if unknown:
        ap.error("unknown modes: %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(MODES)))
    if sys.version_info < (3, 13, 3):
        sys.exit("types=True needs Python 3.13.3+")
    site = benchsite.ensure("pymemtrace")
    modes = [m for m in MODES if m in asked and (site or not m.startswith("pymemtrace"))]
    # How many documents the bare program converts in --seconds.
    one = run_mode("none", 1, None)
    work = max(1, round(args.seconds / one))
    times = {m: [] for m in modes}
    for r in range(args.rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for m in order:
            t = run_mode(m, work, site)
            if t is not None:
                times[m].append(t)
    med = {m: statistics.median(ts) for m, ts in times.items() if ts}
    print("Python %s, docutils_html.py x %d documents, %d rounds, medians\n"
          % (sys.version.split()[0], work, args.rounds))
    print("| mode | seconds | x none | x pymemtrace's |")
    print("|---|---|---|---|")
    for m in modes:
        if m not in med:
            continue
        twin = (m.replace("types", "pymemtrace").replace("-no-calls", "")
                if m.startswith("types") else None)
        vs = "%.2fx" % (med[m] / med[twin]) if twin in med else "-"
        print("| %s | %.3f | %.2fx | %s |" % (m, med[m], med[m] / med["none"], vs))


if __name__ == "__main__":
    main()
