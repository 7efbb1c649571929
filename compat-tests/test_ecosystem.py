"""rprofile's .prof files in the tools people feed cProfile's files to.

A small workload is profiled once by rprofile and once by cProfile, each dumped with
dump_stats(); each tool must read ours and find in it what it finds in cProfile's: the same
functions, call counts and call edges (times differ from run to run, so they are not compared).
"""

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import urllib.parse

import cProfile
import pstats
import pytest

import rprofile

WORKLOAD = textwrap.dedent('''
    def eco_fib(n):
        return n if n < 2 else eco_fib(n - 1) + eco_fib(n - 2)


    def eco_leaf_work(i):
        return sorted([i, 3, 1, 2])


    def eco_driver():
        total = eco_fib(12)
        for i in range(25):
            total += len(eco_leaf_work(i))
        return total
''')

FUNCTIONS = ("eco_fib", "eco_leaf_work", "eco_driver")


@pytest.fixture(scope="module")
def prof_files(tmp_path_factory):
    """{'rprofile': path, 'cProfile': path} of the same workload's dumps."""
    d = tmp_path_factory.mktemp("ecosystem")
    src = d / "eco_workload.py"
    src.write_text(WORKLOAD)
    spec = importlib.util.spec_from_file_location("eco_workload", src)
    workload = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workload)
    files = {}
    for module in (rprofile, cProfile):
        p = module.Profile()
        assert p.runcall(workload.eco_driver) == 144 + 25 * 4
        path = d / ("%s.prof" % module.__name__)
        p.dump_stats(str(path))
        files[module.__name__] = str(path)
    return files


def test_the_dumps_are_the_same_profile(prof_files):
    mine = pstats.Stats(prof_files["rprofile"]).stats
    ref = pstats.Stats(prof_files["cProfile"]).stats
    assert {k: v[:2] for k, v in mine.items()} == {k: v[:2] for k, v in ref.items()}
    fib = [v for k, v in mine.items() if k[2] == "eco_fib"][0]
    assert fib[:2] == (1, 465)  # fib(12) makes 465 calls, one of them primitive


# ---------------------------------------------------------------------------------------------
# gprof2dot

def gprof2dot_dot(path):
    proc = subprocess.run(
        [sys.executable, "-m", "gprof2dot", "-f", "pstats", "--node-thres=0", "--edge-thres=0",
         path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def dot_function_names(dot):
    """The function names on the nodes of a gprof2dot graph ('module:line:name' first lines)."""
    names = set()
    for label in re.findall(r'label="([^"]*)"', dot):
        first = label.split("\\n")[0]
        if ":" in first:
            names.add(first.rsplit(":", 1)[-1])
    return names


def test_gprof2dot_draws_our_file(prof_files):
    pytest.importorskip("gprof2dot")
    dot = gprof2dot_dot(prof_files["rprofile"])
    assert dot.lstrip().startswith("digraph")
    assert dot.rstrip().endswith("}")
    for name in FUNCTIONS:
        assert name in dot
    assert "->" in dot  # the call edges are drawn
    assert dot_function_names(dot) == dot_function_names(gprof2dot_dot(prof_files["cProfile"]))


def test_gprof2dot_parser_reads_the_same_calls(prof_files):
    gprof2dot = pytest.importorskip("gprof2dot")

    def parsed(path):
        profile = gprof2dot.PstatsParser(path).parse()
        functions = profile.functions
        called = {f.name: f.called for f in functions.values()}
        edges = {}
        for f in functions.values():
            for call in f.calls.values():
                edges[(f.name, functions[call.callee_id].name)] = call[gprof2dot.CALLS]
        return called, edges

    mine, ref = parsed(prof_files["rprofile"]), parsed(prof_files["cProfile"])
    assert mine == ref
    called, edges = mine
    assert {n.rsplit(":", 1)[-1]: c for n, c in called.items()
            if n.rsplit(":", 1)[-1] in FUNCTIONS} == {"eco_fib": 465, "eco_leaf_work": 25,
                                                      "eco_driver": 1}


# ---------------------------------------------------------------------------------------------
# snakeviz

def test_snakeviz_table_rows_and_json_stats(prof_files):
    stats_mod = pytest.importorskip("snakeviz.stats")

    def read(path):
        s = pstats.Stats(path)
        rows = stats_mod.table_rows(s)
        callees = stats_mod.json_stats(pstats.Stats(path))
        return rows, callees

    rows, callees = read(prof_files["rprofile"])
    ref_rows, ref_callees = read(prof_files["cProfile"])
    # table_rows: [[calls, primitive], tottime, percall, cumtime, percall, short name, name]
    by_name = {r[-1]: r[0] for r in rows}
    assert by_name == {r[-1]: r[0] for r in ref_rows}
    for name in FUNCTIONS:
        assert any(k.endswith("(%s)" % name) for k in by_name), name
    fib = [v for k, v in by_name.items() if k.endswith("(eco_fib)")][0]
    assert fib == ["465/1", 465]  # "calls/primitive", then calls
    # json_stats: the call tree the sunburst is drawn from.
    assert set(callees) == set(ref_callees)
    for key, node in callees.items():
        assert set(node["children"]) == set(ref_callees[key]["children"]), key
        assert set(node["callers"]) == set(ref_callees[key]["callers"]), key
        assert node["stats"][:2] == ref_callees[key]["stats"][:2], key
    driver = [v for k, v in callees.items() if k.endswith("(eco_driver)")][0]
    assert {k.rsplit("(", 1)[-1] for k in driver["children"]} >= {"eco_fib)", "eco_leaf_work)"}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # tornado's own event loop lookup
def test_snakeviz_web_page_renders_our_file(prof_files):
    pytest.importorskip("snakeviz")
    pytest.importorskip("tornado")
    from tornado.testing import AsyncHTTPTestCase

    from snakeviz.main import app

    pages = {}

    class Page(AsyncHTTPTestCase):
        def get_app(self):
            return app

        def runTest(self):
            for name, path in prof_files.items():
                url = "/snakeviz/" + urllib.parse.quote(os.path.abspath(path), safe="")
                response = self.fetch(url)
                pages[name] = (response.code, response.body.decode("utf-8", "replace"))

    result = Page().run()
    assert result is None or result.wasSuccessful(), getattr(result, "errors", None)
    code, body = pages["rprofile"]
    assert code == 200, body[:2000]
    assert pages["cProfile"][0] == 200
    for name in FUNCTIONS:
        assert name in body
