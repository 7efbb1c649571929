"""The flight recorder (`--record-last`, `Sampler(record_last=...)`): only the last seconds'
samples are kept and reported; SIGUSR1 to rprofile writes the window as it is then, beside each
output and named with the time; `recent()` and `dump_recent()` give a window while the run goes
on and after."""

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from rprofile import _rprofile
from rprofile.sampling import Sampler
from sampler_support import needs_sampler, run_rprofile, sampled_program, samples_by_function

pytestmark = needs_sampler


def test_the_window_holds_the_last_seconds_and_not_what_came_before(tmp_path):
    out = tmp_path / "out.prof"
    proc = run_rprofile("--sample", "--record-last", "2", "-o", str(out),
                        sampled_program("phases.py"), "2", "2.5", "0.2")
    samples = samples_by_function(str(out))
    assert samples.get("phase_b", (0, 0))[1] > 1000, samples
    assert "phase_a" not in samples, samples
    # The summary is of the window: about 2 s of it.
    assert "over 1.9" in proc.stderr or "over 2.0" in proc.stderr, proc.stderr
    # It said what it keeps, and the memory that takes at its rate (1000 Hz: 2,000 reads).
    mark, tick = _rprofile._RECORDING_BYTES
    assert ("keeping the last 2 s (kill -USR1 " in proc.stderr
            and "at 1000 Hz, %d KB for the reads and %d KB a thread sampled"
            % (round(2000 * tick / 1e3), round(2000 * mark / 1e3)) in proc.stderr), proc.stderr


def test_with_subprocesses_each_process_keeps_its_last_seconds(tmp_path):
    # The parent idles in subprocess.run while its child runs phase A then phase B: the window
    # holds B and the parent's wait, not A.
    parent = tmp_path / "parent.py"
    parent.write_text("import subprocess, sys\n"
                      "subprocess.run([sys.executable, %r, '2', '2.5', '0.2'], check=True)\n"
                      % sampled_program("phases.py"))
    out = tmp_path / "out.prof"
    proc = run_rprofile("--sample", "--subprocesses", "--record-last", "2", "-o", str(out),
                        str(parent))
    samples = samples_by_function(str(out))
    assert samples.get("phase_b", (0, 0))[1] > 1000, samples
    assert "phase_a" not in samples and "_try_wait" in samples, samples
    # Each process's own stats are of its window too.
    assert "Processes (2;" in proc.stderr, proc.stderr
    child = [f for f in os.listdir(str(out) + ".processes") if "phases" in f]
    assert len(child) == 1, os.listdir(str(out) + ".processes")
    assert "phase_a" not in samples_by_function(os.path.join(str(out) + ".processes", child[0]))


def test_sigusr1_writes_the_window_of_that_moment_beside_each_output(tmp_path):
    out, html = tmp_path / "out.prof", tmp_path / "report.html"
    proc = subprocess.Popen([sys.executable, "-m", "rprofile", "--sample", "--record-last", "2",
                             "-o", str(out), "--html", str(html), sampled_program("phases.py"),
                             "3", "2", "0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "a started"
    time.sleep(1.5)
    proc.send_signal(signal.SIGUSR1)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "b started" in stdout
    dumped = sorted(glob.glob(str(tmp_path / "out-*.prof")))
    reports = glob.glob(str(tmp_path / "report-*.html"))
    assert len(dumped) == 1 and len(reports) == 1, os.listdir(tmp_path)
    assert "rprofile: wrote %s" % dumped[0] in stderr
    assert "rprofile: wrote %s" % reports[0] in stderr
    during = samples_by_function(dumped[0])
    assert during.get("phase_a", (0, 0))[1] > 500, during
    assert "phase_b" not in during, during
    # The end's outputs are of the last 2 s: phase B.
    after = samples_by_function(str(out))
    assert "phase_a" not in after and after["phase_b"][1] > 1000, after


def _burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def first_half(seconds):
    _burn(seconds)


def second_half(seconds):
    _burn(seconds)


def names(sampler):
    return {func[2] for func in sampler.stats().stats}


def test_recent_gives_a_window_while_running_and_after(tmp_path):
    with Sampler(rate=1000, record_last=1.0) as s:
        first_half(0.8)
        # 0.1 s of the first half in the window: a loaded machine's late reads, which stand for
        # the ticks before them, add to it (0.27 s once under pytest-xdist, with 0.8 s here).
        second_half(0.9)
        now = s.recent(0.5)
        assert "second_half" in names(now) and "first_half" not in names(now)
        # Its outputs are a Sampler's.
        s.dump_recent(str(tmp_path / "recent.prof"), 0.5)
    assert "first_half" not in samples_by_function(str(tmp_path / "recent.prof"))
    # What it kept is the last second: the second half and a little of the first at most.
    kept = samples_by_function_of(s)
    assert kept["second_half"] > kept.get("first_half", 0) * 3, kept
    later = s.recent(0.3)
    assert names(later) >= {"second_half"} and "first_half" not in names(later)
    assert later.counts[1] < s.counts[1]


def samples_by_function_of(sampler):
    out = {}
    for func, (_, nc, _, _, _) in sampler.stats().stats.items():
        out[func[2]] = out.get(func[2], 0) + nc
    return out


def test_bad_recorder_requests_are_clear_errors():
    with pytest.raises(ValueError, match="record_last must be a number of seconds > 0"):
        Sampler(record_last=0)
    with pytest.raises(ValueError, match="stall does not go with subprocesses"):
        Sampler(stall=100, subprocesses=True)
    with Sampler(rate=200) as s:
        time.sleep(0.05)
        with pytest.raises(ValueError, match="needs a flight recorder"):
            s.recent(1)
        everything = s.recent()
    assert everything.counts[1] > 0
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        Sampler(record_last=1).recent(-1)
    for args, words in [(["--record-last", "0"], "--record-last must be a number of seconds"),
                        (["--stall", "100", "--subprocesses"], "does not go with"),
                        (["--stall", "-5"], "--stall must be a number of milliseconds")]:
        proc = run_rprofile("--sample", *args, sampled_program("phases.py"), "0", "0", "0",
                            check=False)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    proc = run_rprofile("--record-last", "1", sampled_program("phases.py"), "0", "0", "0",
                        check=False)
    assert proc.returncode == 2 and "--record-last needs --sample" in proc.stderr, proc.stderr


def test_the_recorders_sizes_are_the_ones_the_docs_give():
    mark, read = _rprofile._RECORDING_BYTES
    assert (mark, read) == (16, 16)
    doc = " ".join(Sampler.__doc__.split())
    assert "16 bytes a read and 16 a thread read" in doc
    # 10 minutes at 1000 Hz over 2 threads, as the docs and --help say.
    assert round(600 * 1000 * (read + 2 * mark) / 1e6) == 29


def test_memory_stays_within_the_window_over_a_run_twenty_times_longer():
    # (Unbounded, 4 s of reads would take 20 times the window's worth: even with only a fifth
    # of the ticks read on a loaded machine, four times what is allowed.)
    rate, window = 2000, 0.2
    with Sampler(rate=rate, record_last=window) as s:
        _burn(4.0)
    profile = s._samples()
    threads = len(s.threads)
    mark, read = _rprofile._RECORDING_BYTES
    reads = s.counts[1]  # the reads of the window, as kept
    assert reads <= window * rate * 1.1, reads
    worth = window * rate * (read + threads * mark)
    # Buffers grow by doubling: at most twice the window's worth (and a little).
    assert 0 < profile.recording_bytes <= 2.5 * worth, (profile.recording_bytes, worth)
