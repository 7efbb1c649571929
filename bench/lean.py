"""What the sampler's kept reads lean to: the share of samples whose innermost frame is each
function, sampling without pausing the target and with `--blocking` (each sample read with the
target stopped: a stack as it was, never torn), on programs of fast calls. A read torn by the
program's calls is read again and, failing that, dropped; where that happens most (short
functions) the shares move to the callers. Run by hand, never a pass/fail test.

    python bench/lean.py [--runs 3] [--rate 4000] [--programs pairs,jinja] [--top 6]

Programs: `pairs` (tests/sampled_programs/pairs.py, a loop calling short functions, 3 s) and
`jinja` (tests/real_programs/jinja_loop.py, Jinja2 rendering; needs jinja2 installed). Runs
alternate between the two modes. Printed per program: the functions with the largest shares
under `--blocking` (median over the runs) beside their shares without, the kept and dropped
reads, the share of reads torn at the first look (the summary's, said past a tenth), and each
run's distance from the blocking runs' mean shares (the sum of the absolute differences over
all functions: 0 alike, 2 nothing in common; blocking runs against their own mean show the
noise of a run).
"""

import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
PROGRAMS = {
    "pairs": [os.path.join(TESTS, "sampled_programs", "pairs.py"), "3"],
    "jinja": [os.path.join(TESTS, "real_programs", "jinja_loop.py")],
}
MODES = {"nonblocking": [], "blocking": ["--blocking"]}


def innermost(path):
    """{(function, file's base name): samples} of the innermost frames of a folded-stacks file."""
    counts = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            leaf = stack.split(";")[-1]
            name, _, where = leaf.rpartition(" (")
            file = re.sub(r":-?\d+$", "", where.rstrip(")"))
            counts[(name, os.path.basename(file))] += int(count)
    return counts


def run(program, mode, rate, folder, i):
    out = os.path.join(folder, "%s-%s-%d.txt" % (os.path.basename(program[0]), mode, i))
    cmd = [sys.executable, "-m", "rprofile", "--sample", "--rate", str(rate)] + MODES[mode] + \
        ["--collapsed", out] + program
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(cmd), proc.stderr[-2000:]))
    text = proc.stdout + proc.stderr
    dropped = re.search(r"(\d+) dropped", text)
    # The summary's share of reads torn at the first look, said past a tenth (else at most it).
    torn = re.search(r"(\d+)% of the reads were torn", text)
    return innermost(out), int(dropped.group(1)) if dropped else 0, torn.group(1) + "%" if torn \
        else "<=10%"


def shares(counts):
    total = sum(counts.values()) or 1
    return {k: v / total for k, v in counts.items()}


def distance(a, b):
    return sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=4000)
    ap.add_argument("--programs", default="pairs,jinja")
    ap.add_argument("--top", type=int, default=6)
    args = ap.parse_args()
    names = [p for p in args.programs.split(",") if p]
    unknown = [p for p in names if p not in PROGRAMS]
    if unknown or args.runs < 1 or args.rate <= 0 or args.top < 1:
        ap.error("programs are %s; runs, rate and top are positive" % ", ".join(PROGRAMS))
    print("Python %s, rate %d Hz, %d runs a mode\n" % (
        sys.version.split()[0], args.rate, args.runs))
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            got = {mode: [] for mode in MODES}
            for i in range(args.runs):
                for mode in MODES:
                    got[mode].append(run(PROGRAMS[name], mode, args.rate, folder, i))
            report(name, got, args.top)


def report(name, got, top):
    runs = {mode: [shares(c) for c, _, _ in results] for mode, results in got.items()}
    mean = collections.Counter()
    for s in runs["blocking"]:
        for k, v in s.items():
            mean[k] += v / len(runs["blocking"])

    def median(mode, key):
        return statistics.median(s.get(key, 0.0) for s in runs[mode])

    print("%s: innermost frame's share of the samples, median over the runs\n" % name)
    print("| function | blocking | without |")
    print("|---|---|---|")
    for key, _ in mean.most_common(top):
        print("| %s (%s) | %.1f%% | %.1f%% |" % (key[0], key[1], 100 * median("blocking", key),
                                               100 * median("nonblocking", key)))
    print()
    for mode, results in got.items():
        kept = [sum(c.values()) for c, _, _ in results]
        dropped = [d for _, d, _ in results]
        torn = [t for _, _, t in results]
        far = [distance(s, mean) for s in runs[mode]]
        print("%s: samples kept %s, dropped %s, torn %s, distance from the blocking mean %s" % (
            mode, kept, dropped, ", ".join(torn), ", ".join("%.2f" % d for d in far)))
    print()


if __name__ == "__main__":
    main()
