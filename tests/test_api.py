"""The API surface of rprofile, checked against cProfile on the same interpreter.

Expected values come from cProfile (or _lsprof's documented signatures) on the running
version, never from rprofile itself. A counting timer makes the numbers deterministic, so
tables printed by the two profilers can be compared line for line.
"""

import ast
import contextlib
import cProfile
import inspect
import io
import marshal
import pstats
import re
import sys

import _lsprof
import pytest

import rprofile
from support import Tick

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)


def leaf(i):
    return i * 2


def work(n):
    return sum([leaf(i) for i in range(n)]) + len(str(n))


def profiling_active():
    if PY312:
        return sys.monitoring.get_tool(sys.monitoring.PROFILER_ID) is not None
    return sys.getprofile() is not None


@pytest.fixture(autouse=True)
def no_profiler_left_behind():
    assert not profiling_active()
    yield
    assert not profiling_active(), "a test left a profiler enabled"


def doc_signature(doc):
    """The parameters [(name, default)] of a 'name(a=1, b=2)' first docstring line."""
    first = doc.strip().splitlines()[0]
    tree = ast.parse("def " + first + ": pass")
    args = tree.body[0].args
    defaults = [ast.literal_eval(d) for d in args.defaults]
    names = [a.arg for a in args.args]
    return list(zip(names, [inspect.Parameter.empty] * (len(names) - len(defaults)) + defaults))


def ref_signature(callable_):
    """The parameters [(name, default)] of an `_lsprof` callable: its signature where it has
    one (Argument Clinic, 3.14+), else its docstring's first line."""
    try:
        ps = list(inspect.signature(callable_).parameters.values())
    except ValueError:
        return doc_signature(callable_.__doc__)
    return [(p.name, p.default) for p in ps if p.name != "self"]


def params(callable_, skip_self=False):
    ps = list(inspect.signature(callable_).parameters.values())
    return ps[1:] if skip_self else ps


# ---------------------------------------------------------------------------------------------
# Signatures.

def test_constructor_parameter_names_and_kinds_match_cprofile():
    ref = ref_signature(_lsprof.Profiler)
    mine = params(rprofile.Profile)
    assert [p.name for p in mine[:len(ref)]] == [name for name, _ in ref]
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in mine[:len(ref)])
    # Extensions, keyword-only: bias (profile.Profile's, positional there), threads and
    # async_aware (issue 6), the timeline's three, memory and the RSS sampler's three (issue 7),
    # subprocesses (issue 28), the object types' four (issue 38).
    kw = inspect.Parameter.KEYWORD_ONLY
    assert [(p.name, p.kind) for p in mine[len(ref):]] == [
        ("bias", kw), ("threads", kw), ("async_aware", kw), ("timeline", kw),
        ("buffer_size", kw), ("when_full", kw), ("memory", kw), ("rss", kw),
        ("rss_interval", kw), ("rss_trigger", kw), ("subprocesses", kw), ("types", kw),
        ("types_builtins", kw), ("types_only", kw), ("types_gc", kw)]


def test_enable_parameter_names_match_cprofile():
    ref = ref_signature(_lsprof.Profiler.enable)
    mine = params(rprofile.Profile.enable, skip_self=True)
    assert [p.name for p in mine] == [name for name, _ in ref]


def test_signature_defaults_match_cprofile():
    ref = dict(ref_signature(_lsprof.Profiler))
    # Until 3.13 _lsprof's docstring says timeunit=None, but its real default is 0.0 and an
    # explicit None is a TypeError (see test_explicit_none_flags_match_cprofile); the signature
    # shows 0.0, as 3.14's own does.
    if sys.version_info < (3, 14):
        assert ref["timeunit"] is None
        ref["timeunit"] = 0.0
    mine = {p.name: p.default for p in params(rprofile.Profile)}
    assert {k: mine[k] for k in ref} == ref
    ref = dict(ref_signature(_lsprof.Profiler.enable))
    mine = {p.name: p.default for p in params(rprofile.Profile.enable, skip_self=True)}
    assert mine == ref


@pytest.mark.parametrize("name", ["run", "runctx", "runcall", "print_stats", "dump_stats",
                                  "create_stats", "snapshot_stats", "__enter__", "__exit__",
                                  "getstats", "disable", "clear"])
def test_method_signatures_match_cprofile(name):
    try:
        ref = inspect.signature(getattr(cProfile.Profile, name))
    except ValueError:  # a C method without a text signature on this version: use its doc
        ref_params = doc_signature(getattr(cProfile.Profile, name).__doc__)
        mine = params(getattr(rprofile.Profile, name), skip_self=True)
        assert [(p.name, p.default) for p in mine] == ref_params
        return
    assert inspect.signature(getattr(rprofile.Profile, name)) == ref


@pytest.mark.parametrize("name", ["run", "runctx"])
def test_module_function_signatures_match_cprofile(name):
    assert inspect.signature(getattr(rprofile, name)) == inspect.signature(
        getattr(cProfile, name))


def test_the_deprecated_profile_module_is_never_imported(tmp_path):
    # 3.15 deprecates `import profile`; a user's test suite run with -W error would fail on
    # rprofile importing it. run() and runctx() used to borrow its helper.
    import subprocess

    script = (
        "import sys, rprofile, rprofile.stats, rprofile.__main__\n"
        "rprofile.run('len(\"x\")', %r)\n"
        "rprofile.runctx('len(\"x\")', {}, {}, %r)\n"
        "rprofile.Stats(%r).print_stats()\n"
        "print('profile' in sys.modules)\n"
    ) % ((str(tmp_path / "x.prof"),) * 3)
    r = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", script],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "False"


def test_module_exports():
    for name in ("run", "runctx", "Profile", "label"):
        assert name in rprofile.__all__
        assert callable(getattr(rprofile, name))


# ---------------------------------------------------------------------------------------------
# Constructor and enable() flags.

def observe(module, ctor_kw, enable_args, enable_kw):
    """What a profiler made and enabled so shows: an exception, or (builtins seen, every
    entry's calls is None)."""
    try:
        p = module.Profile(**ctor_kw)
    except Exception as e:
        return ("ctor", type(e).__name__, str(e))
    try:
        p.enable(*enable_args, **enable_kw)
    except Exception as e:
        p.disable()
        return ("enable", type(e).__name__, str(e))
    work(3)
    p.disable()
    stats = p.getstats()
    builtins_seen = any(isinstance(e.code, str) and "len" in e.code for e in stats)
    return ("ok", builtins_seen, all(e.calls is None for e in stats))


FLAG_VALUES = [True, False, 0, 1, -1, 2, 1.5, "x", [], [1]]
CTORS = [{}, {"subcalls": False, "builtins": False}]
FORMS = ["subcalls_pos", "both_pos", "builtins_kw", "subcalls_kw"]


def enable_call(form, value):
    return {"subcalls_pos": ((value,), {}), "both_pos": ((value, value), {}),
            "builtins_kw": ((), {"builtins": value}),
            "subcalls_kw": ((), {"subcalls": value})}[form]


@pytest.mark.parametrize("value", FLAG_VALUES, ids=repr)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("ctor", CTORS, ids=["default", "off"])
def test_enable_flag_values_match_cprofile(value, form, ctor):
    args, kw = enable_call(form, value)
    assert observe(rprofile, ctor, args, kw) == observe(cProfile, ctor, args, kw)


@pytest.mark.parametrize("value", FLAG_VALUES, ids=repr)
@pytest.mark.parametrize("name", ["subcalls", "builtins"])
def test_constructor_flag_values_match_cprofile(value, name):
    assert observe(rprofile, {name: value}, (), {}) == observe(cProfile, {name: value}, (), {})


@pytest.mark.parametrize("extra", [(), (0.001,), (0.001, False), (0.001, 1, 0), (0.5, 0, 1)])
def test_constructor_positional_arguments_match_cprofile(extra):
    mine, ref = rprofile.Profile(Tick(), *extra), cProfile.Profile(Tick(), *extra)
    for p in (mine, ref):
        p.runcall(work, 3)
    assert entries(mine) == entries(ref)


def test_constructor_keyword_arguments_match_cprofile():
    kw = dict(timeunit=0.001, subcalls=False, builtins=False)
    mine, ref = rprofile.Profile(timer=Tick(), **kw), cProfile.Profile(timer=Tick(), **kw)
    for p in (mine, ref):
        p.runcall(work, 3)
    assert entries(mine) == entries(ref)


@pytest.mark.parametrize("case", ["enable_pos", "enable_builtins_kw", "ctor_subcalls",
                                  "ctor_builtins", "ctor_timeunit"])
def test_explicit_none_flags_match_cprofile(case):
    ctor, args, kw = {
        "enable_pos": ({}, (None,), {}),
        "enable_builtins_kw": ({}, (), {"builtins": None}),
        "ctor_subcalls": ({"subcalls": None}, (), {}),
        "ctor_builtins": ({"builtins": None}, (), {}),
        "ctor_timeunit": ({"timeunit": None}, (), {}),
    }[case]
    assert observe(rprofile, ctor, args, kw) == observe(cProfile, ctor, args, kw)


@pytest.mark.parametrize("where", ["enable", "ctor"])
def test_huge_int_flag_matches_cprofile(where):
    value = 2 ** 70
    if where == "enable":
        a = observe(rprofile, {}, (value,), {})
        b = observe(cProfile, {}, (value,), {})
    else:
        a = observe(rprofile, {"builtins": value}, (), {})
        b = observe(cProfile, {"builtins": value}, (), {})
    assert a == b


def test_enable_twice_and_disable_twice_match_cprofile():
    def scenario(module):
        p = module.Profile(Tick(), 1.0)
        p.enable()
        try:
            p.enable()
            second = "ok"
        except Exception as e:
            second = (type(e).__name__, str(e))
        work(2)
        p.disable()
        p.disable()
        return second, entries(p)

    assert scenario(rprofile) == scenario(cProfile)


# ---------------------------------------------------------------------------------------------
# Context manager, runcall, run/runctx.

def test_context_manager_returns_the_profile():
    p = rprofile.Profile()
    with p as q:
        assert q is p
        assert profiling_active()
        work(2)
    assert not profiling_active()
    p.create_stats()
    assert any(k[2] == "work" for k in p.stats)


def test_context_manager_lets_exceptions_through_like_cprofile():
    for module in (rprofile, cProfile):
        p = module.Profile()
        with pytest.raises(ZeroDivisionError):
            with p:
                1 / 0
        assert not profiling_active()
        assert p.__exit__(None, None, None) is None  # never swallows


class Boom(Exception):
    pass


def takes(func, /, *args, **kw):
    if kw.get("raise_"):
        raise Boom(args)
    return func, args, kw


def test_runcall_returns_the_result_and_passes_keywords():
    p = rprofile.Profile()
    # 'func' and 'self' as keywords reach the function: runcall's own are positional-only.
    result = p.runcall(takes, 1, 2, func="f", self="s", x=3)
    assert result == (1, (2,), {"func": "f", "self": "s", "x": 3})
    assert result == cProfile.Profile().runcall(takes, 1, 2, func="f", self="s", x=3)
    assert not profiling_active()


def test_runcall_propagates_exceptions_and_disables():
    p = rprofile.Profile()
    with pytest.raises(Boom):
        p.runcall(takes, 1, raise_=True)
    assert not profiling_active()
    p.create_stats()
    assert [v[1] for k, v in p.stats.items() if k[2] == "takes"] == [1]


def test_run_and_runctx_methods_return_self():
    for module in (rprofile, cProfile):
        p = module.Profile()
        assert p.runctx("work(2)", globals(), {}) is p
        assert p.run("len('abc')") is p


TIME = re.compile(r"\d+\.\d{3}")


def masked(text):
    """A printed stats table with its times masked: header lines in order, rows sorted (ties
    are listed in the order of the entries' addresses, which differs between the profilers)."""
    lines = [TIME.sub("T", line.rstrip()) for line in text.splitlines()]
    head, rows = [], []
    for i, line in enumerate(lines):
        head.append(line)
        if line.lstrip().startswith("ncalls"):
            rows = sorted(x for x in lines[i + 1:] if x)
            break
    return head, rows


def captured(fn, *args, **kw):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            result = ("returned", fn(*args, **kw))
        except BaseException as e:  # noqa: B036 - SystemExit is part of what is compared
            result = ("raised", type(e).__name__)
    return result, buf.getvalue()


@pytest.mark.parametrize("sort", [-1, "calls", "cumulative"])
def test_runctx_function_prints_cprofiles_table(sort):
    mine = captured(rprofile.runctx, "work(5)", globals(), {}, sort=sort)
    ref = captured(cProfile.runctx, "work(5)", globals(), {}, sort=sort)
    assert mine[0] == ref[0] == ("returned", None)
    assert masked(mine[1]) == masked(ref[1])
    assert "work" in mine[1] and "leaf" in mine[1]


def test_run_function_prints_cprofiles_table():
    statement = "sorted([3, 1, 2]); len('x')"
    mine = captured(rprofile.run, statement)
    ref = captured(cProfile.run, statement)
    assert mine[0] == ref[0]
    assert masked(mine[1]) == masked(ref[1])
    assert "{built-in method builtins.sorted}" in mine[1]


@pytest.mark.parametrize("statement", ["raise SystemExit(3)", "1 / 0"])
def test_run_functions_on_failing_statements_behave_like_cprofile(statement):
    mine = captured(rprofile.runctx, statement, {}, {})
    ref = captured(cProfile.runctx, statement, {}, {})
    assert mine[0] == ref[0]
    assert masked(mine[1]) == masked(ref[1])  # the table is printed in both cases


def test_run_functions_write_a_file(tmp_path):
    mine_file, ref_file = tmp_path / "mine.prof", tmp_path / "ref.prof"
    mine = captured(rprofile.runctx, "work(4)", globals(), {}, filename=str(mine_file))
    ref = captured(cProfile.runctx, "work(4)", globals(), {}, filename=str(ref_file))
    assert mine == ref == (("returned", None), "")  # nothing printed
    mine_stats, ref_stats = pstats.Stats(str(mine_file)).stats, pstats.Stats(str(ref_file)).stats
    assert set(mine_stats) == set(ref_stats)
    assert {k: v[:2] for k, v in mine_stats.items()} == {k: v[:2] for k, v in ref_stats.items()}
    mine = captured(rprofile.run, "len('ab')", str(mine_file))
    ref = captured(cProfile.run, "len('ab')", str(ref_file))
    assert mine == ref
    assert set(pstats.Stats(str(mine_file)).stats) == set(pstats.Stats(str(ref_file)).stats)


# ---------------------------------------------------------------------------------------------
# getstats(), label().

def entries(prof, times=True):
    """getstats() as a sorted list of comparable tuples (code objects compared by identity of
    their label); without the times when the profile ran on the real clock."""
    def name(code):
        return code if isinstance(code, str) else rprofile.label(code)

    def row(e):
        return (name(e.code), e.callcount, e.reccallcount) + (
            (e.totaltime, e.inlinetime) if times else ())

    out = []
    for e in prof.getstats():
        calls = None if e.calls is None else sorted((row(s) for s in e.calls), key=repr)
        out.append(row(e) + (calls,))
    return sorted(out, key=repr)


def test_getstats_entry_shape_matches_lsprof():
    for mine, ref in ((rprofile.profiler_entry, _lsprof.profiler_entry),
                      (rprofile.profiler_subentry, _lsprof.profiler_subentry)):
        assert mine.__match_args__ == ref.__match_args__
        assert (mine.n_fields, mine.n_sequence_fields, mine.n_unnamed_fields) == (
            ref.n_fields, ref.n_sequence_fields, ref.n_unnamed_fields)
        assert issubclass(mine, tuple)
    p = rprofile.Profile()
    p.runcall(work, 3)
    stats = p.getstats()
    assert isinstance(stats, list) and stats
    codes = set()
    for e in stats:
        assert type(e) is rprofile.profiler_entry
        assert e == (e.code, e.callcount, e.reccallcount, e.totaltime, e.inlinetime, e.calls)
        assert isinstance(e.code, (str, type(work.__code__)))
        assert isinstance(e.callcount, int) and isinstance(e.reccallcount, int)
        assert isinstance(e.totaltime, float) and isinstance(e.inlinetime, float)
        # A list of subentries, None for a function that called nothing profiled (as _lsprof).
        assert e.calls is None or isinstance(e.calls, list) and e.calls
        for s in e.calls or ():
            assert type(s) is rprofile.profiler_subentry
            assert s == (s.code, s.callcount, s.reccallcount, s.totaltime, s.inlinetime)
        codes.add(e.code)
    assert work.__code__ in codes and leaf.__code__ in codes  # the code objects themselves
    assert [e.calls is None for e in stats if e.code is leaf.__code__] == [True]
    assert [e.calls is None for e in stats if e.code is work.__code__] == [False]


@pytest.mark.parametrize("subcalls", [True, False])
@pytest.mark.parametrize("builtins", [True, False])
def test_getstats_matches_cprofile_with_a_counting_timer(subcalls, builtins):
    mine = rprofile.Profile(Tick(), 0.001, subcalls, builtins)
    ref = cProfile.Profile(Tick(), 0.001, subcalls, builtins)
    for p in (mine, ref):
        p.runcall(work, 4)
    assert entries(mine) == entries(ref)
    work_entry = [e for e in mine.getstats() if e.code is work.__code__][0]
    # 3.14's enable() defaults subcalls to True whatever the constructor said.
    subcalls = subcalls or sys.version_info >= (3, 14)
    assert (work_entry.calls is None) == (not subcalls)
    if not subcalls:
        assert all(e.calls is None for e in mine.getstats())


def test_label_matches_cprofile():
    # label() is defined beside cProfile.Profile (3.15: in profiling.tracing, not re-exported).
    ref = sys.modules[cProfile.Profile.__module__]
    assert rprofile.label(work.__code__) == ref.label(work.__code__)
    assert rprofile.label("<built-in method builtins.len>") == ref.label(
        "<built-in method builtins.len>")


# ---------------------------------------------------------------------------------------------
# print_stats, dump_stats, create_stats/snapshot_stats.

SORTS = [-1, 0, 1, 2, "calls", "cumulative", "cumtime", "file", "filename", "line", "module",
         "name", "nfl", "pcalls", "stdname", "time", "tottime", "ncalls"]


def printed(module, sort):
    p = module.Profile(Tick(), 0.001)
    p.runcall(work, 5)
    return captured(p.print_stats, sort)


@pytest.mark.parametrize("sort", SORTS, ids=repr)
def test_print_stats_matches_cprofile(sort):
    (mine_result, mine_out), (ref_result, ref_out) = printed(rprofile, sort), printed(
        cProfile, sort)
    assert mine_result == ref_result
    head = mine_out.split("ncalls")[0]
    assert head == ref_out.split("ncalls")[0]  # header, times included (counting timer)
    assert "Ordered by:" in head or sort == -1
    assert masked(mine_out) == masked(ref_out)
    # The rows themselves (times included) are the same multiset.
    assert sorted(mine_out.splitlines()) == sorted(ref_out.splitlines())


@pytest.mark.parametrize("sort", [("calls", "cumulative"), ("tottime",), "bogus", 3],
                         ids=repr)
def test_print_stats_odd_sorts_match_cprofile(sort):
    (mine_result, mine_out), (ref_result, ref_out) = printed(rprofile, sort), printed(
        cProfile, sort)
    assert mine_result == ref_result
    assert masked(mine_out) == masked(ref_out)
    if PY313 and isinstance(sort, tuple):
        assert mine_result == ("returned", None)  # 3.13 takes a tuple of keys


def test_dump_stats_is_loadable_by_pstats(tmp_path):
    mine_file, ref_file = str(tmp_path / "mine.prof"), str(tmp_path / "ref.prof")
    mine, ref = rprofile.Profile(Tick(), 0.001), cProfile.Profile(Tick(), 0.001)
    for p, f in ((mine, mine_file), (ref, ref_file)):
        p.runcall(work, 4)
        p.dump_stats(f)
    with open(mine_file, "rb") as f:
        raw = marshal.load(f)
    assert raw == mine.stats  # dump_stats ran create_stats
    loaded = pstats.Stats(mine_file)
    assert loaded.stats == pstats.Stats(ref_file).stats
    assert loaded.total_calls == pstats.Stats(ref_file).total_calls
    # And the file can be merged with cProfile's.
    loaded.add(ref_file)
    assert loaded.total_calls == 2 * pstats.Stats(ref_file).total_calls


def test_stats_accept_the_profile_object():
    mine, ref = rprofile.Profile(Tick(), 0.001), cProfile.Profile(Tick(), 0.001)
    for p in (mine, ref):
        p.runcall(work, 3)
    assert pstats.Stats(mine).stats == pstats.Stats(ref).stats
    # A profiler that never ran: pstats refuses both, the same way (3.15 takes both, empty).
    outcomes = []
    for module in (rprofile, cProfile):
        try:
            outcomes.append(pstats.Stats(module.Profile()).stats)
        except TypeError as e:
            outcomes.append(str(e).split(" from ")[0])
    assert outcomes[0] == outcomes[1]
    assert outcomes[0] == ({} if sys.version_info >= (3, 15) else
                           "Cannot create or construct a <class 'pstats.Stats'> object")


def test_create_stats_disables_and_snapshot_stats_does_not():
    def scenario(module):
        p = module.Profile(Tick(), 0.001)
        p.enable()
        work(1)
        p.snapshot_stats()
        first = {k[2]: v[1] for k, v in p.stats.items() if k[2] in ("work", "leaf")}
        still = profiling_active()
        work(2)
        p.create_stats()
        after = profiling_active()
        work(3)  # not recorded
        p.snapshot_stats()
        second = {k[2]: v[1] for k, v in p.stats.items() if k[2] in ("work", "leaf")}
        return first, still, after, second

    mine = scenario(rprofile)
    assert mine == scenario(cProfile)
    assert mine == ({"work": 1, "leaf": 1}, True, False, {"work": 2, "leaf": 3})


def test_clear_forgets_everything():
    p = rprofile.Profile()
    p.runcall(work, 3)
    p.clear()
    assert p.getstats() == []
    p.create_stats()
    assert p.stats == {}
    p.runcall(leaf, 1)
    assert [e.code for e in p.getstats() if not isinstance(e.code, str)] == [leaf.__code__]


# ---------------------------------------------------------------------------------------------
# Subclasses.

def test_profile_is_subclassable():
    class Mine(rprofile.Profile):
        extra = "x"

        def print_stats(self, sort=-1):
            self.printed = sort
            return super().print_stats(sort)

    p = Mine(Tick(), 0.001)
    assert isinstance(p, rprofile.Profile)
    p.runcall(work, 3)
    result, out = captured(p.print_stats, "calls")
    assert p.printed == "calls" and "work" in out
    ref = cProfile.Profile(Tick(), 0.001)
    ref.runcall(work, 3)
    assert pstats.Stats(p).stats == pstats.Stats(ref).stats


@pytest.mark.parametrize("shape", ["own_args", "own_args_and_timer", "pass_through"])
def test_subclass_with_its_own_init_works_like_cprofile(shape):
    def scenario(module):
        class Labelled(module.Profile):
            def __init__(self, label, *args, **kw):
                super().__init__(*args, **kw)
                self.label = label

        class PassThrough(module.Profile):
            def __init__(self, *args, **kw):
                super().__init__(*args, **kw)

        seen = []
        old, sys.unraisablehook = sys.unraisablehook, lambda u: seen.append(u)
        try:
            if shape == "own_args":
                p = Labelled("x")
            elif shape == "own_args_and_timer":
                p = Labelled("x", Tick(), 0.001)
            else:
                p = PassThrough(Tick(), 0.001)
            p.runcall(work, 2)
        except Exception as e:
            return type(e).__name__, str(e)
        finally:
            sys.unraisablehook = old
        # "own_args" runs on the real clock: compare counts only.
        return getattr(p, "label", None), len(seen), entries(p, times=shape != "own_args")

    ref = scenario(cProfile)
    assert ref[1] == 0
    assert scenario(rprofile) == ref
