"""`Profile(types=True, calls=False)` (`--types --no-calls`): objects counted by type with no call
profiled, each charged to the frames the interpreter runs when it is made (read in place, with
the sampler's layout of this version). The oracle is the call profile of the same work
(`types=True, builtins=False`): the same counts per type and per function, the same stacks."""

import gc
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import rprofile

SUPPORTED = sys.version_info >= (3, 13, 3)
needs_types = pytest.mark.skipif(not SUPPORTED, reason="types=True needs Python 3.13.3+")


class Item:
    def __init__(self, parts):
        self.parts = [Part(p) for p in parts]


class Part:
    def __init__(self, text):
        self.text = text


def items(n, keep):
    made = [Item(str(i) * 3) for i in range(n)]
    keep.extend(made[::7])


def parts_from_a_generator(keep):
    keep.extend(Part(c) for c in "generated")


def render_docutils(keep):
    from docutils.core import publish_doctree

    text = "Title\n=====\n\nSome *emphasis* and a list:\n\n- one\n- two **strong**\n\n" * 4
    for _ in range(3):
        keep.append(publish_doctree(text, settings_overrides={"report_level": 5}))


def render_jinja(keep):
    import jinja2

    env = jinja2.Environment()
    page = env.from_string("{% macro li(x) %}<li>{{ x }}</li>{% endmacro %}"
                           "<ul>{% for x in xs %}{{ li(x) }}{% endfor %}</ul>")
    for n in range(5):
        keep.append(page.render(xs=range(n * 10)))


def work(keep):
    items(40, keep)
    parts_from_a_generator(keep)
    render_docutils(keep)
    render_jinja(keep)


def profiled(keep, **options):
    # Cycles are collected at disable() alone (types_gc), not whenever the collector runs.
    prof = rprofile.Profile(types=True, types_gc=True, **options)
    gc.collect()
    gc.disable()
    try:
        prof.enable()
        try:
            work(keep)
        finally:
            prof.disable()
    finally:
        gc.enable()
    return prof.types_stats()


def is_builtin(func):
    return func[0] == "~"


def without_builtins(stack):
    return tuple(f for f in stack if not is_builtin(f))


def merged(stacks, key):
    out = {}
    for stack, alive in stacks.items():
        out[key(stack)] = out.get(key(stack), 0) + alive
    return out


@needs_types
def test_the_same_counts_functions_and_stacks_as_the_call_profile():
    keep_calls, keep_frames = [], []
    work([])  # imports and caches filled first: both runs do the same work
    by_calls = profiled(keep_calls, builtins=False)
    by_frames = profiled(keep_frames, calls=False)
    names = set(by_calls)
    # The program's own classes and docutils' and Jinja's: a real program's many types.
    assert {"test_types_no_calls.Item", "test_types_no_calls.Part"} <= names
    assert any(n.startswith("docutils.") for n in names)
    assert any(n.startswith("jinja2.") for n in names)
    assert set(by_frames) == names
    for name in names:
        a, b = by_calls[name], by_frames[name]
        assert (a.created, a.destroyed, a.alive) == (b.created, b.destroyed, b.alive), name
        # A built-in is no frame: what the call profile charged to one (cProfile records some
        # even with builtins=False: tuple.__new__ under a namedtuple's) is charged to a Python
        # function by the frames.
        python = {f: n for f, n in a.functions.items() if not is_builtin(f)}
        moved = [n for f, n in a.functions.items() if is_builtin(f)]
        if not moved:
            assert b.functions == python, name
        else:
            assert all(b.functions.get(f, (0, 0)) >= n for f, n in python.items()), name
            extra = [tuple(x - y for x, y in zip(n, python.get(f, (0, 0))))
                     for f, n in b.functions.items()]
            assert tuple(map(sum, zip(*extra))) == tuple(map(sum, zip(*moved))), name
        # The frames under the one that enabled the profiler (this test's, pytest's) are left
        # out, as the call profile starts above it.
        assert merged(a.stacks, without_builtins) == b.stacks, name
    # The survivors of Part: those of Item's constructor, and those of the generator.
    part = by_frames["test_types_no_calls.Part"]
    assert part.alive == len([p for i in keep_frames if isinstance(i, Item)
                              for p in i.parts]) + len("generated")
    assert {f[2] for f in part.functions} == {"__init__", "<genexpr>"}


def with_block(calls, keep):
    prof = rprofile.Profile(types=True, types_only=["Item", "Part", "generator"],
                            **({} if calls else {"builtins": False, "calls": False}))
    with prof:
        keep.append(Item("ab"))  # made in the with statement's own frame
        items(3, keep)
        keep.append(parts_from_a_generator)
        keep.extend(x for x in "yz")  # a generator made here, run by extend
    return prof.types_stats()


@needs_types
def test_a_with_block_and_generators_being_made_are_charged_as_the_call_profile_does():
    # `with` enables from Profile.__enter__, whose frame returns at once: the walks stop at the
    # with statement's frame instead. A generator being made (before its first traceable
    # instruction) is its caller's, as for the call profile, which has not seen it start.
    by_calls = with_block(True, [])
    by_frames = with_block(False, [])
    assert set(by_calls) == set(by_frames) == {"test_types_no_calls.Item",
                                               "test_types_no_calls.Part", "generator"}
    for name in by_calls:
        a, b = by_calls[name], by_frames[name]
        assert (a.created, a.destroyed) == (b.created, b.destroyed), name
        assert a.functions == b.functions, name
    made_here = ("~", 0, "<no profiled call>")
    assert by_frames["test_types_no_calls.Item"].functions[made_here] == (1, 1)
    assert by_frames["generator"].functions == {made_here: (1, 0)}
    assert by_calls["test_types_no_calls.Item"].stacks == by_frames["test_types_no_calls.Item"].stacks


@needs_types
def test_objects_of_another_thread_are_charged_to_its_functions():
    keep = []
    prof = rprofile.Profile(types=True, calls=False)
    with prof:
        t = threading.Thread(target=items, args=(4, keep))
        t.start()
        t.join()
    stats = prof.types_stats()["test_types_no_calls.Item"]
    assert {f[2]: n for f, n in stats.functions.items()} == {"items": (4, 1)}
    # Walked to the thread's first frame: threading's, then this file's.
    (stack,) = stats.stacks
    assert [f[2] for f in stack][-2:] == ["run", "items"]


@needs_types
def test_no_profile_hook_is_installed_so_cprofile_runs_beside_it():
    import cProfile

    prof = rprofile.Profile(types=True, calls=False)
    prof.enable()
    try:
        assert sys.monitoring.get_tool(sys.monitoring.PROFILER_ID) is None
        other = cProfile.Profile()
        other.enable()
        items(5, [])
        other.disable()
    finally:
        prof.disable()
    assert prof.types_stats()["test_types_no_calls.Item"].created == 5
    other.create_stats()
    assert "items" in {func[2] for func in other.stats}


@needs_types
def test_there_are_no_stats_of_calls_to_print():
    prof = rprofile.Profile(types=True, calls=False)
    with prof:
        items(2, [])
    with pytest.raises(ValueError, match="counts objects alone"):
        prof.print_stats()
    assert prof.types_stats()["test_types_no_calls.Item"].created == 2


@needs_types
def test_clear_forgets_the_functions_and_enable_again_counts_anew():
    prof = rprofile.Profile(types=True, calls=False)
    prof.enable()
    items(3, [])
    prof.disable()
    prof.clear()
    assert prof.types_stats() == {}
    prof.enable()
    parts_from_a_generator([])
    prof.disable()
    stats = prof.types_stats()
    assert set(stats) == {"test_types_no_calls.Part"}
    assert {f[2] for f in stats["test_types_no_calls.Part"].functions} == {"<genexpr>"}


def test_calls_false_needs_types_and_goes_with_no_call_option():
    with pytest.raises(ValueError, match="calls=False needs types=True"):
        rprofile.Profile(calls=False)
    if not SUPPORTED:
        return
    for option in ("timeline", "memory", "async_aware"):
        with pytest.raises(ValueError, match="%s=True needs calls" % option):
            rprofile.Profile(types=True, calls=False, **{option: True})


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rprofile", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.parametrize("args, message", [
    (["--no-calls"], "need --types"),
    (["--types", "--no-calls", "-o", "x.prof"], "does not go with -o"),
    (["--types", "--no-calls", "--html", "x.html"], "does not go with --html"),
    (["--types", "--no-calls", "--threads"], "does not go with --threads"),
    (["--sample", "--no-calls"], "--no-calls traces"),
])
def test_command_line_misuse_is_a_usage_error(tmp_path, args, message):
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    proc = _cli(*args, str(script), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


@needs_types
def test_the_command_line_prints_the_types_alone(tmp_path):
    script = tmp_path / "objs.py"
    script.write_text(textwrap.dedent("""\
        class Kept:
            pass

        def make():
            return [Kept() for _ in range(12)]

        kept = make()
        """))
    out = tmp_path / "types.json"
    proc = _cli("--types", "--no-calls", "--types-json", str(out), str(script))
    assert proc.returncode == 0, proc.stderr
    assert "function calls" not in proc.stdout  # no call profile
    assert "Objects by type" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.endswith(" Kept"))
    assert row.split()[:3] == ["12", "12", "0"]
    assert "alive from <module> > make" in proc.stdout
    assert os.path.getsize(out) > 0
