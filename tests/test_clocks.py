"""Native clocks chosen by name: Profile(timer="wall" | "cpu" | "thread_cpu") and
python -m rprofile --clock, read without a Python call per event."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import rprofile


def _row(stats, name):
    rows = [v for k, v in stats.items() if k[2] == name]
    assert len(rows) == 1, (name, list(stats))
    return rows[0]


def sleeper():
    time.sleep(0.2)


def spinner():
    end = time.perf_counter() + 0.2
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def _profile(timer):
    prof = rprofile.Profile(timer)
    prof.enable()
    sleeper()
    spinner()
    prof.disable()
    prof.create_stats()
    return prof.stats


def test_wall_clock_counts_sleep():
    stats = _profile("wall")
    assert _row(stats, "sleeper")[3] == pytest.approx(0.2, abs=0.05)
    assert _row(stats, "spinner")[3] == pytest.approx(0.2, abs=0.05)


@pytest.mark.parametrize("clock", ["cpu", "thread_cpu"])
def test_cpu_clocks_do_not_count_sleep(clock):
    stats = _profile(clock)
    assert _row(stats, "sleeper")[3] < 0.02
    # The spinner burns CPU for 0.2 s of wall time (less if the machine is busy).
    assert 0.02 < _row(stats, "spinner")[3] < 0.3


def test_thread_cpu_ignores_other_threads_work():
    # The burners make no calls: on 3.12+ cProfile's events (and so these) come from every
    # thread into one stack, and their returns would close the main thread's calls.
    stop = [False]

    def burn():
        while not stop[0]:
            pass

    workers = [threading.Thread(target=burn) for _ in range(2)]
    for w in workers:
        w.start()
    try:
        # The sleeping main thread's sleep: the process clock counts the CPU time the burners
        # took meanwhile (measured here: a busy machine may give them little), the thread clock
        # only the main thread's own.
        for clock in ("cpu", "thread_cpu"):
            prof = rprofile.Profile(clock)
            process, thread = time.process_time(), time.thread_time()
            prof.enable()
            sleeper()
            prof.disable()
            others = (time.process_time() - process) - (time.thread_time() - thread)
            prof.create_stats()
            spent = _row(prof.stats, "sleeper")[3]
            if clock == "cpu":
                assert others > 0.002, others
                assert others / 2 <= spent, (spent, others)
            else:
                assert spent < 0.02, spent
    finally:
        stop[0] = True
        for w in workers:
            w.join()


def test_clock_attribute_and_errors():
    assert rprofile.Profile().clock == "wall"
    assert rprofile.Profile("cpu").clock == "cpu"
    assert rprofile.Profile(timer="thread_cpu").clock == "thread_cpu"
    assert rprofile.Profile(time.perf_counter).clock is None
    with pytest.raises(ValueError, match="unknown clock"):
        rprofile.Profile("process")


def test_command_line_clock(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import time
        def sleeper():
            time.sleep(0.2)
        sleeper()
    """))
    out = tmp_path / "out.prof"
    for clock, check in (("cpu", lambda t: t < 0.02), ("wall", lambda t: t > 0.15)):
        subprocess.run([sys.executable, "-m", "rprofile", "--clock", clock, "-o", str(out),
                        str(script)], check=True, timeout=60)
        stats = rprofile.Stats(str(out)).stats
        assert check(_row(stats, "sleeper")[3]), clock
    bad = subprocess.run([sys.executable, "-m", "rprofile", "--clock", "nope", str(script)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr

