"""`python -m rprofile` against `python -m cProfile` of the same interpreter.

Each test runs both command lines in subprocesses (with the interpreter running pytest) and
compares what does not depend on timing: the profiled program's own output, the "Ordered by"
header, the table's ncalls and function columns, the keys and call counts of -o files, exit
statuses. Where rprofile is meant to differ from cProfile (exit status of sys.exit(n), usage
errors), the expected side is the documented requirement, never rprofile's own output.
"""

import cProfile
import marshal
import os
import profile
import pstats
import re
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

import rprofile

SCRIPTS = Path(__file__).parent / "cli_scripts"
SORT_KEYS = sorted(pstats.Stats.sort_arg_dict_default)


def run_cli(prof, *args, cwd=SCRIPTS, env=None):
    """Run `python -m <prof> args...`; returns the CompletedProcess (text stdout/stderr)."""
    # No .pyc writing: both runs then do the same import work (a run that compiles and caches a
    # module calls functions the next run, loading the cache, does not), so their rows match.
    full_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", prof, *map(str, args)], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=120)


def run_both(*args, **kw):
    return run_cli("rprofile", *args, **kw), run_cli("cProfile", *args, **kw)


# --- what may legitimately differ: the profilers' own functions --------------------------------
# cProfile runs the program through cProfile.py and profile.py, rprofile through its __init__.py
# and __main__.py; should a frame of those ever show up in a profile, it is the profiler's, not
# the program's, so it is left out of the comparisons. Rows are matched by (file, line, function)
# of functions actually defined in those files, not by file name alone: the -m fixture package
# has its own __init__.py, whose rows must stay in. Module bodies ("<module>") are not counted as
# the profilers': those modules are imported before profiling starts, so their bodies never show,
# while a profiled package's "__init__.py:1(<module>)" does.

def _functions(path):
    with open(path, "rb") as f:
        todo = [compile(f.read(), path, "exec")]
    while todo:
        code = todo.pop()
        if code.co_name != "<module>":
            yield code.co_firstlineno, code.co_name
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))


_RP_DIR = os.path.dirname(rprofile.__file__)
PROFILER_FILES = [cProfile.__file__, profile.__file__,
                  os.path.join(_RP_DIR, "__init__.py"), os.path.join(_RP_DIR, "__main__.py")]
PROFILER_KEYS = {(path, line, name) for path in PROFILER_FILES for line, name in _functions(path)}
PROFILER_ROWS = {"%s:%d(%s)" % (os.path.basename(p), line, name) for p, line, name in PROFILER_KEYS}


def _unaddress(name):
    # Builtins bound to an object print with its address ("... of type object at 0x7f..."),
    # which differs from one process to the next.
    return re.sub(r" at 0x[0-9a-f]+", " at 0x?", name)


# --- parsing a printed profile ------------------------------------------------------------------
HEADER = re.compile(r"^\s+\d+ function calls (\(\d+ primitive calls\) )?in [\d.]+ seconds$")
ROW = re.compile(r"^\s*(\d+(?:/\d+)?)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s(.+)$")


def parse(stdout):
    """Split a profiled run's stdout into (program lines, "Ordered by" header, rows), where rows
    are the (ncalls, function) columns of the table in printed order, the profiler's own left out.
    Fails if no table was printed."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if HEADER.match(line)), None)
    assert start is not None, "no profile table in output:\n" + stdout
    ordered = [line.strip() for line in lines[start:] if line.strip().startswith("Ordered by:")]
    rows = [(m[1], _unaddress(m[2])) for m in map(ROW.match, lines[start:]) if m]
    rows = [row for row in rows if row[1] not in PROFILER_ROWS]
    assert rows, "profile table has no rows:\n" + stdout
    return lines[:start], ordered, rows


def load_stats(path):
    """An -o file as {(file, line, function): (primitive calls, total calls)}, without the
    profiler's own functions; also checks that pstats reads it."""
    assert pstats.Stats(str(path)).total_calls > 0
    with open(path, "rb") as f:
        raw = marshal.load(f)
    return {(file, line, _unaddress(name)): (cc, nc) for (file, line, name), (cc, nc, *_)
            in raw.items() if (file, line, name) not in PROFILER_KEYS}


def outfile_args(wanted, path):
    return ["-o", path] if wanted else []


def assert_same_profile(r, c):
    """rprofile's and cProfile's printed runs agree in program output, order header and rows."""
    r_prog, r_order, r_rows = parse(r.stdout)
    c_prog, c_order, c_rows = parse(c.stdout)
    assert r_prog == c_prog
    assert r_order == c_order
    # Rows tying on the sort key keep the profiler's internal order, so compare them as a multiset.
    assert Counter(r_rows) == Counter(c_rows)
    return r_prog, r_order, r_rows, c_rows


# --- how the program is run ---------------------------------------------------------------------

@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_script_sees_argv_path_name_file_spec(where, tmp_path):
    if where == "relative":
        script, cwd = os.path.join("cli_scripts", "show_env.py"), SCRIPTS.parent
    else:
        script, cwd = str(SCRIPTS / "show_env.py"), tmp_path
    # Arguments after the script that look like options belong to the script.
    r, c = run_both(script, "a", "-s", "time", "--x", cwd=cwd)
    assert r.returncode == c.returncode == 0, r.stderr
    program = assert_same_profile(r, c)[0]
    assert f"argv: {[script, 'a', '-s', 'time', '--x']}" in program
    assert f"path0: {os.path.dirname(script)}" in program
    assert "name: __main__" in program
    assert f"file: {script}" in program
    # 3.14 runs the script as the real __main__, without a spec (gh-140729).
    if sys.version_info >= (3, 14):
        assert "spec: None" in program
    elif sys.version_info >= (3, 12):
        assert f"spec: {('__main__', script)}" in program
    main_is_script = sys.version_info >= (3, 14)
    assert f"sys.modules['__main__'] is this module: {main_is_script}" in program


@pytest.fixture
def package_dir(tmp_path):
    """A package `clipkg` with a __main__ and a submodule `tool`, all printing how they run."""
    pkg = tmp_path / "clipkg"
    pkg.mkdir()
    report = ("import sys\n"
              "def work(n):\n    return sum(i * i for i in range(n))\n"
              "print(__name__, __spec__.name, __package__, sys.argv[1:], work(5))\n")
    (pkg / "__init__.py").write_text("def helper():\n    return 1\nhelper()\n")
    (pkg / "__main__.py").write_text(report)
    (pkg / "tool.py").write_text(report)
    return tmp_path


@pytest.mark.parametrize("target, via", [("clipkg.tool", "cwd"), ("clipkg", "PYTHONPATH")])
def test_module_runs_as_runpy_does(target, via, package_dir, tmp_path):
    if via == "cwd":  # `python -m` puts the working directory first on sys.path
        kw = {"cwd": package_dir}
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        kw = {"cwd": elsewhere, "env": {"PYTHONPATH": str(package_dir)}}
    r, c = run_both("-m", target, "one", "-o", "two", **kw)
    assert r.returncode == c.returncode == 0, r.stderr
    program, _, rows, _ = assert_same_profile(r, c)
    module = target if target != "clipkg" else "clipkg.__main__"
    assert program == [f"__main__ {module} clipkg ['one', '-o', 'two'] 30"]
    # The package's __init__ ran under the profiler, as part of the run.
    assert ("1", "__init__.py:1(helper)") in rows


# --- options ------------------------------------------------------------------------------------

def test_default_sort():
    r, c = run_both("show_env.py")
    order = assert_same_profile(r, c)[1]
    # cProfile's default changed from standard name to cumulative time in 3.11.
    expected = "standard name" if sys.version_info < (3, 11) else "cumulative time"
    assert order == [f"Ordered by: {expected}"]


def test_the_sort_choices_are_pstats_own():
    # The command line lists them without importing pstats; this version's pstats decides.
    from rprofile.__main__ import SORT_KEYS as listed

    assert list(listed) == SORT_KEYS


def test_a_bad_sort_key_is_refused_as_cprofile_refuses_it():
    r, c = run_both("-s", "nosuchkey", "show_env.py")
    # "PROG: error: option -s: invalid choice: 'nosuchkey' (choose from ...)": the choices too.
    assert r.returncode == c.returncode == 2
    assert r.stderr.splitlines()[-1].partition(" error: ")[2] == \
        c.stderr.splitlines()[-1].partition(" error: ")[2] != ""


@pytest.mark.parametrize("key", SORT_KEYS)
def test_sort_key(key):
    r, c = run_both("-s", key, "show_env.py")
    assert r.returncode == c.returncode == 0, r.stderr
    _, order, r_rows, c_rows = assert_same_profile(r, c)
    assert order  # the header was there to compare
    if key in ("stdname", "nfl"):
        # These orders are total (no ties, no timings), so the printed order itself must match.
        assert r_rows == c_rows


def test_long_options(tmp_path):
    r, c = run_both("--sort=ncalls", "show_env.py")
    assert_same_profile(r, c)
    assert parse(r.stdout)[1] == ["Ordered by: call count"]
    r = run_cli("rprofile", "--outfile", tmp_path / "long.prof", "show_env.py")
    assert r.returncode == 0, r.stderr
    assert load_stats(tmp_path / "long.prof")


def test_outfile_matches_cprofile(tmp_path):
    # A relative -o path is resolved at startup, before the program changes directory.
    away = tmp_path / "away"
    away.mkdir()
    script = SCRIPTS / "chdir.py"
    r = run_cli("rprofile", "-o", "r.prof", script, away, cwd=tmp_path)
    c = run_cli("cProfile", "-o", "c.prof", script, away, cwd=tmp_path)
    assert r.returncode == c.returncode == 0, r.stderr
    assert r.stdout == c.stdout == ""  # with -o nothing is printed
    assert not list(away.iterdir())  # nothing landed where the program moved to
    r_stats, c_stats = load_stats(tmp_path / "r.prof"), load_stats(tmp_path / "c.prof")
    assert r_stats == c_stats
    assert any(name == "fib" for _, _, name in r_stats)


def test_a_program_finds_loaded_what_cprofile_has_loaded(tmp_path):
    # `python -m cProfile` has imported pstats (and with it dataclasses, inspect, ast, typing,
    # ...) when the program starts; rprofile had not, so a program importing them showed their
    # imports in its profile: 1,743 functions against cProfile's 1,663 on docutils (3.10).
    r = run_cli("rprofile", "-o", tmp_path / "r.prof", "stdlib_imports.py")
    c = run_cli("cProfile", "-o", tmp_path / "c.prof", "stdlib_imports.py")
    assert r.returncode == c.returncode == 0, (r.stderr, c.stderr)
    assert r.stdout == c.stdout
    r_stats, c_stats = load_stats(tmp_path / "r.prof"), load_stats(tmp_path / "c.prof")
    assert sorted(set(r_stats) - set(c_stats)) == [], sorted(set(c_stats) - set(r_stats))
    assert r_stats == c_stats


# --- rprofile is better than cProfile here ------------------------------------------------------

@pytest.mark.parametrize("outfile", [False, True])
def test_uncaught_exception(outfile, tmp_path):
    r = run_cli("rprofile", *outfile_args(outfile, tmp_path / "r.prof"), "raises.py")
    c = run_cli("cProfile", *outfile_args(outfile, tmp_path / "c.prof"), "raises.py")
    assert r.returncode != 0 and r.returncode == c.returncode
    assert "Traceback" in r.stderr and 'raises.py", line 10' in r.stderr
    assert r.stderr.splitlines()[-1] == c.stderr.splitlines()[-1] == "RuntimeError: fixture failure"
    # The profile up to the exception is still saved or printed.
    if outfile:
        assert load_stats(tmp_path / "r.prof") == load_stats(tmp_path / "c.prof")
    else:
        assert_same_profile(r, c)


@pytest.mark.parametrize("arg, status", [("3", 3), ("0", 0), ("farewell", 1)])
@pytest.mark.parametrize("outfile", [False, True])
def test_sys_exit_keeps_status(arg, status, outfile, tmp_path):
    r = run_cli("rprofile", *outfile_args(outfile, tmp_path / "r.prof"), "exits.py", arg)
    c = run_cli("cProfile", *outfile_args(outfile, tmp_path / "c.prof"), "exits.py", arg)
    # sys.exit(n) means exit status n (cProfile swallows it and exits 0); a non-integer code
    # is printed to stderr with status 1, as Python itself does.
    assert r.returncode == status, r.stderr
    assert "Traceback" not in r.stderr
    if not arg.isdigit():
        assert r.stderr.strip() == arg
    if outfile:
        assert r.stdout == c.stdout == "before exit\n"
        assert load_stats(tmp_path / "r.prof") == load_stats(tmp_path / "c.prof")
    else:
        assert assert_same_profile(r, c)[0] == ["before exit"]


@pytest.mark.parametrize("args, mentions", [
    pytest.param([], None, id="no-arguments"),
    pytest.param(["-s", "bogus", "show_env.py"], "bogus", id="bad-sort-key"),
    pytest.param(["--no-such-option", "show_env.py"], "--no-such-option", id="bad-option"),
    pytest.param(["no_such_script.py"], "no_such_script.py", id="missing-script"),
    pytest.param(["-m", "nosuchmodule"], "nosuchmodule", id="missing-module"),
    pytest.param(["-m", "json.nosuchsub"], "json.nosuchsub", id="missing-submodule"),
    pytest.param(["-m", "email"], "email", id="package-without-main"),
    pytest.param(["-o", "out.prof"], None, id="options-without-script"),
    pytest.param(["-m"], None, id="m-without-module"),
])
def test_usage_errors(args, mentions, tmp_path):
    args = [SCRIPTS / a if a == "show_env.py" else a for a in args]
    r = run_cli("rprofile", *args, cwd=tmp_path)
    output = r.stdout + r.stderr
    assert "Traceback" not in output
    assert r.returncode == 2, output
    assert "function calls" not in output  # nothing was profiled
    # A short message: usage and/or one error line, naming what was wrong.
    assert 0 < len(output.strip().splitlines()) <= 4, output
    assert "usage" in output.lower()
    if mentions:
        assert mentions in output


def test_import_error_inside_module_is_the_programs(package_dir):
    # Only a module that cannot be found is a usage error: an ImportError raised by the module's
    # own code (here its package's __init__) is the program's failure, reported as cProfile does.
    (package_dir / "clipkg" / "__init__.py").write_text("import no_such_dependency\n")
    r, c = run_both("-m", "clipkg.tool", cwd=package_dir)
    assert r.returncode == c.returncode == 1
    assert "Traceback" in r.stderr and "__init__.py" in r.stderr
    assert r.stderr.splitlines()[-1] == c.stderr.splitlines()[-1]
    assert_same_profile(r, c)


@pytest.mark.parametrize("script", ["bigtable.py", "_workload.py"])
def test_closed_stdout_pipe_is_quiet(script):
    # As with `rprofile script | head -1`: the reader is gone before the table is written. The
    # table of bigtable.py overflows stdout's buffer, so the error comes while printing; the
    # short one of _workload.py is buffered, so it would come at the final flush.
    results = []
    for prof in ("rprofile", "cProfile"):
        proc = subprocess.Popen([sys.executable, "-m", prof, script], cwd=SCRIPTS,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdout.close()
        results.append((proc.stderr.read(), proc.wait(timeout=120)))
    (r_err, r_status), (_, c_status) = results
    assert "Exception ignored" not in r_err and "Traceback" not in r_err, r_err
    assert r_status == c_status != 0


# --- issue 24: what the command line owes a user ------------------------------------------------

def test_program_sees_a_top_level_main_module_as_under_cprofile(package_dir):
    # click names a program from sys.modules["__main__"].__package__: under cProfile the
    # program is "black", not "python -m rprofile.black".
    (package_dir / "clipkg" / "__main__.py").write_text(
        "import sys\nm = sys.modules['__main__']\n"
        "print('main package:', repr(m.__package__))\n")
    r, c = run_both("-m", "clipkg", cwd=package_dir)
    assert r.returncode == c.returncode == 0, r.stderr
    program = assert_same_profile(r, c)[0]
    assert program == ["main package: ''"]
    script = package_dir / "clipkg" / "__main__.py"
    r, c = run_both(script, cwd=package_dir)
    # A script is itself the __main__ module from 3.14 (gh-140729), with no package.
    package = None if sys.version_info >= (3, 14) else ""
    assert assert_same_profile(r, c)[0] == ["main package: %r" % (package,)]


def test_threads_and_memory_summaries_are_printed_with_outfile(tmp_path):
    r = run_cli("rprofile", "--threads", "--memory", "-o", tmp_path / "x.prof", "_workload.py")
    assert r.returncode == 0, r.stderr
    assert "Threads (" in r.stdout and "MainThread" in r.stdout
    assert "Memory (bytes" in r.stdout
    assert "function calls" not in r.stdout  # the stats table went to the file, as in cProfile
    assert load_stats(tmp_path / "x.prof")


@pytest.mark.parametrize("option, where", [
    ("-o", "missing/x.prof"), ("--timeline", "missing/t.json"),
    ("--speedscope", "missing/s.json"), ("-o", "adir"), ("--timeline", "adir"),
    ("--speedscope", "adir"),
])
def test_output_paths_are_checked_before_the_program_runs(option, where, tmp_path):
    (tmp_path / "adir").mkdir()
    target = tmp_path / where
    r = run_cli("rprofile", option, target, SCRIPTS / "exits.py", "0", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "before exit" not in r.stdout  # refused before the program started
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and str(target) in errors[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "missing").exists()


def test_threads_with_the_process_cpu_clock_is_refused():
    r = run_cli("rprofile", "--threads", "--clock", "cpu", "_workload.py")
    assert r.returncode == 2
    assert "thread_cpu" in r.stderr and "Traceback" not in r.stderr
    assert "function calls" not in r.stdout
