"""The default clock (TSC or CLOCK_MONOTONIC) measures real seconds, whichever is in use."""

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import time, rprofile
def nap():
    time.sleep(0.05)
p = rprofile.Profile()
t0 = time.perf_counter()
p.runcall(nap)
elapsed = time.perf_counter() - t0
p.create_stats()
ct = [v[3] for k, v in p.stats.items() if k[2] == "nap"][0]
print(ct, elapsed)
"""


@pytest.mark.parametrize("clock", ["default", "monotonic"])
def test_default_clock_measures_seconds(clock):
    env = dict(os.environ)
    env.pop("RPROFILE_CLOCK", None)
    if clock == "monotonic":
        env["RPROFILE_CLOCK"] = "monotonic"
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    cumtime, elapsed = map(float, out)
    # The profiled call lies within the span perf_counter measured around runcall.
    # (The TSC rate is an estimate: allow it 0.1%.)
    assert 0.05 * 0.999 <= cumtime <= elapsed * 1.001


STOPPED = r"""
import marshal, os, time, rprofile
def work():
    return sum(i * i for i in range(20000))
p = rprofile.Profile()
p.runcall(work)
p.create_stats()
first = dict(p.stats)
time.sleep(0.2)  # long enough for a re-estimated TSC rate to differ in its last digits
p.create_stats()
p.dump_stats(os.environ["OUT"] + ".1")
time.sleep(0.2)
p.dump_stats(os.environ["OUT"] + ".2")
print(first == p.stats, open(os.environ["OUT"] + ".1", "rb").read() == open(os.environ["OUT"] + ".2", "rb").read())
"""


@pytest.mark.parametrize("clock", ["default", "monotonic"])
def test_a_stopped_profile_reads_the_same_every_time(clock, tmp_path):
    env = dict(os.environ, OUT=str(tmp_path / "p"))
    env.pop("RPROFILE_CLOCK", None)
    if clock == "monotonic":
        env["RPROFILE_CLOCK"] = "monotonic"
    out = subprocess.run([sys.executable, "-c", STOPPED], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "True"]

