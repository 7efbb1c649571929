"""The sampling profiler end to end: `python -m rprofile --sample` runs or attaches to a program
and must find what the program measured of itself: shares of CPU time, sleeping vs burning,
waiting on a lock, threads by name, hot lines, deep stacks; and must leave an attached program
running unchanged. Bad input is a one-line error with exit status 2."""

import json
import os
import pstats
import re
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from rprofile.sampling import Sampler
from sampler_support import (attach_and_go, collapsed, native_holder, needs_sampler,
                             run_rprofile,
                             sampled_program, samples_by_function)

pytestmark = needs_sampler


def _shares(spent_or_samples, names):
    total = sum(spent_or_samples[n] for n in names)
    return {n: spent_or_samples[n] / total for n in names}


def _check_shares(samples, spent):
    names = ("big", "medium", "small")
    got = _shares({n: samples[n][1] for n in names}, names)
    truth = _shares(spent, names)
    for n in names:
        assert abs(got[n] - truth[n]) < 0.05, (got, truth)


def test_run_finds_the_shares_the_program_measured(tmp_path):
    out = tmp_path / "out.prof"
    proc = run_rprofile("--sample", "--rate", "1000", "-o", str(out), sampled_program("shares.py"))
    spent = json.loads(proc.stdout.strip().splitlines()[-1])
    _check_shares(samples_by_function(str(out)), spent)


def test_attach_finds_the_shares_and_leaves_the_program_running(tmp_path):
    child = subprocess.Popen([sys.executable, sampled_program("shares.py"), "1", "attach"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        out = tmp_path / "out.prof"
        spent, _ = attach_and_go(child, "-o", str(out))
        _check_shares(samples_by_function(str(out)), spent)
    finally:
        child.kill()
        child.wait()


def test_wall_mode_sees_a_sleep_and_cpu_mode_does_not(tmp_path):
    got = {}
    for mode in ("wall", "cpu"):
        out = tmp_path / (mode + ".prof")
        run_rprofile("--sample", "--mode", mode, "-o", str(out), sampled_program("sleep_and_burn.py"))
        got[mode] = samples_by_function(str(out))
    wall, cpu = got["wall"], got["cpu"]
    assert wall["sleeper"][1] > 0.3 * wall["burner"][1], wall
    assert cpu.get("sleeper", (0, 0))[1] < 0.05 * cpu["burner"][1], cpu


def test_gil_mode_does_not_see_a_thread_waiting_on_a_lock(tmp_path):
    got = {}
    for mode in ("wall", "gil"):
        out = tmp_path / (mode + ".collapsed")
        run_rprofile("--sample", "--mode", mode, "--collapsed", str(out), "-o",
                  str(tmp_path / "x.prof"), sampled_program("gil_wait.py"))
        got[mode] = collapsed(str(out))
    def waiter_samples(rows):
        return sum(c for _, frames, c in rows if "waiter" in frames)
    def burner_samples(rows):
        return sum(c for _, frames, c in rows if "burner" in frames)
    assert waiter_samples(got["wall"]) > 0.5 * burner_samples(got["wall"])
    assert waiter_samples(got["gil"]) <= 0.02 * burner_samples(got["gil"]), got["gil"]
    assert burner_samples(got["gil"]) > 0


def test_four_threads_each_under_its_own_name(tmp_path):
    out = tmp_path / "t.collapsed"
    run_rprofile("--sample", "--collapsed", str(out), "-o", str(tmp_path / "x.prof"),
              sampled_program("four_threads.py"))
    rows = collapsed(str(out))
    for f in ("alpha", "beta", "gamma", "delta"):
        threads = {t for t, frames, _ in rows if f in frames}
        assert threads == {"worker-" + f}, (f, threads)


def test_a_thread_that_starts_under_a_read_is_counted_as_itself(tmp_path):
    # 3.10 makes a new thread's state with its creator's ident, 3.11 with its creator's OS id.
    # A read of it before the thread started found no frame, failed its check once the thread
    # ran, and read it again: the frames were the new thread's, the ids still the creator's,
    # and `work` showed under MainThread (3.10: once in ~500 of its samples; 3.11, where the
    # new thread can have an ended one's ident so that only the OS id told: once in ~2,700).
    out = tmp_path / "churn.collapsed"
    run_rprofile("--sample", "--rate", "2000", "--collapsed", str(out), "-o",
                 str(tmp_path / "x.prof"), sampled_program("thread_churn.py"), "4")
    rows = collapsed(str(out))
    assert sum(n for _, frames, n in rows if "work" in frames) > 100, rows[:5]
    assert not [r for r in rows if r[0] == "MainThread" and "work" in r[1]], rows


def _line_of(path, marker):
    with open(path) as f:
        return next(n for n, line in enumerate(f, 1) if marker in line)


def test_lines_rank_the_hot_line_first(tmp_path):
    path = sampled_program("hot_line.py")
    proc = run_rprofile("--sample", "--lines", path)
    hot, cold = _line_of(path, "# hot"), _line_of(path, "# cold")
    # The lines follow the function table.
    lines = proc.stdout[proc.stdout.index("times in seconds"):]
    ranked = [int(n) for n in re.findall(r"hot_line\.py:(\d+)\(work\)", lines)]
    assert ranked and ranked[0] == hot, proc.stdout
    if cold in ranked:
        assert ranked.index(cold) > ranked.index(hot)
    assert "MainThread" in proc.stdout


def test_a_stack_1000_frames_deep_is_whole(tmp_path):
    out = tmp_path / "deep.collapsed"
    run_rprofile("--sample", "--collapsed", str(out), "-o", str(tmp_path / "x.prof"),
              sampled_program("deep.py"))
    rows = collapsed(str(out))
    depths = [frames.count("down") for _, frames, _ in rows]
    assert max(depths) == 1001
    deepest = max(rows, key=lambda r: r[1].count("down"))
    assert deepest[1][0] == "<module>" and deepest[1][-1] == "down"


def test_attach_and_detach_leave_the_program_unchanged(tmp_path):
    def run(attach):
        log = tmp_path / ("attached.txt" if attach else "alone.txt")
        child = subprocess.Popen([sys.executable, sampled_program("long_running.py"), str(log),
                                  "60000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            if attach:
                run_rprofile("--sample", "--pid", str(child.pid), "--duration", "0.5", "-o",
                          str(tmp_path / "a.prof"))
                assert child.poll() is None  # still running after the sampler left
            done = child.stdout.readline().split()
            assert done[0] == "done"
            child.stdin.write("\n")
            child.stdin.close()
            assert child.wait(timeout=30) == 0
        finally:
            child.kill()
            child.wait()
        return log.read_text()
    assert run(True) == run(False)
    assert samples_by_function(str(tmp_path / "a.prof"))["step"][1] > 0


def test_the_program_exit_status_is_kept(tmp_path):
    script = tmp_path / "exit3.py"
    script.write_text("import sys\nsys.exit(3)\n")
    proc = run_rprofile("--sample", "-o", str(tmp_path / "x.prof"), str(script), check=False)
    assert proc.returncode == 3, proc.stderr


def test_outputs_are_read_by_their_tools(tmp_path):
    files = {ext: tmp_path / ("p." + ext) for ext in ("prof", "collapsed", "json", "svg")}
    run_rprofile("--sample", "-o", str(files["prof"]), "--collapsed", str(files["collapsed"]),
              "--speedscope", str(files["json"]), "--flamegraph", str(files["svg"]),
              sampled_program("sleep_and_burn.py"))
    stats = pstats.Stats(str(files["prof"]))
    assert any(name == "burner" for _, _, name in stats.stats)
    from snakeviz.stats import table_rows  # snakeviz's own loader of a Stats
    assert any("burner" in str(row) for row in table_rows(stats))
    with open(files["json"], encoding="utf-8") as f:
        doc = json.load(f)
    names = {frame["name"] for frame in doc["shared"]["frames"]}
    assert {"burner", "sleeper"} <= names
    assert all(p["type"] == "sampled" for p in doc["profiles"])
    svg = ET.parse(str(files["svg"]))
    text = "".join(svg.getroot().itertext())
    assert "burner" in text
    assert any("burner" in frames for _, frames, _ in collapsed(str(files["collapsed"])))


def test_the_in_process_sampler_sees_its_own_work():
    def spin():
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end:
            pass
    # The main thread alone: a test runner's own threads (pytest-xdist's receiver) wait in
    # Python code, and wall mode counts them too.
    with Sampler(rate=1000, all_threads=False) as s:
        spin()
    stats = s.stats()
    direct = {name: cc for (_, _, name), (cc, nc, tt, ct, callers) in stats.stats.items()}
    assert direct.get("spin", 0) > 0.5 * sum(direct.values()), direct
    asked, taken, dropped, truncated = s.counts
    assert taken > 0 and taken <= asked


def test_threads_are_known_by_their_os_ids_in_cpu_mode_and_main_alone_when_asked():
    # 3.10's thread states keep no OS id: it is read from the thread's glibc descriptor. On every
    # version the ids are threading's, the cpu mode reads each thread's state by it, and the
    # main thread is the process's.
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="identity-worker")
    worker.start()

    def spin():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass
    try:
        rows = {}
        for all_threads in (True, False):
            with Sampler(rate=500, mode="cpu", all_threads=all_threads) as s:
                spin()
            rows[all_threads] = {(native, ident): (name, samples, idle)
                                 for native, ident, name, samples, _, idle, _ in s.threads}
    finally:
        stop.set()
        worker.join()
    main = (threading.get_native_id(), threading.get_ident())
    name, samples, idle = rows[True][main]
    assert name == "MainThread" and samples > 0, rows
    # Blocked on its event: seen at every sample, never on a CPU.
    name, samples, idle = rows[True][(worker.native_id, worker.ident)]
    assert name == "identity-worker" and samples == 0 and idle > 0, rows
    assert list(rows[False]) == [main], rows


def test_a_run_attached_after_the_threads_started_lists_them_oldest_first():
    # The interpreter lists its newest thread first: read in that order, a late attach listed
    # the workers before MainThread, and top's `t` went to a worker first.
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, threading
        stop = threading.Event()
        for name in ("first", "second", "third"):
            threading.Thread(target=stop.wait, name=name).start()
        print("ready", flush=True)
        sys.stdin.readline()
        stop.set()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        with Sampler(rate=200, pid=child.pid) as s:
            time.sleep(0.3)
    finally:
        child.communicate("go\n", timeout=60)
    assert [name for _, _, name, *_ in s.threads] == ["MainThread", "first", "second", "third"]


@pytest.mark.parametrize("mode", ["wall", "cpu", "gil"])
def test_each_read_of_a_thread_in_no_python_code_is_an_idle_sample(tmp_path, mode):
    # A C thread with a thread state and no frame, asleep without the GIL: read at every sample
    # as main is, and counted nowhere before (the threads table showed zeros).
    holder = native_holder(tmp_path)
    ident = holder.start_holding()
    assert ident
    try:
        with Sampler(rate=500, mode=mode) as s:
            end = time.perf_counter() + 0.6
            while time.perf_counter() < end:
                pass
    finally:
        holder.stop_holding()
    rows = {i: (samples, idle, dropped) for _, i, _, samples, _, idle, dropped in s.threads}
    assert ident in rows, rows
    samples, idle, dropped = rows[ident]
    # Main's reads: its samples, idle ones (gil mode: the sampler reads while main waits for the
    # GIL now and then) and dropped ones.
    main = sum(rows[threading.get_ident()])
    assert samples == 0 and idle > 0, rows
    assert idle + dropped >= 0.9 * main, rows


@pytest.mark.parametrize("args, message", [
    (["--pid", "999999999"], "no such process"),
    (["--pid", "0"], "--pid must be"),
    (["--rate", "0", "x.py"], "--rate must be"),
    (["--mode", "exception", "x.py"], "invalid choice"),
    (["--threads", "x.py"], "does not go with --sample"),
    (["--types-json", "t.json", "x.py"], "--types-json traces; it does not go with --sample"),
    (["missing_script.py"], "can't open file"),
])
def test_bad_input_is_a_usage_error(args, message):
    proc = run_rprofile("--sample", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    if message == "no such process":  # not a usage error: one line
        assert len(lines) == 1, proc.stderr
    else:  # a usage error, as the tracer's: the usage line, then the error
        assert lines[0].startswith("Usage: rprofile ") and message in lines[-1], proc.stderr


def test_a_process_that_is_not_python_is_a_usage_error():
    child = subprocess.Popen(["sleep", "30"])
    try:
        proc = run_rprofile("--sample", "--pid", str(child.pid), check=False)
        assert proc.returncode == 2
        assert "is not Python" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    finally:
        child.kill()
        child.wait()


def test_a_process_we_may_not_read_says_which_permission_is_missing():
    # The sampler runs as another user (nobody) that may still read the interpreter's files
    # (CAP_DAC_READ_SEARCH) but not trace a root process (no CAP_SYS_PTRACE).
    import shutil
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the sampler as another user")
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
             sys.executable, "-m", "rprofile", "--sample", "--pid", str(target.pid)],
            capture_output=True, text=True, timeout=60)
        if "error while loading" in proc.stderr or "Permission denied: '" in proc.stderr:
            pytest.skip("the interpreter cannot run as another user here: " + proc.stderr)
        assert proc.returncode == 2, proc.stderr
        assert "not permitted to read process %d" % target.pid in proc.stderr
        assert "CAP_SYS_PTRACE" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert target.poll() is None
    finally:
        target.kill()
        target.wait()


def test_a_program_that_forks_and_execs_ends_the_run_cleanly(tmp_path):
    out = tmp_path / "fe.prof"
    proc = run_rprofile("--sample", "-o", str(out), sampled_program("fork_exec.py"))
    assert "Traceback" not in proc.stderr
    assert samples_by_function(str(out))["before_exec"][1] > 0


def test_a_sampler_dropped_while_running_stops_its_thread():
    import gc

    def sampler_threads():
        # The process's OS threads: the sampler's native thread is one of them.
        return len(os.listdir("/proc/self/task"))

    before = sampler_threads()
    s = Sampler(rate=100).start()
    assert sampler_threads() == before + 1
    del s
    gc.collect()
    deadline = time.monotonic() + 5
    while sampler_threads() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sampler_threads() == before


def test_a_stop_ends_a_slow_run_at_once_with_a_last_read():
    # One sample a minute: stop() does not wait for the next tick (the run would outlast the
    # subprocess' timeout), and reads once as it ends: the program, in stop().
    code = textwrap.dedent("""\
        import time
        from rprofile.sampling import Sampler

        def spin():
            end = time.perf_counter() + 0.2
            while time.perf_counter() < end:
                pass

        s = Sampler(rate=1 / 60).start()
        spin()
        s.stop()
        asked, taken, dropped, truncated = s.counts
        print(asked, taken, [k[2] for k in s.stats().stats])
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    asked, taken, names = proc.stdout.split(" ", 2)
    assert (asked, taken) == ("1", "1")
    assert "<module>" in names and "spin" not in names
