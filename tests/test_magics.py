"""`%load_ext rprofile`: the `%rprofile` and `%rsample` magics in IPython's own shell
(`InteractiveShell`, as a notebook's kernel and the terminal run them), compared with `%prun`
on the same statements; and a notebook using them executed by nbclient in an ipykernel kernel,
whose outputs hold the HTML report. IPython, ipykernel, nbclient and nbformat are test
requirements (tools/test-requirements.txt): without them these tests fail.
"""

import json
import marshal
import os
import pstats
import re
import sys
import textwrap

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

import rprofile
from notebooks import execute
from rprofile.outputs import inline as _inline
from rprofile.stats import SampledStats, Stats

# Why this interpreter cannot be sampled, or None: the sampler's own tests' check.
from sampler_support import sampler_unsupported

# Deterministic calls: every profiler counts the same rows with the same counts.
WORK = textwrap.dedent("""\
    import threading, time

    def leaf(n):
        return sum(range(n))

    def work():
        total = 0
        for i in range(20):
            total += leaf(i * 100)
        return sorted([total, 2, 1])

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def burn(seconds):
        end = time.process_time() + seconds
        n = 0
        while time.process_time() < end:
            n += 1
        return n

    def in_thread(f, *args):
        t = threading.Thread(target=f, args=args, name="worker")
        t.start()
        t.join()
    """)


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in ("IPYTHONDIR", "TERM")}
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    # IPython's pager prints (rather than running `less`) on a dumb terminal.
    os.environ["TERM"] = "dumb"
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "rprofile")
    assert shell.run_cell(WORK).success
    yield shell
    InteractiveShell.clear_instance()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def magic(ip, name, line, cell=None):
    """`(returned, stdout, [display data])` of running a magic."""
    with capture_output() as c:
        if cell is None:
            value = ip.run_line_magic(name, line)
        else:
            value = ip.run_cell_magic(name, line, cell)
    return value, c.stdout, [o.data for o in c.outputs]


def shown_text(outputs):
    """The text/plain of the one display a magic made."""
    assert len(outputs) == 1, outputs
    return outputs[0]["text/plain"]


def prun_text(ip, line):
    """What %prun prints for `line` (its table, before the stray space it prints after)."""
    _, out, _ = magic(ip, "prun", line)
    assert out.endswith(" ")
    return out[:-1].rstrip("\n")


def masked(line):
    """A report line with its times made equal (they differ from run to run)."""
    return re.sub(r"\d+\.\d{3}", "T", line)


def rows(text):
    """`{function: ncalls}` of a pstats table."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(\d+(?:/\d+)?)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(.*)$", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


def assert_prun_shape(mine, prun):
    """The same lines (times aside) with the rows in any order (times decide it)."""
    a, b = mine.splitlines(), prun.splitlines()
    assert len(a) == len(b), (mine, prun)
    head = [i for i, line in enumerate(b) if "filename:lineno(function)" in line][0]
    assert [masked(x) for x in a[:head + 1]] == [masked(x) for x in b[:head + 1]]
    assert sorted(masked(x) for x in a[head + 1:]) == sorted(masked(x) for x in b[head + 1:])
    assert rows(mine) == rows(prun)


# -- %rprofile ----------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["work()", "-s cumulative work()", "-s calls -s name fib(12)"])
def test_the_table_has_prun_shape(ip, line):
    _, out, shown = magic(ip, "rprofile", line)
    mine = shown_text(shown)
    assert out == ""
    assert_prun_shape(mine, prun_text(ip, line))
    assert rows(mine)["<string>:1(<module>)"] == "1"
    assert "Ordered by: internal time" in mine or "-s" in line


def test_a_terminal_gets_the_text_through_the_pager_as_prun_does(ip):
    ip.display_formatter.active_types = ["text/plain"]  # as TerminalInteractiveShell has it
    try:
        value, out, shown = magic(ip, "rprofile", "-s cumulative work()")
    finally:
        ip.display_formatter.active_types = ip.display_formatter.format_types
    assert value is None and shown == []
    assert_prun_shape(out.rstrip("\n"), prun_text(ip, "-s cumulative work()"))


def test_a_notebook_gets_the_text_and_the_html_report_in_one_display(ip):
    _, _, shown = magic(ip, "rprofile", "work()")
    html = shown[0]["text/html"]
    assert html.startswith('<iframe class="rprofile-report"') and 'srcdoc="' in html
    # The report's page, whole and escaped into the attribute (its data, its script).
    assert "&lt;" not in html and "id=&quot;rprofile-data&quot;" in html
    assert "work" in html and "leaf" in html
    assert "<script" not in html.split('srcdoc="', 1)[0]
    # Its table opens sorted as the text is: by -s's first key (internal time by default).
    assert "&quot;sort&quot;:&quot;tottime&quot;" in html
    _, _, shown = magic(ip, "rprofile", "-s cumulative -s calls work()")
    assert "&quot;sort&quot;:&quot;cumtime&quot;" in shown[0]["text/html"]


def test_D_and_T_write_the_stats_file_and_the_text_as_prun_does(ip, tmp_path):
    dump, text = tmp_path / "w.prof", tmp_path / "w.txt"
    line = "-q -D %s -T %s fib(10); threading.current_thread()"
    value, out, shown = magic(ip, "rprofile", line % (dump, text))
    assert value is None and shown == []
    assert out == ("\n*** Profile stats marshalled to file %r.\n"
                   "\n*** Profile printout saved to text file %r.\n" % (str(dump), str(text)))
    # %prun's messages, the same but for the space it prints first.
    _, prun_out, _ = magic(ip, "prun", line % (tmp_path / "p.prof", tmp_path / "p.txt"))
    assert prun_out.replace(str(tmp_path / "p."), str(tmp_path / "w.")) == " " + out
    # The stats file: the profile as it ran (directories not stripped), for pstats.
    st = pstats.Stats(str(dump))
    assert [v[:2] for k, v in st.stats.items() if k[2] == "fib"] == [(1, 177)]
    [current] = [k for k in st.stats if k[2] == "current_thread"]
    assert os.path.isabs(current[0])
    assert sorted(st.stats) == sorted(pstats.Stats(str(tmp_path / "p.prof")).stats)
    assert_prun_shape(text.read_text(), (tmp_path / "p.txt").read_text())


def test_the_printed_text_file_is_the_shown_table(ip, tmp_path):
    _, _, shown = magic(ip, "rprofile", "-T %s fib(8)" % (tmp_path / "t.txt"))
    assert (tmp_path / "t.txt").read_text() == shown_text(shown)


def test_sort_keys_and_limits_apply_in_order(ip):
    line = "-s calls -s name -l 0.5 -l 3 -l leaf work()"
    _, _, shown = magic(ip, "rprofile", line)
    mine = shown_text(shown)
    assert "   Ordered by: call count, function name" in mine
    assert "   List reduced from 7 to 4 due to restriction <0.5>" in mine
    assert "   List reduced from 4 to 3 due to restriction <3>" in mine
    assert "   List reduced from 3 to 1 due to restriction <'leaf'>" in mine
    assert [f.rsplit("(", 1)[1] for f in rows(mine)] == ["leaf)"]
    assert_prun_shape(mine, prun_text(ip, line))


def test_r_returns_the_stats(ip):
    stats, _, shown = magic(ip, "rprofile", "-q -r fib(7)")
    assert shown == []
    assert isinstance(stats, Stats) and not isinstance(stats, SampledStats)
    fib = {k: v for k, v in stats.stats.items() if k[2] == "fib"}
    assert [v[:2] for v in fib.values()] == [(1, 41)]
    # Stripped as %prun's stats are, and sorted by its default key.
    assert all("/" not in k[0] for k in stats.stats)
    assert stats.sort_type == "internal time"
    # It shows itself as the report in a notebook.
    assert stats._repr_html_().startswith("<iframe")
    assert "&quot;sampled&quot;:false" in stats._repr_html_()


def test_a_cell_is_appended_to_the_line_and_runs_in_the_user_namespace(ip):
    ip.user_ns.pop("seen", None)
    _, _, shown = magic(ip, "rprofile", "-s calls seen = [fib(5)]",
                        "seen.append(leaf(10))\nseen.append(work())")
    assert ip.user_ns["seen"] == [5, 45, ip.user_ns["work"]()]
    table = rows(shown_text(shown))
    assert table["<string>:1(<module>)"] == "1"
    assert table["{built-in method builtins.exec}"] == "1"
    assert any(f.endswith("(fib)") and n == "15/1" for f, n in table.items())
    assert any(f.endswith("(work)") and n == "1" for f, n in table.items())


def test_the_shell_transforms_the_line_as_for_prun(ip):
    # Through run_cell, as typed: the magic's line, then what the shell made of it.
    result = ip.run_cell("stats = %rprofile -q -r x = !echo hi")
    assert result.success
    assert ip.user_ns["x"] == ["hi"]
    assert isinstance(ip.user_ns["stats"], Stats)


def test_system_exit_is_caught_and_said(ip, tmp_path):
    _, out, shown = magic(ip, "rprofile", "-D %s raise SystemExit(3)" % (tmp_path / "x.prof"))
    assert rows(shown_text(shown))["<string>:1(<module>)"] == "1"
    said = "*** SystemExit exception caught in code being profiled."
    assert out == "%s \n*** Profile stats marshalled to file %r.%s\n" % (
        said, str(tmp_path / "x.prof"), said)
    _, prun_out, _ = magic(ip, "prun", "-q raise SystemExit(3)")
    assert prun_out == said + " "


@pytest.mark.parametrize("magic_name, line", [
    ("rprofile", "-s nosuchkey ran = 1"), ("rprofile", "-D /no/such/dir/x.prof ran = 1"),
    ("rprofile", "-T %s ran = 1" % os.getcwd()), ("rprofile", "--nosuch ran = 1"),
    ("rprofile", "--timeline /no/such/dir/t.json ran = 1"), ("rsample", "--rate 0 ran = 1"),
    ("rsample", "--rate x ran = 1"), ("rsample", "--mode idle ran = 1"),
    ("rsample", "-s nosuchkey ran = 1")])
def test_bad_options_are_usage_errors_before_the_statement_runs(ip, magic_name, line):
    ip.user_ns.pop("ran", None)
    with pytest.raises(UsageError):
        ip.run_line_magic(magic_name, line)
    assert "ran" not in ip.user_ns


def test_only_the_statements_thread_unless_threads(ip):
    # The worker's fib calls are not the statement thread's.
    _, _, shown = magic(ip, "rprofile", "in_thread(fib, 6); leaf(3)")
    table = rows(shown_text(shown))
    assert not any(f.endswith("(fib)") for f in table), table
    assert any(f.endswith("(leaf)") for f in table)
    assert "Threads" not in shown_text(shown)
    _, _, shown = magic(ip, "rprofile", "--threads in_thread(fib, 6); leaf(3)")
    text = shown_text(shown)
    assert [n for f, n in rows(text).items() if f.endswith("(fib)")] == ["25/1"]
    assert "   Threads (tottime summed over the thread's functions):" in text
    assert re.search(r"^   worker\s+ident \d+", text, re.M)
    assert re.search(r"^   MainThread\s+ident \d+", text, re.M)


def test_memory_prints_the_allocating_functions(ip):
    # A loop, not a comprehension: on 3.10/3.11 that would be a function of its own.
    ip.run_cell("def alloc():\n    out = []\n    for _ in range(200):\n"
                "        out.append(bytearray(1000))\n    return out")
    _, _, shown = magic(ip, "rprofile", "--memory kept = alloc()")
    text = shown_text(shown)
    assert "   Memory (bytes; net = allocated - freed while profiling" in text
    line = [x for x in text.splitlines() if "(alloc)" in x and "Memory" not in x
            and re.match(r"^\s+-?\d+\s+\d+\s+\d+\s+\d+\s+\d+\s", x)]
    assert line and int(line[0].split()[0]) >= 200 * 1000


def test_types_print_the_types_made_under_the_table(ip):
    ip.run_cell("class Made:\n    pass\n\ndef make(n):\n    return [Made() for _ in range(n)]")
    if sys.version_info < (3, 13, 3):
        with pytest.raises(UsageError, match="types=True needs Python 3.13"):
            ip.run_line_magic("rprofile", "--types kept = make(7)")
        return
    _, _, shown = magic(ip, "rprofile", "--types kept = make(7)")
    text = shown_text(shown)
    assert "   Objects by type (created while profiling; alive = created - destroyed):" in text
    row = [x.split() for x in text.splitlines() if x.split()[-1:] in (["Made"], ["__main__.Made"])]
    assert len(row) == 1 and row[0][:3] == ["7", "7", "0"], text


def test_types_options_are_the_command_lines(ip, tmp_path):
    # A filter or --no-calls without --types is refused on every version, as the command line
    # refuses it.
    for line in ("--types-gc x = 1", "--no-calls x = 1", "--types-only Made x = 1"):
        with pytest.raises(UsageError, match="needs --types"):
            ip.run_line_magic("rprofile", line)
    if sys.version_info < (3, 13, 3):
        return
    ip.run_cell("class Made:\n    pass\n\nclass Other:\n    pass\n\n"
                "def make(n):\n    return [Made() for _ in range(n)] + [Other(), Other()]")
    # --no-calls: the types alone, no table, and not with what needs calls.
    for extra in ("-D %s" % (tmp_path / "x.prof"), "-r", "--threads", "--memory"):
        with pytest.raises(UsageError, match="--no-calls profiles no call"):
            ip.run_line_magic("rprofile", "--types --no-calls %s kept = make(3)" % extra)
    path = tmp_path / "types.json"
    _, out, shown = magic(ip, "rprofile",
                          "--types --no-calls --types-only Made --types-json %s kept = make(5)"
                          % path)
    text = shown_text(shown)
    assert list(shown[0]) == ["text/plain"]
    assert "   Objects by type (created while profiling; alive = created - destroyed):" in text
    assert "filename:lineno(function)" not in text and "Other" not in text, text
    row = [x.split() for x in text.splitlines() if x.split()[-1:] in (["Made"], ["__main__.Made"])]
    assert len(row) == 1 and row[0][:3] == ["5", "5", "0"], text
    assert out == "\n*** Types saved as JSON to file %r.\n" % str(path)
    saved = json.loads(path.read_text())
    assert [t["name"].split(".")[-1] for t in saved["types"]] == ["Made"]
    assert saved["types"][0]["alive"] == 5
    # With calls, the table first, then the types; built-in types counted when asked.
    _, _, shown = magic(ip, "rprofile", "--types --types-builtins kept = make(4)")
    text = shown_text(shown)
    assert text.index("filename:lineno(function)") < text.index("Objects by type")
    names = {x.split()[-1] for x in text.splitlines() if x.strip()}
    assert "list" in names, text


def test_timeline_writes_the_chrome_trace(ip, tmp_path):
    trace = tmp_path / "t.json"
    _, out, shown = magic(ip, "rprofile", "--timeline %s fib(6)" % trace)
    assert out == "\n*** Timeline saved as a Chrome trace to file %r.\n" % str(trace)
    names = {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert any(n and "fib" in n for n in names)
    # The report's flame graph is drawn from the recorded call paths.
    assert "recorded call paths (timeline)" in shown[0]["text/html"]


# -- %rsample -----------------------------------------------------------------------------------

needs_sampler = pytest.mark.skipif(sampler_unsupported() is not None,
                                   reason=str(sampler_unsupported()))


def burn_samples(stats):
    """`(burn's samples running, samples of every function running)`."""
    burn = sum(cc for (_, _, name), (cc, *_) in stats.stats.items() if name == "burn")
    return burn, sum(cc for cc, *_ in stats.stats.values())


@needs_sampler
def test_rsample_samples_a_function_burning_cpu(ip):
    stats, _, shown = magic(ip, "rsample", "-r --rate 1000 burn(0.3)")
    assert isinstance(stats, SampledStats)
    burn, every = burn_samples(stats)
    assert burn > 0.8 * every, stats.stats
    # Only the statement's frames: none of IPython's above it (they would be on every stack).
    assert not [k for k in stats.stats if "IPython" in k[0] or "interactiveshell" in k[0]]
    text = shown_text(shown)
    assert text.startswith("Sampled ")
    assert " nsamples  sample%  tottime   cumul%  cumtime filename:lineno(function)" in text
    assert "sampled call paths" in shown[0]["text/html"]
    # The returned stats show as a report of samples too, in the order they were sorted in.
    assert "&quot;sampled&quot;:true" in stats._repr_html_()
    assert "&quot;sort&quot;:&quot;tottime&quot;" in stats._repr_html_()
    assert "&quot;sort&quot;:&quot;cumtime&quot;" in stats.sort_stats("cumtime")._repr_html_()


@needs_sampler
def test_rsample_options(ip, tmp_path):
    dump = tmp_path / "s.prof"
    _, out, shown = magic(ip, "rsample", "--mode cpu --rate 500 --lines -s cumulative -l burn "
                          "-D %s burn(0.2)" % dump, "burn(0.1)")
    text = shown_text(shown)
    assert "(cpu mode, 500 Hz)" in text
    assert "   Ordered by: cumulative time" in text
    assert "&quot;sort&quot;:&quot;cumtime&quot;" in shown[0]["text/html"]
    assert "   List reduced from 2 to 1 due to restriction <'burn'>" in text
    # --lines: the hot lines of the statement's thread, burn's loop among them.
    assert re.search(r"^MainThread \(tid \d+\): \d+ samples", text, re.M)
    assert re.search(r"\d+\(burn\)$", text, re.M)
    assert "*** Profile stats marshalled to file %r." % str(dump) in out
    # Both lines of the cell ran under the sampler.
    assert re.search(r"<string>:1\(<module>\)$", text, re.M)
    assert re.search(r"<string>:2\(<module>\)$", text, re.M)
    # The stats file, for pstats.
    st = pstats.Stats(str(dump))
    assert burn_samples(st)[0] > 0


SPREAD = """\
import time
def spread(seconds):
    end = time.perf_counter() + seconds
    a = b = c = d = e = 0
    while time.perf_counter() < end:
        a += 1
        b += 2
        c += 3
        d += 4
        e += 5
spread(0.4)
"""


@needs_sampler
def test_rsample_lines_honour_the_limit(ip):
    _, _, shown = magic(ip, "rsample", "--rate 2000 --lines -l 3", SPREAD)
    text = shown_text(shown)
    heading = re.search(r"^MainThread \(tid \d+\): \d+ samples.*times in seconds$", text, re.M)
    assert heading, text
    after = text[heading.end():].split("\n\n")[0]
    rows = [line for line in after.splitlines() if re.search(r":\d+\(\S+\)$", line)]
    assert len(rows) == 3, after
    assert re.search(r"^\(\d+ more lines?\)$", after, re.M), after


@needs_sampler
def test_rsample_takes_other_threads_with_all_threads(ip):
    stats, _, _ = magic(ip, "rsample", "-q -r in_thread(burn, 0.2)")
    assert burn_samples(stats)[0] == 0
    stats, _, _ = magic(ip, "rsample", "-q -r --all-threads in_thread(burn, 0.2)")
    assert burn_samples(stats)[0] > 0


# -- the inline report's size -------------------------------------------------------------------

def big_stats(tmp_path, n):
    """A stats file of `n` functions, each called by the one before."""
    d = {}
    for i in range(n):
        callers = {("big.py", i, "f%d" % (i - 1)): (1, 1, 0.001, 0.002)} if i else {}
        d[("big.py", i + 1, "f%d" % i)] = (1, 1, 0.001 * (i % 7 + 1), 0.002 * (n - i), callers)
    path = tmp_path / "big.prof"
    path.write_bytes(marshal.dumps(d))
    return Stats(str(path))


def test_a_big_profile_is_shown_by_its_heaviest_functions_with_the_totals_kept(tmp_path):
    n = 20 * _inline.FUNCTIONS
    st = big_stats(tmp_path, n)
    html = st._repr_html_()
    assert "The %d functions with the most time of %d (the rest are one row)." % (
        _inline.FUNCTIONS, n) in html
    core = st._html_core().top(_inline.FUNCTIONS)
    assert len(core) == _inline.FUNCTIONS + 1
    assert sum(v[2] for v in core.to_dict().values()) == pytest.approx(st.total_tt)
    assert sum(v[1] for v in core.to_dict().values()) == st.total_calls
    # The page of all of them is several times bigger than the one shown.
    whole = tmp_path / "whole.html"
    st.to_html(str(whole))
    assert len(html) < whole.stat().st_size / 4
    assert len(html) < _inline.PAGE_BYTES


def test_a_small_profile_is_shown_whole(tmp_path):
    st = big_stats(tmp_path, 50)
    html = st._repr_html_()
    assert "most time" not in html
    whole = tmp_path / "whole.html"
    st.to_html(str(whole))
    srcdoc = html.split('srcdoc="', 1)[1].split('"', 1)[0]
    assert srcdoc.replace("&quot;", '"').replace("&amp;", "&") == whole.read_text()


def test_stats_of_a_shape_the_report_cannot_show_display_as_text():
    st = Stats()
    st.stats = {("a.py", 1.5, "f"): (1, 1, 0.1, 0.1, {})}  # a float line number
    assert st._repr_html_() is None


# -- a notebook ---------------------------------------------------------------------------------

NOTEBOOK = ["%load_ext rprofile", WORK,
            "%rprofile -s cumulative work()",
            "%%rprofile -l 5\nwork()\nfib(10)",
            "st = %rprofile -q -r fib(12)\nst",
            "%rsample --rate 1000 burn(0.2)"]


def test_a_notebook_executed_by_nbclient_holds_the_html_report(tmp_path):
    cells = NOTEBOOK if sampler_unsupported() is None else NOTEBOOK[:-1]
    nb = execute(cells, tmp_path)
    shown = [(i, o) for i, c in enumerate(nb.cells) for o in c.outputs]
    assert not [o for _, o in shown if o.output_type == "error"], shown
    by_cell = {}
    for i, o in shown:
        if "data" in o:
            by_cell.setdefault(i, []).append(o)
    for i in range(2, len(cells)):
        [o] = by_cell[i]
        html, text = o.data["text/html"], o.data["text/plain"]
        assert html.startswith('<iframe class="rprofile-report"'), html[:200]
        assert "rprofile-data" in html
        if i == 4:
            # The Stats object: IPython's rich display of it, its repr as text.
            assert o.output_type == "execute_result" and text.startswith("<rprofile.stats.Stats")
        else:
            assert o.output_type == "display_data"
            assert "filename:lineno(function)" in text
    # Only the statement's thread: none of the kernel's own threads' calls (its output thread
    # would be in the table on 3.12+, where events of every thread come to one profiler).
    assert "zmq" not in by_cell[2][0].data["text/plain"]
    assert "iostream" not in by_cell[2][0].data["text/plain"]
    assert "List reduced from" in by_cell[3][0].data["text/plain"]
