"""Objects by type (`Profile(types=True)`, `--types`): created, destroyed and alive per type and
per function, from the interpreter's reference tracer (Python 3.13.3+; before, a clear error)."""

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc

import pytest

import rprofile
from report_support import open_report, save
from rprofile._rprofile._testing import _ref_tracer

# Before 3.13.3 the interpreter frees most objects without telling the tracer
# (python/cpython#130382), so rprofile refuses there.
SUPPORTED = sys.version_info >= (3, 13, 3)
needs_types = pytest.mark.skipif(not SUPPORTED, reason="types=True needs Python 3.13.3+")


class Leaf:
    pass


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


# Two classes of a script (its `def` after them starts at line 7).
CLASSES = "class Item:\n    pass\n\nclass Other:\n    pass\n\n"


def make_leaves(n, keep):
    made = [Leaf() for _ in range(n)]
    keep.extend(made[:3])


def make_nodes(m):
    for _ in range(m):
        Node()


def run(prof, fn, *args):
    prof.enable()
    try:
        fn(*args)
    finally:
        prof.disable()


def where(func):
    return (func.__code__.co_filename, func.__code__.co_firstlineno, func.__name__)


@pytest.mark.skipif(SUPPORTED, reason="types are tracked here")
def test_where_the_interpreter_cannot_tell_it_is_a_clear_error():
    with pytest.raises(ValueError, match=r"types=True needs Python 3\.13(\.3)? or later"):
        rprofile.Profile(types=True)
    script = subprocess.run([sys.executable, "-m", "rprofile", "--types", __file__],
                            capture_output=True, text=True)
    assert script.returncode == 2, script.stderr
    assert "types=True needs Python 3.13" in script.stderr


def test_dump_types_needs_types(tmp_path):
    with pytest.raises(ValueError, match="needs a profiler made with types=True"):
        rprofile.Profile().dump_types(tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def test_the_filters_need_types_and_names_must_be_str():
    with pytest.raises(ValueError, match="need types=True"):
        rprofile.Profile(types_only=["Leaf"])
    with pytest.raises(ValueError, match="need types=True"):
        rprofile.Profile(types_gc=True)
    if SUPPORTED:
        with pytest.raises(TypeError, match="types_only must hold type names"):
            rprofile.Profile(types=True, types_only=[Leaf])


@needs_types
def test_created_destroyed_and_alive_are_exact_per_type_and_function():
    gc.collect()
    gc.disable()
    try:
        kept = []
        prof = rprofile.Profile(types=True)
        run(prof, lambda: (make_leaves(40, kept), make_nodes(7)))
    finally:
        gc.enable()
    types = prof.types_stats()
    leaf = types[__name__ + ".Leaf"]
    assert (leaf.created, leaf.destroyed, leaf.alive, leaf.peak) == (40, 37, 3, 40)
    assert leaf.functions == {where(make_leaves): (40, 3)}
    node = types[__name__ + ".Node"]
    # Cycles are not freed without a collection: all seven still alive.
    assert (node.created, node.destroyed, node.alive) == (7, 0, 7)
    # Made before __init__ runs: charged to the function that called the class.
    assert node.functions == {where(make_nodes): (7, 7)}
    # Builtins are left out by default; the profiler's own objects always.
    assert not [name for name in types if name in ("int", "list", "dict", "tuple")]
    assert not [name for name in types if name.startswith("rprofile.")]
    del kept


def keep_from_a(keep):
    make_leaves(5, keep)


def keep_from_b(keep):
    make_leaves(4, keep)
    make_leaves(6, keep)


def keep_from_both(keep):
    keep_from_a(keep)
    keep_from_b(keep)
    make_leaves(3, [])  # none kept: no stack of survivors


def one_timer_value():
    return 0


@needs_types
@pytest.mark.parametrize("timer", [None, one_timer_value])
def test_the_survivors_are_grouped_by_the_whole_stack_that_made_them(timer):
    # Two callers of make_leaves at the same depth, one after the other; with a timer that
    # never moves their calls are told apart all the same.
    kept = []
    prof = rprofile.Profile(timer, types=True) if timer else rprofile.Profile(types=True)
    run(prof, keep_from_both, kept)
    leaf = prof.types_stats()[__name__ + ".Leaf"]
    assert leaf.alive == len(kept) == 9
    both, a, b, made = (where(f) for f in (keep_from_both, keep_from_a, keep_from_b,
                                           make_leaves))
    assert leaf.stacks == {(both, b, made): 6, (both, a, made): 3}
    assert list(leaf.stacks.values()) == [6, 3]  # most first
    del kept[:]


def keep_bytearrays(keep):
    keep.extend(bytearray(8) for _ in range(4))


@needs_types
def test_stacks_of_builtin_types_are_taken_only_when_named():
    kept = []
    broad = rprofile.Profile(types=True, types_builtins=True)
    run(broad, keep_bytearrays, kept)
    assert broad.types_stats()["bytearray"].alive == 4
    assert broad.types_stats()["bytearray"].stacks == {}
    named = rprofile.Profile(types=True, types_only=["bytearray"])
    run(named, keep_bytearrays, kept)
    # The generator expression is a function of its own: made in it, under keep_bytearrays.
    [(stack, alive)] = named.types_stats()["bytearray"].stacks.items()
    assert alive == 4 and stack[0] == where(keep_bytearrays), stack
    del kept[:]


@needs_types
def test_types_gc_collects_cycles_before_the_final_counts():
    gc.collect()
    gc.disable()
    try:
        prof = rprofile.Profile(types=True, types_gc=True)
        run(prof, make_nodes, 5)
    finally:
        gc.enable()
    node = prof.types_stats()[__name__ + ".Node"]
    assert (node.created, node.destroyed, node.alive) == (5, 5, 0)


@needs_types
def test_types_only_takes_plain_and_qualified_names():
    keep = []
    plain = rprofile.Profile(types=True, types_only=["Leaf"])
    run(plain, lambda: (make_leaves(10, keep), make_nodes(2)))
    assert list(plain.types_stats()) == [__name__ + ".Leaf"]
    qualified = rprofile.Profile(types=True, types_only=[__name__ + ".Node"])
    run(qualified, lambda: (make_leaves(10, keep), make_nodes(2)))
    assert list(qualified.types_stats()) == [__name__ + ".Node"]
    # A builtin named is counted although builtins are left out.
    named = rprofile.Profile(types=True, types_only=["bytearray"])
    run(named, lambda: [bytearray(3) for _ in range(6)])
    assert named.types_stats()["bytearray"].created == 6


@needs_types
def test_types_builtins_counts_builtin_types_too():
    def make_bytearrays():
        return [bytearray(8) for _ in range(25)]

    prof = rprofile.Profile(types=True, types_builtins=True)
    run(prof, make_bytearrays)
    row = prof.types_stats()["bytearray"]
    assert row.created == 25 and row.functions[where(make_bytearrays)] == (25, 0)


@needs_types
@pytest.mark.parametrize("per_thread", [False, True])
def test_threads_creating_one_type_add_up_exactly(per_thread):
    start = threading.Barrier(4)
    keep = [[] for _ in range(4)]

    def work(i):
        start.wait()
        for _ in range(2000):
            keep[i].append(Leaf())
            if len(keep[i]) > 5:
                keep[i].pop(0)

    prof = rprofile.Profile(types=True, threads=per_thread)
    prof.enable()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prof.disable()
    leaf = prof.types_stats()[__name__ + ".Leaf"]
    assert (leaf.created, leaf.destroyed, leaf.alive) == (8000, 8000 - 20, 20)
    del keep


@needs_types
def test_enable_twice_adds_up_and_clear_starts_over():
    keep = []
    prof = rprofile.Profile(types=True)
    run(prof, make_leaves, 5, keep)
    run(prof, make_leaves, 5, keep)
    assert prof.types_stats()[__name__ + ".Leaf"].created == 10
    prof.clear()
    assert prof.types_stats() == {}
    run(prof, make_leaves, 4, keep)
    assert prof.types_stats()[__name__ + ".Leaf"].created == 4


@needs_types
def test_a_second_profiler_and_another_tracer_are_refused_and_left_in_place():
    first = rprofile.Profile(types=True)
    first.enable()
    try:
        second = rprofile.Profile(types=True)
        with pytest.raises(RuntimeError, match="another profiler is tracking types"):
            second.enable()
    finally:
        first.disable()
    # tracemalloc counts through the reference tracer too (3.13+).
    tracemalloc.start()
    try:
        prof = rprofile.Profile(types=True)
        with pytest.raises(RuntimeError, match="another reference tracer is installed"):
            prof.enable()
        assert _ref_tracer() == "other" and tracemalloc.is_tracing()
        data = [bytearray(1000) for _ in range(10)]
        assert tracemalloc.get_traced_memory()[0] > 0
        del data
    finally:
        tracemalloc.stop()


@needs_types
def test_a_tracer_installed_after_ours_stays_when_we_disable():
    prof = rprofile.Profile(types=True)
    prof.enable()
    assert _ref_tracer() == "rprofile"
    tracemalloc.start()
    try:
        with pytest.warns(RuntimeWarning, match="removed rprofile's reference tracer"):
            prof.disable()
        assert _ref_tracer() == "other" and tracemalloc.is_tracing()
        before = tracemalloc.get_traced_memory()[0]
        data = [bytearray(1000) for _ in range(50)]
        assert tracemalloc.get_traced_memory()[0] > before
        del data
    finally:
        tracemalloc.stop()
    assert _ref_tracer() is None
    # And ours can come back once it is gone.
    run(prof, make_leaves, 2, [])
    assert _ref_tracer() is None


@needs_types
def test_a_tracer_removed_by_another_tool_is_told_at_disable_and_put_back_at_enable():
    keep = []
    prof = rprofile.Profile(types=True)
    prof.enable()
    make_leaves(4, keep)
    tracemalloc.start()  # replaces ours...
    tracemalloc.stop()  # ...and leaves none: nothing is counted from here on
    assert _ref_tracer() is None
    make_leaves(5, keep)
    with pytest.warns(RuntimeWarning, match="removed rprofile's reference tracer"):
        prof.disable()
    assert prof.types_stats()[__name__ + ".Leaf"].created == 4
    prof.enable()
    assert _ref_tracer() == "rprofile"
    make_leaves(6, keep)
    prof.disable()
    assert _ref_tracer() is None
    assert prof.types_stats()[__name__ + ".Leaf"].created == 10


@needs_types
def test_peaks_older_objects_and_peak_time_across_enables():
    before = [Leaf() for _ in range(4)]
    keep = []
    prof = rprofile.Profile(types=True)
    started = time.perf_counter()
    prof.enable()
    del before[:]  # made before: destroyed while profiling, not counted as made
    make_leaves(5, keep)
    prof.disable()
    prof.enable()
    make_leaves(5, keep)
    prof.disable()
    elapsed = time.perf_counter() - started
    leaf = prof.types_stats()[__name__ + ".Leaf"]
    assert (leaf.created, leaf.destroyed, leaf.alive, leaf.older_destroyed) == (10, 4, 6, 4)
    # 3 kept from the first run, then 5 more at once.
    assert leaf.peak == 8
    assert 0 <= leaf.peak_time <= elapsed


@needs_types
def test_a_type_renamed_while_tracked_keeps_its_first_name():
    class Renamed:
        pass

    def make(n):
        return [Renamed() for _ in range(n)]

    prof = rprofile.Profile(types=True)
    prof.enable()
    make(3)
    Renamed.__qualname__ = "NowCalledOtherwise"
    make(4)
    prof.disable()
    rows = [(name, t.created) for name, t in prof.types_stats().items() if "Renamed" in name
            or "NowCalledOtherwise" in name]
    assert rows == [(__name__ + "." + "test_a_type_renamed_while_tracked_keeps_its_first_name"
                     ".<locals>.Renamed", 7)]


@needs_types
def test_objects_made_at_shutdown_do_not_crash(tmp_path):
    script = tmp_path / "shutdown.py"
    script.write_text(textwrap.dedent("""\
        import atexit
        import rprofile

        class Crumb:
            pass

        class Late:
            def __del__(self):
                [Crumb() for _ in range(3)]

        prof = rprofile.Profile(types=True, types_builtins=True)
        prof.enable()
        keep = [Late() for _ in range(100)]
        atexit.register(lambda: [Late() for _ in range(10)])
        print("ran")
        """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran\n"


@needs_types
def test_print_types_and_the_command_line(tmp_path, capsys):
    keep = []
    prof = rprofile.Profile(types=True)
    run(prof, make_leaves, 12, keep)
    prof.print_types()
    out = capsys.readouterr().out
    assert "Objects by type" in out
    line = next(line for line in out.splitlines() if line.endswith(".Leaf"))
    assert line.split()[:3] == ["3", "12", "9"]
    assert "made by %s:%d(make_leaves)" % (__file__, make_leaves.__code__.co_firstlineno) in out
    # The stack that made the survivors, outermost first: make_leaves alone here.
    survivors = next(line for line in out.splitlines() if "alive from" in line)
    assert survivors.split()[0] == "3" and survivors.endswith("alive from make_leaves"), out
    with pytest.raises(ValueError, match="sort must be one of"):
        prof.print_types(sort="nonsense")
    script = tmp_path / "objects.py"
    script.write_text(CLASSES + textwrap.dedent("""\
        def build():
            return [Item() for _ in range(30)] + [Other() for _ in range(5)]

        kept = build()
        """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "rprofile", "--types", str(script)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[-1]: line.split()[:3] for line in proc.stdout.splitlines()
            if line.rstrip().endswith(("Item", "Other"))}
    assert rows == {"Item": ["30", "30", "0"], "Other": ["5", "5", "0"]}, proc.stdout
    assert "    alive from {built-in method builtins.exec} > <module> > build" in proc.stdout
    only = subprocess.run([sys.executable, "-m", "rprofile", "--types", "--types-only", "Other",
                           "-s", "name", str(script)], capture_output=True, text=True, env=env)
    assert only.returncode == 0, only.stderr
    assert " Other" in only.stdout and not any(line.endswith(" Item")
                                               for line in only.stdout.splitlines())
    bad = subprocess.run([sys.executable, "-m", "rprofile", "--types-gc", str(script)],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "need --types" in bad.stderr


@needs_types
def test_the_report_has_a_types_tab_and_the_json_holds_the_same(tmp_path, browser):
    script = tmp_path / "objects.py"
    script.write_text(CLASSES + textwrap.dedent("""\
        def build():
            return [Item() for _ in range(30)]

        def churn():
            for _ in range(50):
                Other()

        kept = build()[:4]
        churn()
        """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "rprofile", "--types", "--types-json", "t.json",
                           "--html", "r.html", str(script)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "rprofile: wrote %s" % (tmp_path / "t.json") in proc.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    types = {t["name"].rpartition(".")[2]: t for t in doc["types"]}
    assert set(types) == {"Item", "Other"}
    item, other = types["Item"], types["Other"]
    assert (item["created"], item["destroyed"], item["alive"]) == (30, 26, 4)
    assert (other["created"], other["destroyed"], other["alive"]) == (50, 50, 0)
    assert [(f["function"], f["created"], f["alive"]) for f in item["functions"]] == [
        ("build", 30, 4)]
    assert item["functions"][0]["file"] == str(script)
    # The script runs in exec(), a built-in the profiler sees called.
    assert [(s["alive"], [f["function"] for f in s["stack"]]) for s in item["stacks"]] == [
        (4, ["<built-in method builtins.exec>", "<module>", "build"])]
    assert other["stacks"] == []
    assert [t["name"] for t in doc["types"]][0] == item["name"]  # most alive first

    page = open_report(browser, tmp_path / "r.html")
    tabs = page.eval("[...document.querySelectorAll('nav a')].filter(a => !a.hidden)"
                     ".map(a => a.dataset.view)")
    assert "types" in tabs
    page.eval("location.hash = '#types'")
    page.wait_for("!document.querySelector('#v-types').hidden")
    shown = page.eval("[...document.querySelectorAll('#types-table tbody tr:not(.spacer)')]"
                      ".map(tr => [...tr.cells].map(td => td.textContent))")
    # Sorted by objects alive; each row the JSON's figures.
    assert [row[-1] for row in shown] == [t["name"] for t in doc["types"]]
    for row, t in zip(shown, doc["types"]):
        assert [int(x.replace(",", "")) for x in row[:4]] == [
            t["alive"], t["created"], t["destroyed"], t["peak"]]
    assert page.eval("document.querySelector('#count').textContent") == "2 types"
    # Picking a type lists the functions that made its objects.
    page.eval("[...document.querySelectorAll('#types-table a')]"
              ".find(a => a.textContent.endsWith('Item')).click()")
    page.wait_for("document.querySelector('#types-makers table') !== null")
    makers = page.eval("[...document.querySelectorAll('#types-makers tbody tr')]"
                       ".map(tr => [...tr.cells].map(td => td.textContent))")
    assert makers == [["30", "4", "%s:%d(build)" % (script, 7)]], makers
    stacks = page.eval("[...document.querySelectorAll('#types-stacks .stack')].map(d => "
                       "[d.querySelector('b').textContent, "
                       "[...d.querySelectorAll('li')].map(li => li.textContent)])")
    assert stacks == [["4 alive", ["{built-in method builtins.exec}", "%s:1(<module>)" % script,
                                   "%s:7(build)" % script]]], stacks
    assert page.eval("document.querySelector('#types-table tr.sel').cells[6].textContent"
                     ).endswith("Item")
    save(page, "types")
    # The filter keeps the types whose name it finds.
    page.eval("const f = document.querySelector('#filter'); f.value = 'oth'; "
              "f.dispatchEvent(new Event('input'))")
    page.wait_for("document.querySelector('#count').textContent === '1 of 2 types'")
    # Its function's link opens the function's own page.
    page.eval("document.querySelector('#types-makers a.fn').click()")
    page.wait_for("!document.querySelector('#v-func').hidden")
    assert page.console_errors() == []


def make_and_drop(keep):
    made = [Leaf() for _ in range(5)]
    keep.extend(made[:2])


def threads_make_leaves(keep):
    worker = threading.Thread(target=make_leaves, args=(4, keep), name="maker")
    worker.start()
    worker.join()


@needs_types
def test_with_a_timeline_objects_made_and_freed_are_events(tmp_path):
    pytest.importorskip("pandas")
    gc.collect()
    kept = []
    prof = rprofile.Profile(types=True, types_only=["Leaf"], timeline=True, threads=True)
    run(prof, lambda: (make_and_drop(kept), threads_make_leaves(kept)))
    leaf_name = __name__ + ".Leaf"
    leaf = prof.types_stats()[leaf_name]
    assert (leaf.created, leaf.alive) == (9, 5)
    events = [e for e in prof.timeline.events() if e[1].startswith("object_")]
    new = [e for e in events if e[1] == "object_new"]
    free = [e for e in events if e[1] == "object_free"]
    # One event per object made and per object made while profiling freed, in the function
    # running, on the thread that made it.
    assert len(new) == 9 and len(free) == 4
    assert all(e[5] == leaf_name for e in events)
    assert [e[2][2] for e in new] == ["make_and_drop"] * 5 + ["make_leaves"] * 4
    assert {e[3].name for e in new[5:]} == {"maker"}
    assert {e[3].name for e in new[:5]} == {"MainThread"}
    df = prof.timeline.to_dataframe()
    objects = df[df["event"].isin(["object_new", "object_free"])]
    assert list(objects["type"].unique()) == [leaf_name]
    assert objects["value1"].sum() == leaf.alive
    # The type's count after each event: the last is the objects alive.
    assert objects["value2"].iloc[-1] == leaf.alive
    assert (df[~df["event"].isin(["object_new", "object_free"])]["type"] == "").all()
    # The Chrome trace's counter of the type.
    path = tmp_path / "t.json"
    prof.timeline.to_chrome_trace(path)
    counter = [e["args"]["alive"] for e in json.loads(path.read_text())["traceEvents"]
               if e.get("ph") == "C" and e.get("name") == "objects: " + leaf_name]
    assert len(counter) == 13 and counter[-1] == 5 and max(counter) == 6  # 2 kept, then 4 made
    # Speedscope keeps the calls only: an open and a close per call.
    prof.timeline.to_speedscope(tmp_path / "s.json")
    profiles = json.loads((tmp_path / "s.json").read_text())["profiles"]
    opened = sum(1 for p in profiles for e in p["events"] if e["type"] == "O")
    calls = sum(1 for e in prof.timeline.events() if e[1] in ("call", "c_call"))
    assert opened == calls > 0
    del kept[:]


@needs_types
def test_no_object_events_without_types_and_no_timeline_without_one():
    kept = []
    prof = rprofile.Profile(timeline=True)
    run(prof, make_and_drop, kept)
    assert not [e for e in prof.timeline.events() if e[1].startswith("object_")]
    alone = rprofile.Profile(types=True)
    run(alone, make_and_drop, kept)
    assert alone._timeline_info() is None
    assert alone.types_stats()[__name__ + ".Leaf"].created == 5
    del kept[:]


@needs_types
def test_builtins_made_on_a_thread_started_before_the_profiler_keep_no_stack():
    # Its objects come on a track made by events of calls that began before the profiler (or,
    # before any event of it, on no track at all): either way a builtin's stack is not taken.
    kept = []
    go, made = threading.Event(), threading.Event()

    def worker():
        go.wait()
        kept.extend(bytearray(8) for _ in range(3))
        made.set()

    t = threading.Thread(target=worker)
    t.start()
    prof = rprofile.Profile(types=True, types_builtins=True, threads=True)
    prof.enable()
    try:
        go.set()
        made.wait(10)
    finally:
        prof.disable()
    t.join()
    stat = prof.types_stats()["bytearray"]
    assert stat.alive >= 3 and stat.stacks == {}
    del kept[:]
