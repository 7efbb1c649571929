"""Differential tests: ``rprofile.Stats`` against the running interpreter's ``pstats.Stats``.

Every test does the same thing with ``pstats.Stats`` (the reference) and with ``rprofile.Stats``
(the implementation under test) and compares what comes out: the printed reports character for
character, the attributes, the dicts, the exception types.

The inputs are profile files written once per module (``profile_files`` below):

* ``cprofile_tick``    cProfile with a counting timer on a varied workload (recursion, mutual
  recursion, builtins, methods, generators, two ``mod.py`` files in different directories with
  the same functions at the same lines, so that ``strip_dirs`` merges rows);
* ``rprofile_tick``    the same workload profiled by ``rprofile.Profile``;
* ``profile_int``      the pure-Python ``profile`` module with an integer timer (int caller
  counts instead of tuples, int times);
* ``cprofile_realtime`` cProfile with its real clock (floats with many digits);
* ``merged``           several of the above merged by pstats and dumped again;
* ``synthetic``        a marshal-dumped dict of a few thousand rows: unicode names, both built-in
  label forms, zero call counts, ``nc != cc``, tied values, one top-level function;
* ``stdlib_pck``       CPython's own ``test/pstats.pck`` when the interpreter ships it.

Only output whose order is deterministic is compared text for text: ``top_level`` is a set
printed in iteration order, so reports of data with several top-level functions are compared
with that header block as a multiset (``test_several_top_level_functions``).

``RPROFILE_STATS_SELFTEST=1`` runs the whole file with ``pstats.Stats`` itself (plus a small
subclass giving it rprofile's two extensions: ``os.PathLike`` file names and Stats objects as
arguments) as the implementation under test: every test must pass that way, which checks the
harness without rprofile.
"""

import contextlib
import cProfile
import importlib.util
import io
import itertools
import marshal
import math
import os
import pathlib
import profile as pyprofile
import pstats
import random
import sysconfig
import time
from collections import Counter, namedtuple
from fractions import Fraction

import pytest

from support import Tick

SELFTEST = os.environ.get("RPROFILE_STATS_SELFTEST", "") not in ("", "0")

import rprofile  # noqa: E402

if SELFTEST:

    class SelfTestStats(pstats.Stats):
        """pstats.Stats with rprofile.Stats's two extensions, for checking the harness: a file
        name may be an os.PathLike, and a Stats object (of either class) is taken as if it were
        add()ed to an empty Stats."""

        def init(self, arg):
            if isinstance(arg, pstats.Stats):
                super().init(None)
                self.add(arg)
            else:
                super().init(os.fspath(arg) if isinstance(arg, os.PathLike) else arg)

        def add(self, *arg_list):
            items = []
            for item in arg_list:
                if isinstance(item, os.PathLike):
                    item = os.fspath(item)
                elif isinstance(item, pstats.Stats) and type(item) is not type(self):
                    clone = object.__new__(type(self))
                    clone.__dict__.update(item.__dict__)
                    item = clone
                items.append(item)
            return super().add(*items)

    Impl = SelfTestStats
    IMPL_NAME = "pstats.Stats (RPROFILE_STATS_SELFTEST)"
else:
    try:
        Impl = rprofile.Stats
        import rprofile.stats as impl_module
    except (AttributeError, ImportError) as exc:
        raise ImportError(
            "rprofile.Stats is not available in this build (%s); set RPROFILE_STATS_SELFTEST=1 "
            "to check this test file against pstats itself" % exc
        ) from exc
    IMPL_NAME = "rprofile.Stats"

Ref = pstats.Stats
SortKey = pstats.SortKey


def needs_rprofile():
    if SELFTEST:
        pytest.skip("checks rprofile's own module layout; not applicable in self-test mode")


# ---------------------------------------------------------------------------------------------
# Profile files, written once per module
# ---------------------------------------------------------------------------------------------

# Same function names at the same lines in two files with the same basename: strip_dirs makes
# them one row. The bodies differ so that the two rows have different numbers before merging.
MOD_A = '''\
def helper(n):
    return sum(i * i for i in range(n))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
'''
MOD_B = '''\
def helper(n):
    return max(range(n + 1))


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
'''
WORKLOAD = '''\
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


class Shape:
    def __init__(self, k):
        self.k = k

    def area(self):
        return self._square() * 3

    def _square(self):
        return self.k * self.k

    @property
    def double(self):
        return self.k * 2

    @staticmethod
    def make(k):
        return Shape(k)


def gen(n):
    for i in range(n):
        yield i * 2


def fails():
    raise ValueError("x")


def run(mod_a, mod_b, scale=1):
    fib(10 + scale)
    is_even(12 + scale)
    shapes = [Shape.make(i) for i in range(8)]
    total = sum(s.area() + s.double for s in shapes)
    sorted(range(20), key=lambda x: -x)
    list(gen(6))
    sum(gen(4))
    max([3, 1, 2])
    len("abc")
    "".join(["a", "b"])
    {}.get(1)
    mod_a.fib(7)
    mod_b.fib(9)
    mod_a.helper(4)
    mod_b.helper(5)
    try:
        fails()
    except ValueError:
        pass
    return total
'''


def _load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_workload(root):
    for sub, text in (("pkg_a", MOD_A), ("pkg_b", MOD_B)):
        (root / sub).mkdir()
        (root / sub / "mod.py").write_text(text)
    (root / "workload.py").write_text(WORKLOAD)
    mod_a = _load_module("rprofile_stats_compat_pkg_a_mod", root / "pkg_a" / "mod.py")
    mod_b = _load_module("rprofile_stats_compat_pkg_b_mod", root / "pkg_b" / "mod.py")
    work = _load_module("rprofile_stats_compat_workload", root / "workload.py")
    return lambda scale=1: work.run(mod_a, mod_b, scale)


FUNC_NAMES = [
    "fib", "helper", "__init__", "<lambda>", "<listcomp>", "<genexpr>", "caf\u00e9",
    "na\u00efve_\u00df", "\u51fd\u6570", "snake_\U0001f40d", "e\u0301", "run", "Fib", "%d",
    "[bracket]", "a.b", "x" * 90, "fib_helper",
]
DIRS = [
    "/srv/app", "/srv/app/sub", "/usr/lib/python3/site-packages/pkg", "relative/dir", "",
    "/tmp/dir with space", "/\u00fcn\u00efc\u00f6d\u00e9/\u8def\u5f84", "C:\\win\\path",
]
BASENAMES = ["mod.py", "util.py", "__init__.py", "w\u00e9ird name.py", "fib.py", "(paren).py"]
BUILTINS = [
    ("~", 0, "<built-in method builtins.len>"),
    ("~", 0, "<built-in method builtins.fib>"),
    ("~", 0, "<method 'append' of 'list' objects>"),
    ("~", 0, "old_style_builtin"),
    ("~", 0, "<>"),
    ("~", 0, "<"),
    ("~", 0, ""),
    ("~", 3, "tilde_with_a_line"),
    ("~~", 0, "<not a builtin>"),
]
TOP_LEVEL_CALLER = ("jprofile", 0, "profiler")


def synthetic_stats(n=2000, seed=20240607):
    """A stats dict in cProfile's format with the awkward cases of real and hand-made files."""
    rng = random.Random(seed)

    def a_time():
        kind = rng.randrange(10)
        if kind == 0:
            return 0.0
        if kind == 1:
            return float(rng.choice([0.0005, 0.0015, 0.0025, 1.0005, 2.5e-4, 0.5, 0.125]))
        if kind == 2:
            return rng.choice([1e-9, 123456.789, 1e9 + 0.0005, -0.0, -1e-7])
        if kind == 3:
            return rng.randint(0, 50)  # an int among floats
        return rng.random() * 10 ** rng.randint(-6, 2)

    def counts():
        nc = rng.choice([0, 1, 1, 1, 2, 3, 7, 10, 1000, 123456])
        kind = rng.randrange(6)
        if kind == 0 and nc:
            return rng.randint(0, nc - 1), nc  # recursive: primitive calls fewer
        if kind == 1:
            return nc + rng.randint(1, 3), nc  # more primitive than total: hand-made data
        return nc, nc

    keys = [("<synthetic>", 0, "first_row_without_callers")]
    seen = set(keys)
    for key in BUILTINS:
        keys.append(key)
        seen.add(key)
    while len(keys) < n:
        d = rng.choice(DIRS)
        base = rng.choice(BASENAMES)
        file = base if not d else d + "/" + base
        if rng.randrange(40) == 0:
            file = rng.choice(["<string>", "<frozen importlib._bootstrap>", "C:\\win\\mod.py",
                               "dir/", "/"])
        line = rng.choice([0, 1, 7, 42, 100, 1000, 99999, rng.randint(1, 5000)])
        name = rng.choice(FUNC_NAMES)
        if rng.randrange(3) == 0:
            name += "_%d" % rng.randrange(40)
        key = (file, line, name)
        if key not in seen:
            seen.add(key)
            keys.append(key)

    stats = {}
    for i, key in enumerate(keys):
        cc, nc = counts()
        tt = a_time()
        ct = tt + a_time() if rng.randrange(4) else tt
        callers = {}
        if i:
            for _ in range(rng.choice([0, 1, 1, 1, 2, 3, 6])):
                caller = rng.choice(keys)
                c_cc, c_nc = counts()
                callers[caller] = (c_nc, c_cc, a_time(), a_time())
        stats[key] = (cc, nc, tt, ct, callers)
    # Exactly one top-level function, so that the header (a set) prints deterministically.
    top = keys[len(keys) // 2]
    stats[top][4][TOP_LEVEL_CALLER] = (1, 1, 0.0, 0.0)
    return stats


def _run_profiler(prof, work, scale=1):
    prof.runcall(work, scale)
    return prof


@pytest.fixture(scope="module")
def profile_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats_compat")
    work = _write_workload(root)
    work()  # warm up: imports and caches outside the profiles
    files = {}

    def path(name):
        return str(root / (name + ".prof"))

    _run_profiler(cProfile.Profile(Tick()), work).dump_stats(path("cprofile_tick"))
    _run_profiler(rprofile.Profile(Tick()), work).dump_stats(path("rprofile_tick"))
    _run_profiler(pyprofile.Profile(Tick()), work).dump_stats(path("profile_int"))
    _run_profiler(pyprofile.Profile(Tick()), work, 2).dump_stats(path("profile_int_2"))
    real = cProfile.Profile()
    for scale in (1, 2, 3):
        _run_profiler(real, work, scale)
    real.dump_stats(path("cprofile_realtime"))
    pstats.Stats(path("cprofile_tick"), path("cprofile_realtime"), path("rprofile_tick"),
                 path("cprofile_tick")).dump_stats(path("merged"))
    with open(path("synthetic"), "wb") as f:
        marshal.dump(synthetic_stats(), f)
    for name in ("cprofile_tick", "rprofile_tick", "profile_int", "profile_int_2",
                 "cprofile_realtime", "merged", "synthetic"):
        files[name] = path(name)
    if os.path.exists(STDLIB_PCK):
        files["stdlib_pck"] = STDLIB_PCK
    files["_root"] = str(root)
    files["_work"] = work
    return files


STDLIB_PCK = os.path.join(sysconfig.get_paths()["stdlib"], "test", "pstats.pck")

FILE_NAMES = ["cprofile_tick", "rprofile_tick", "profile_int", "cprofile_realtime", "merged",
              "synthetic", "stdlib_pck"]
BIG = {"synthetic"}
MEDIUM = {"stdlib_pck"}
PROFILE_FORMAT = {"profile_int", "profile_int_2"}


def get_file(profile_files, name):
    if name not in profile_files:
        pytest.skip("%s does not exist on this interpreter" % name)
    return profile_files[name]


def partners(profile_files, name):
    """Files of the same caller format to merge with `name` (profile's int callers cannot be
    merged with cProfile's tuples)."""
    if name in PROFILE_FORMAT:
        return [profile_files["profile_int_2"], profile_files[name]]
    if name in BIG:
        return [profile_files["cprofile_tick"], profile_files["cprofile_realtime"]]
    return [profile_files["cprofile_realtime"], profile_files[name]]


# ---------------------------------------------------------------------------------------------
# Running one scenario on both sides
# ---------------------------------------------------------------------------------------------

REF, IMPL = "pstats", "impl"


def stats_class(side):
    return Ref if side == REF else Impl


def construct(side, kind, path, others, stream):
    """Build a Stats the way `kind` says. For the extensions (PathLike, Stats arguments) the
    pstats side does the equivalent that pstats accepts."""
    S = stats_class(side)
    if kind == "one":
        return S(path, stream=stream)
    if kind == "ctor-several":
        return S(path, *others, stream=stream)
    if kind == "add-later":
        return S(path, stream=stream).add(*others)
    if kind == "add-chain":
        s = S(path, stream=stream)
        for other in others:
            s = s.add(other)
        return s
    if kind == "empty-then-add":
        return S(stream=stream).add(path, *others)
    if kind == "pathlike":
        if side == REF:
            return Ref(path, *others, stream=stream)
        return Impl(pathlib.Path(path), *map(pathlib.Path, others), stream=stream)
    if kind == "stats-of-stats":
        if side == REF:
            return Ref(stream=stream).add(Ref(path, *others))
        return Impl(Impl(path, *others), stream=stream)
    if kind == "stats-of-pstats":
        if side == REF:
            return Ref(stream=stream).add(Ref(path, *others))
        return Impl(Ref(path, *others), stream=stream)
    if kind == "add-stats":
        if side == REF:
            return Ref(path, stream=stream).add(*[Ref(o) for o in others])
        return Impl(path, stream=stream).add(*[Impl(o) for o in others])
    if kind == "add-pstats":
        if side == REF:
            return Ref(path, stream=stream).add(*[Ref(o) for o in others])
        return Impl(path, stream=stream).add(*[Ref(o) for o in others])
    raise AssertionError(kind)


CONSTRUCTIONS = ["one", "ctor-several", "add-later", "add-chain", "empty-then-add", "pathlike",
                 "stats-of-stats", "stats-of-pstats", "add-stats", "add-pstats"]

NOSORT = None
State = namedtuple("State", "kind strip sort reverse sort_first", defaults=(False,))


def describe_state(state):
    steps = ["construction=%s" % state.kind]
    sort = None if state.sort is NOSORT else "sort_stats(%s)" % ", ".join(map(repr, state.sort))
    strip = "strip_dirs()" if state.strip else None
    for step in ([sort, strip] if state.sort_first else [strip, sort]):
        if step:
            steps.append(step)
    if state.reverse:
        steps.append("reverse_order()")
    return ", ".join(steps)


def run_state(side, state, path, others, reports):
    """Outcomes of the reports on one Stats: a list of (report, kind, text) with kind "ok" or
    the name of the exception raised."""
    stream = io.StringIO()
    try:
        s = construct(side, state.kind, path, others, stream)

        def sort():
            if state.sort is not NOSORT:
                s.sort_stats(*state.sort)

        def strip():
            if state.strip:
                s.strip_dirs()

        for step in ((sort, strip) if state.sort_first else (strip, sort)):
            step()
        if state.reverse:
            s.reverse_order()
    except Exception as exc:
        return [("setup", type(exc).__name__, stream.getvalue())]
    outcomes = []
    for method, restriction in reports:
        stream.seek(0)
        stream.truncate(0)
        try:
            getattr(s, method)(*restriction)
            kind = "ok"
        except Exception as exc:
            kind = type(exc).__name__
        outcomes.append(((method, restriction), kind, stream.getvalue()))
    return outcomes


def first_difference(expected, actual):
    exp_lines, act_lines = expected.splitlines(), actual.splitlines()
    for i, (e, a) in enumerate(itertools.zip_longest(exp_lines, act_lines)):
        if e != a:
            return "line %d:\n      pstats: %r\n      %s: %r" % (i + 1, e, IMPL_NAME, a)
    return "(same lines, different line endings)"


def compare_states(file_label, path, others, plan):
    """Run every (state, reports) of the plan on both sides; returns the number of reports and
    a list of mismatch descriptions."""
    mismatches = []
    n = 0
    for state, reports in plan:
        expected = run_state(REF, state, path, others, reports)
        if expected[0][0] == "setup":  # every state of a plan is one pstats accepts
            raise AssertionError("harness error: pstats failed to set up %s with %s: %r"
                                 % (file_label, describe_state(state), expected))
        actual = run_state(IMPL, state, path, others, reports)
        n += len(reports)
        if actual[0][0] == "setup":
            mismatches.append("%s: %s\n    setting up raised %s (pstats: no exception)%s" % (
                file_label, describe_state(state), actual[0][1],
                "; printed %r" % actual[0][2] if actual[0][2] else ""))
            continue
        for (rep, kind_e, text_e), (_, kind_a, text_a) in zip(expected, actual):
            if (kind_e, text_e) == (kind_a, text_a):
                continue
            where = "%s: %s, %s(%s)" % (file_label, describe_state(state), rep[0],
                                        ", ".join(map(repr, rep[1])))
            if kind_e != kind_a:
                detail = "pstats: %s, %s: %s" % (kind_e, IMPL_NAME, kind_a)
                if text_e != text_a:
                    detail += "; output " + first_difference(text_e, text_a)
            else:
                detail = "output " + first_difference(text_e, text_a)
            mismatches.append("%s\n    %s" % (where, detail))
    return n, mismatches


def assert_no_mismatches(n, mismatches):
    if mismatches:
        shown = "\n".join(mismatches[:8])
        pytest.fail("%d of %d reports differ from pstats; first ones:\n%s"
                    % (len(mismatches), n, shown), pytrace=False)


# ---------------------------------------------------------------------------------------------
# 2. The report sweep
# ---------------------------------------------------------------------------------------------


class MyStr(str):
    pass


def all_sort_specs():
    """Every single key pstats accepts, in get_sort_arg_defs() order, then combinations, SortKey
    members, the legacy ints, and sort_stats() with no argument."""
    specs = [(word,) for word in Ref().get_sort_arg_defs()]
    specs += [
        ("name", "file", "line"), ("calls", "time"), ("file", "name"), ("time", "time"),
        ("pcalls", "cumulative", "name"), ("line", "stdname"), ("tottime", "ncalls", "nfl"),
        ("module", "li", "na"), ("stdname", "calls"), ("cumtime", "pcalls", "line", "name"),
    ]
    specs += [(member,) for member in SortKey]
    specs += [(SortKey.TIME, SortKey.NAME), (SortKey.CALLS, SortKey.CUMULATIVE, SortKey.NFL),
              (SortKey.FILENAME, SortKey.LINE, SortKey.STDNAME)]
    specs += [(-1,), (0,), (1,), (2,), (True,), (False,), (MyStr("time"),), ()]
    return specs


# The canonical spellings: on the big file, abbreviations add time but nothing new (they are
# resolved before the data is looked at, and checked on every small file).
CANONICAL_SORTS = set(Ref.sort_arg_dict_default)

RESTRICTIONS = [
    (), (5,), (0.3,), ("fib",), ("mod.py:",), ("fib", 2), (2, "fib"), ("[",), (r"(\w+)\1",),
    ("(?<=a)b",), ("^/",), ("(?i)FIB",), (".*",), (1.5,), (-1,), (0,), (True,), (False,),
    (None,), (0.0,), (0.999,), (1.0,), (10 ** 6,), ("",), ("fib", "mod"), ("mod", 0.5, 3),
    ("{built-in",), (r"\(",), ("\u00e9",), (r"\d+\(",), ("$^",), (b"fib",), (Fraction(1, 2),),
    (float("nan"),), (float("inf"),), (-0.5,), (SortKey.NAME,), ("a{4294967296}",),
    ("init", 0.5), (3, 0.5, "i"), ("(?P<n>fib)(?P=m)",),
]
METHODS = ["print_stats", "print_callers", "print_callees"]

# Restrictions that keep the output short, for rotating through on the big file.
SHORT_RESTRICTIONS = [(5,), (0.01,), ("fib", 3), (2, "fib"), ("[",), (0,), ("mod.py:", 4),
                      (True,), ("snake", 0.5), ("$^",)]


def sweep_plan(name):
    """The (state, reports) pairs for one file. Small files get everything; on the larger ones
    (stdlib_pck: a few hundred rows, synthetic: thousands) abbreviations are left out (they are
    resolved before the data is looked at) and fewer states are built, to keep the time down."""
    tier = "big" if name in BIG else "medium" if name in MEDIUM else "small"
    plan = []
    specs = all_sort_specs()
    if tier != "small":
        specs = [s for s in specs if len(s) != 1 or type(s[0]) is not str
                 or s[0] in CANONICAL_SORTS]
    if tier == "big":
        specs = specs[::2]
    # Pass 1: every sort spec, with and without strip_dirs and reverse_order.
    rotation = itertools.cycle(SHORT_RESTRICTIONS if tier == "big" else RESTRICTIONS)
    for i, spec in enumerate(specs):
        combos = [(False, False), (True, True), (True, False) if i % 2 else (False, True)]
        if tier == "medium":
            combos = combos[i % 2: i % 2 + 2]
        elif tier == "big":
            combos = [combos[i % 3]]
        for strip, reverse in combos:
            reports = [("print_stats", next(rotation)), ("print_callers", next(rotation))]
            if i % 3 == 0:
                reports.append(("print_callees", next(rotation)))
            plan.append((State("one", strip, spec, reverse), reports))
    # Pass 2: every restriction with every report method, on a few sorted and unsorted states.
    pool = [
        State("one", False, ("cumulative",), False),
        State("one", True, ("name", "file", "line"), True),
        State("one", False, NOSORT, False),
        State("one", True, ("calls", "time"), False),
        State("one", False, ("stdname",), True),
        State("one", True, (), True),
    ]
    if tier == "medium":
        pool = pool[:3]
    if tier == "big":
        # All rows printed once per report method; then every restriction with every method,
        # cut to a few hundred rows first so that the reports stay short.
        plan.append((pool[0], [(m, ()) for m in METHODS] + [("print_stats", ("fib",))]))
        plan.append((pool[1], [(m, (300,) + r) for r in RESTRICTIONS for m in METHODS]))
    else:
        for state in pool:
            plan.append((state, [(m, r) for r in RESTRICTIONS for m in METHODS]))
    # Pass 3: every construction, stripped or not, in a few orders.
    sorts = [NOSORT, ("time",), ("calls", "name")] if tier == "small" else [("time",)]
    for i, kind in enumerate(CONSTRUCTIONS):
        for strip in (False, True) if tier != "big" else (i % 2 == 0,):
            for j, spec in enumerate(sorts):
                reports = [("print_stats", (8,) if tier == "big" else ()),
                           ("print_callers", (0.2,)), ("print_callees", ("fib",))]
                plan.append((State(kind, strip, spec, j == 1 or (tier != "small" and strip)),
                             reports))
        # sort_stats then strip_dirs: the order is dropped, the sort type kept.
        if tier != "big" or i < 2:
            plan.append((State(kind, True, ("line",), False, sort_first=True),
                         [("print_stats", (10,)), ("print_callees", (5,))]))
    return plan


@pytest.mark.parametrize("name", FILE_NAMES)
def test_report_sweep(profile_files, name):
    path = get_file(profile_files, name)
    plan = sweep_plan(name)
    n, mismatches = compare_states(name, path, partners(profile_files, name), plan)
    assert n >= (150 if name in BIG else 300)
    assert_no_mismatches(n, mismatches)


def test_sort_arg_defs_order_and_content():
    ref, impl = Ref(), Impl()
    assert list(impl.get_sort_arg_defs().items()) == list(ref.get_sort_arg_defs().items())
    assert impl.sort_arg_dict_default == Ref.sort_arg_dict_default
    assert Impl.sort_arg_dict_default == Ref.sort_arg_dict_default


# ---------------------------------------------------------------------------------------------
# 3. Attributes and dicts
# ---------------------------------------------------------------------------------------------


def rows(stats):
    """A stats dict as nested lists, so that dict order and number types are compared too."""
    return [(k, tuple((type(x), x) for x in v[:4]), list(v[4].items())) for k, v in stats.items()]


def assert_same_rows(expected, actual, where=""):
    """The two stats dicts have the same rows in the same order with the same number types."""
    e, a = rows(expected), rows(actual)
    if e == a:
        return
    for i, (x, y) in enumerate(itertools.zip_longest(e, a)):
        if x != y:
            raise AssertionError(
                "stats differ in row order or number types%s; first at row %d:\n"
                "      pstats: %r\n      %s: %r" % (where, i, x, IMPL_NAME, y))


def assert_same_attributes(ref, impl, what=""):
    where = " (%s)" % what if what else ""
    assert type(impl.stats) is dict, "stats is a %s%s" % (type(impl.stats), where)
    assert impl.stats == ref.stats, "stats differ" + where
    assert_same_rows(ref.stats, impl.stats, where)
    for attr in ("total_calls", "prim_calls", "total_tt", "files", "top_level", "max_name_len",
                 "fcn_list"):
        e, a = getattr(ref, attr), getattr(impl, attr)
        assert a == e and type(a) is type(e), "%s: pstats %r, %s %r%s" % (
            attr, e, IMPL_NAME, a, where)
    assert hasattr(impl, "sort_type") == hasattr(ref, "sort_type"), "sort_type presence" + where
    if hasattr(ref, "sort_type"):
        assert impl.sort_type == ref.sort_type, where
    assert impl.stream is ref.stream or (
        isinstance(ref.stream, io.StringIO) and isinstance(impl.stream, io.StringIO)), where


def both(build):
    """(pstats object, impl object), each built by build(S, stream)."""
    return build(Ref, io.StringIO()), build(Impl, io.StringIO())


def outcome_of(thunk):
    """("ok", None), or the type and value of the exception thunk() raised."""
    try:
        thunk()
        return "ok", None
    except Exception as exc:
        return type(exc), exc


def assert_same_run(ref, impl, ops, what=""):
    """Run each op(s) on both objects, going on after exceptions: the outcome of each (ok or the
    exception type) and all the printed text must be the same."""
    got = []
    for s in (ref, impl):
        got.append([outcome_of(lambda: op(s))[0] for op in ops])
    assert got[1] == got[0], "outcomes differ%s: pstats %s, %s %s" % (
        " (%s)" % what if what else "", got[0], IMPL_NAME, got[1])
    e, a = ref.stream.getvalue(), impl.stream.getvalue()
    assert a == e, "output differs%s: %s" % (" (%s)" % what if what else "",
                                             first_difference(e, a))
    return got[0]


@pytest.mark.parametrize("name", FILE_NAMES)
def test_attributes_through_a_session(profile_files, name):
    path = get_file(profile_files, name)
    others = partners(profile_files, name)
    ref, impl = both(lambda S, st: S(path, stream=st))
    assert impl.all_callees is None and impl.fcn_list is None
    assert_same_attributes(ref, impl, "after load")
    assert impl.get_stats_profile() == ref.get_stats_profile()
    ref.calc_callees()
    assert impl.calc_callees() is None
    assert impl.all_callees == ref.all_callees
    assert list(impl.all_callees) == list(ref.all_callees)

    for step, args in [("sort_stats", ("cumulative", "name")), ("reverse_order", ()),
                       ("strip_dirs", ()), ("sort_stats", (SortKey.NFL,)),
                       ("add", tuple(others)), ("sort_stats", (2,)), ("reverse_order", ()),
                       ("sort_stats", ()), ("reverse_order", ()), ("sort_stats", ("pcalls",))]:
        assert getattr(ref, step)(*args) is ref
        assert getattr(impl, step)(*args) is impl, "%s did not return self" % step
        what = "after %s(%s)" % (step, ", ".join(map(repr, args)))
        assert_same_attributes(ref, impl, what)
        e, a = ref.get_stats_profile(), impl.get_stats_profile()
        assert a == e, "get_stats_profile " + what
        assert list(a.func_profiles.items()) == list(e.func_profiles.items()), what
        assert type(a.total_tt) is type(e.total_tt)
        ref.print_callees()
        impl.print_callees()
        assert impl.all_callees == ref.all_callees, "all_callees " + what
        assert list(impl.all_callees) == list(ref.all_callees), what
        assert impl.stream.getvalue() == ref.stream.getvalue(), what


def test_what_each_method_returns(profile_files, tmp_path):
    """Methods pstats returns self from return self; the others return what pstats' do (None,
    or a value of the same type), also when the report is empty."""
    path, other = profile_files["cprofile_tick"], profile_files["cprofile_realtime"]
    calls = [("add", ()), ("add", (other,)), ("strip_dirs", ()), ("sort_stats", ("time",)),
             ("sort_stats", ()), ("reverse_order", ()), ("print_stats", ()),
             ("print_stats", (0,)), ("print_callers", ("$^",)), ("print_callees", (3,)),
             ("calc_callees", ()), ("calc_callees", ()), ("get_top_level_stats", ()),
             ("get_sort_arg_defs", ()), ("get_stats_profile", ()),
             ("dump_stats", (str(tmp_path / "out.prof"),)), ("load_stats", (path,)),
             ("load_stats", (None,))]
    ref, impl = both(lambda S, st: S(path, stream=st))

    def kind(obj, result):
        return "self" if result is obj else "None" if result is None else type(result)

    for method, args in calls:
        e = kind(ref, getattr(ref, method)(*args))
        a = kind(impl, getattr(impl, method)(*args))
        assert a == e, "%s%r returns %s, pstats' returns %s" % (method, args, a, e)
    assert impl.stream.getvalue() == ref.stream.getvalue()


def test_stats_profile_classes_are_pstats():
    needs_rprofile()
    assert rprofile.Stats is impl_module.Stats
    assert rprofile.SortKey is pstats.SortKey
    assert impl_module.StatsProfile is pstats.StatsProfile
    assert impl_module.FunctionProfile is pstats.FunctionProfile


def test_get_stats_profile_types_and_empty(profile_files):
    ref, impl = both(lambda S, st: S(stream=st))
    assert impl.get_stats_profile() == ref.get_stats_profile()
    ref, impl = both(lambda S, st: S(profile_files["cprofile_tick"], stream=st))
    e, a = ref.get_stats_profile(), impl.get_stats_profile()
    assert type(a) is pstats.StatsProfile
    assert all(type(v) is pstats.FunctionProfile for v in a.func_profiles.values())
    # Functions are keyed by bare name: the later of two same-named rows wins (fib in
    # workload.py, pkg_a/mod.py and pkg_b/mod.py).
    assert a.func_profiles["fib"] == e.func_profiles["fib"]
    assert a == e


@pytest.mark.parametrize("name", ["cprofile_tick", "profile_int", "synthetic"])
def test_add_same_file_twice_and_self(profile_files, name):
    path = profile_files[name]
    for build in (lambda S, st: S(path, path, stream=st),
                  lambda S, st: S(path, stream=st).add(path),
                  lambda S, st: S(path, stream=st).add(path, path, path),
                  lambda S, st: S(path, stream=st).add(),
                  lambda S, st: S(path, stream=st).add(S())):
        ref, impl = both(build)
        assert_same_attributes(ref, impl)
    # A Stats added to itself: every number doubles.
    ref, impl = both(lambda S, st: S(path, stream=st))
    assert ref.add(ref) is ref and impl.add(impl) is impl
    assert_same_attributes(ref, impl, "after s.add(s)")
    ref.strip_dirs().add(ref).sort_stats("time").print_stats(20)
    impl.strip_dirs().add(impl).sort_stats("time").print_stats(20)
    assert_same_attributes(ref, impl, "after strip_dirs, s.add(s)")
    assert impl.stream.getvalue() == ref.stream.getvalue()


def test_files_and_constructor_add_order(profile_files):
    """Stats(a, b, c) loads a, then adds c, then b (add() walks its arguments reversed):
    files, dict order and float sums follow that order."""
    a, b, c = (profile_files[n] for n in ("cprofile_tick", "cprofile_realtime", "merged"))

    def label(path):
        return time.ctime(os.stat(path).st_mtime) + "    " + path

    for build, order in ((lambda S, st: S(a, b, c, stream=st), (a, c, b)),
                         (lambda S, st: S(a, stream=st).add(b, c), (a, c, b)),
                         (lambda S, st: S(stream=st).add(a, b, c), (c, b, a))):
        ref, impl = both(build)
        assert_same_attributes(ref, impl)
        assert impl.files == [label(p) for p in order]


def test_merging_profile_and_cprofile_formats_fails_alike(profile_files):
    p, c = profile_files["profile_int"], profile_files["cprofile_tick"]
    for args in ((p, c), (c, p)):
        with pytest.raises(Exception) as info:
            Ref(*args, stream=io.StringIO())
        ref_type = type(info.value)
        with pytest.raises(ref_type) as info:
            Impl(*args, stream=io.StringIO())
        assert type(info.value) is ref_type
        with pytest.raises(ref_type) as info:
            Impl(args[0], stream=io.StringIO()).add(args[1])
        assert type(info.value) is ref_type


@pytest.mark.parametrize("name", ["cprofile_tick", "profile_int", "synthetic"])
def test_mutating_stats_is_honoured(profile_files, name):
    path = profile_files[name]
    ref, impl = both(lambda S, st: S(path, stream=st))
    victim = list(ref.stats)[3]
    changed = list(ref.stats)[5]

    def mutate(s):
        del s.stats[victim]
        cc, nc, tt, ct, callers = s.stats[changed]
        s.stats[changed] = (cc + 5, nc + 7, tt * 3 + 1, ct + 2, callers)
        s.stats[("new.py", 1, "added_by_hand")] = (1, 2, 0.5, 0.75, {changed: (2, 1, 0.5, 0.75)}
                                                   if name != "profile_int" else {changed: 2})

    # The totals stay those of the load, the rows are the dict's. With profile's int callers,
    # print_callers looks the callers up in .stats: the deleted one fails there.
    outcomes = assert_same_run(ref, impl, [
        mutate,
        lambda s: s.print_stats(),
        lambda s: s.sort_stats("stdname").print_stats(12),
        lambda s: s.print_callees(12),
        lambda s: s.print_callers(12),
        lambda s: s.print_callers(),
    ], "after mutating stats")
    assert outcomes[:4] == ["ok"] * 4
    assert_same_attributes(ref, impl, "after mutating stats")

    # A new dict assigned to .stats is the one printed.
    def replace(s):
        s.stats = dict(list(s.stats.items())[:10])
        s.fcn_list = None

    assert_same_run(ref, impl, [replace, lambda s: s.print_stats(), lambda s: s.print_callers(),
                                lambda s: s.sort_stats("name").print_callees()])

    # Deleting a row after sort_stats: the sorted list still names it, print_stats fails.
    ref, impl = both(lambda S, st: S(path, stream=st).sort_stats("time"))
    first = ref.fcn_list[0]

    def delete(s):
        del s.stats[first]

    assert assert_same_run(ref, impl, [delete, lambda s: s.print_stats(),
                                       lambda s: s.print_stats(3)])[1] is KeyError


def test_all_callees_is_cached_until_strip_dirs(profile_files):
    """calc_callees() keeps its first result: add() and changes to .stats do not refresh it;
    strip_dirs() does (it resets all_callees)."""
    a, b = profile_files["cprofile_tick"], profile_files["cprofile_realtime"]
    ref, impl = both(lambda S, st: S(a, stream=st))
    for s in (ref, impl):
        s.print_callees("fib")
        s.add(b)
        s.print_callees("fib")
        del s.stats[next(iter(s.stats))]
        s.print_callees(".")
        s.strip_dirs().print_callees("fib")
    assert impl.all_callees == ref.all_callees
    assert impl.stream.getvalue() == ref.stream.getvalue()


@pytest.mark.parametrize("name", ["cprofile_tick", "profile_int", "merged", "synthetic"])
def test_dump_stats_round_trip(profile_files, name, tmp_path):
    path = profile_files[name]
    ref, impl = both(lambda S, st: S(path, *partners(profile_files, name), stream=st))
    for step in (lambda s: s, lambda s: s.strip_dirs(), lambda s: s.sort_stats("time")):
        step(ref)
        step(impl)
        out = tmp_path / "impl.prof"
        assert impl.dump_stats(str(out)) is None
        assert_same_rows(ref.stats, Ref(str(out)).stats, " (dumped, read by pstats)")
        with open(out, "rb") as f:
            assert_same_rows(ref.stats, marshal.load(f), " (dumped, read by marshal)")
        out.unlink()
        impl.dump_stats(out)  # pstats opens whatever open() takes: a Path works too
        assert_same_rows(ref.stats, Ref(str(out)).stats, " (dumped to a Path)")
        out.unlink()
    ref.dump_stats(str(tmp_path / "ref.prof"))
    assert_same_rows(ref.stats, Impl(str(tmp_path / "ref.prof")).stats, " (pstats' dump)")


def test_load_stats_and_get_top_level_stats_directly(profile_files):
    """load_stats() replaces the dict and the file list but does not total (totals stay 0 and
    print as such); get_top_level_stats() adds the totals again each time it is called."""
    a, b = profile_files["cprofile_tick"], profile_files["synthetic"]
    ref, impl = both(lambda S, st: S(stream=st))
    for s in (ref, impl):
        assert s.load_stats(a) is None
    assert_same_attributes(ref, impl, "after Stats().load_stats(file)")
    assert_same_run(ref, impl, [
        lambda s: s.sort_stats("calls").print_stats(6),
        lambda s: s.get_top_level_stats(),
        lambda s: s.get_top_level_stats(),
        lambda s: s.print_stats(3),
        # load_stats leaves fcn_list alone: the old sorted list is printed against the new
        # dict (a KeyError); reverse_order and print_callers likewise.
        lambda s: s.load_stats(b),
        lambda s: s.print_stats(4),
        lambda s: s.reverse_order().print_callers(4),
        lambda s: s.sort_stats("time").print_stats(4),
        lambda s: s.load_stats(None),
        lambda s: s.print_stats(),
        lambda s: s.sort_stats().print_callees(),
    ])
    assert ref.get_top_level_stats() is None and impl.get_top_level_stats() is None
    assert impl.load_stats(None) is None
    assert_same_attributes(ref, impl, "after load_stats/get_top_level_stats")
    with pytest.raises(TypeError):
        Ref().load_stats(42)
    with pytest.raises(TypeError):
        Impl().load_stats(42)


def test_stream_defaults_to_stdout_at_construction(profile_files):
    path = profile_files["cprofile_tick"]
    outputs = []
    for S in (Ref, Impl):
        buf, later = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf):
            s = S(path)
            assert s.stream is buf
        s.sort_stats("name").print_stats(4)  # still into buf: the stream was taken at init
        s.stream = later
        s.print_callers(3)
        outputs.append((buf.getvalue(), later.getvalue()))
    assert outputs[1] == outputs[0]

    class FalsyStream(io.StringIO):
        def __bool__(self):
            return False

    # `stream or sys.stdout`: a stream that is false goes unused.
    for S in (Ref, Impl):
        buf, falsy = io.StringIO(), FalsyStream()
        with contextlib.redirect_stdout(buf):
            s = S(path, stream=falsy)
        assert s.stream is buf


def test_stream_set_to_none_prints_as_print_does(profile_files):
    """Reports print with print(file=stream): None means the sys.stdout of the moment, and
    nothing at all (no error) when that is None too."""
    path = profile_files["cprofile_tick"]
    outputs = []
    for S in (Ref, Impl):
        s = S(path, stream=io.StringIO())
        s.stream = None
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            s.sort_stats("cumulative").print_stats(5).print_callers(3).print_callees(3)
            s.print_line(s.fcn_list[0])
        with contextlib.redirect_stdout(None):
            s.print_stats(5).print_callers(3).print_callees(3)
        outputs.append(buf.getvalue())
    assert outputs[1] == outputs[0] and "function calls" in outputs[0]


def test_failed_sort_leaves_a_partial_sort_type(profile_files):
    """A KeyError on the second key leaves sort_type naming the first one while fcn_list keeps
    the previous order: the report then claims an order it is not in."""
    path = profile_files["cprofile_tick"]
    ref, impl = both(lambda S, st: S(path, stream=st).sort_stats("calls"))
    for s in (ref, impl):
        for bad in (("time", "bogus"), ("name", 3), (7,)):
            with pytest.raises((KeyError, TypeError)):
                s.sort_stats(*bad)
        s.print_stats(5)
    assert_same_attributes(ref, impl)
    assert impl.stream.getvalue() == ref.stream.getvalue()


def _profiler_run(module, work):
    prof = module.Profile(Tick())
    prof.runcall(work)
    return prof


@pytest.mark.parametrize("profiler", ["cProfile", "rprofile", "profile"])
def test_stats_from_profile_objects(profile_files, profiler):
    module = {"cProfile": cProfile, "rprofile": rprofile, "profile": pyprofile}[profiler]
    work = profile_files["_work"]
    p_ref, p_impl = _profiler_run(module, work), _profiler_run(module, work)
    ref = Ref(p_ref, stream=io.StringIO())
    impl = Impl(p_impl, stream=io.StringIO())
    assert p_impl.stats == {} and p_ref.stats == {}
    assert_same_attributes(ref, impl)
    for s in (ref, impl):
        s.strip_dirs().sort_stats("cumulative").print_stats().print_callers().print_callees()
    assert impl.stream.getvalue() == ref.stream.getvalue()
    # A profiler as a later argument, and one that recorded nothing.
    if profiler != "profile":
        q_ref, q_impl = _profiler_run(module, work), _profiler_run(module, work)
        ref = Ref(profile_files["cprofile_tick"], q_ref, stream=io.StringIO())
        impl = Impl(profile_files["cprofile_tick"], q_impl, stream=io.StringIO())
        assert_same_attributes(ref, impl, "Stats(file, profiler)")
    # A profiler that never ran: cProfile's has no rows (TypeError), profile's has its own.
    results = []
    for S in (Ref, Impl):
        stream = io.StringIO()
        kind, _ = outcome_of(lambda: S(module.Profile(), stream=stream).print_stats())
        results.append((kind, stream.getvalue()))
    assert results[1] == results[0]


def test_print_call_subheading_of_a_subclass(profile_files):
    """3.15's print_call_heading prints the callers' sub-header through print_call_subheading,
    which a subclass may override; before 3.15 there is no such method."""
    if not hasattr(Ref, "print_call_subheading"):
        assert not hasattr(Impl, "print_call_subheading")
        return

    class Own:
        def print_call_subheading(self, name_size):
            print("subheading of width", name_size, file=self.stream)

    outputs = []
    for base in (Ref, Impl):
        s = type("Sub", (Own, base), {})(profile_files["cprofile_tick"], stream=io.StringIO())
        s.sort_stats("stdname").print_callers().print_callees()
        outputs.append(s.stream.getvalue())
    assert outputs[1] == outputs[0]
    assert outputs[0].count("subheading of width") == 2


def test_duck_typed_profiler_object():
    """Anything with create_stats() and a stats attribute is read as a profiler."""

    class Fake:
        def __init__(self, stats):
            self.payload = stats
            self.calls = 0

        def create_stats(self):
            self.calls += 1
            self.stats = self.payload

    good = {("f.py", 1, "f"): (1, 1, 0.5, 0.5, {}),
            ("g.py", 2, "g"): (2, 2, 0.25, 0.75, {("f.py", 1, "f"): (2, 2, 0.25, 0.75)})}
    fakes = [Fake(dict(good)), Fake(dict(good))]
    ref, impl = Ref(fakes[0], stream=io.StringIO()), Impl(fakes[1], stream=io.StringIO())
    assert [f.calls for f in fakes] == [1, 1] and fakes[1].stats == {}
    assert_same_attributes(ref, impl)
    outcomes = []
    for S in (Ref, Impl):
        stream = io.StringIO()
        try:
            S(Fake({1: 2}), stream=stream)
            outcomes.append(("ok", stream.getvalue()))
        except Exception as exc:
            outcomes.append((type(exc), stream.getvalue()))
    assert outcomes[0][0] is not None and outcomes[1] == outcomes[0]


def test_extensions_pathlike_and_stats_arguments(profile_files):
    """rprofile's two extensions, which pstats refuses with TypeError: they give what pstats
    gives for the str path, and for Stats().add(the Stats)."""
    a, b = profile_files["cprofile_tick"], profile_files["cprofile_realtime"]
    with pytest.raises(TypeError):
        Ref(pathlib.Path(a))
    with pytest.raises(TypeError):
        Ref(Ref(a))
    ref = Ref(a, b, stream=io.StringIO())
    for impl in (Impl(pathlib.Path(a), pathlib.Path(b), stream=io.StringIO()),
                 Impl(pathlib.Path(a), stream=io.StringIO()).add(pathlib.Path(b))):
        assert_same_attributes(ref, impl, "PathLike")
    ref = Ref(stream=io.StringIO()).add(Ref(a, b))
    for impl in (Impl(Impl(a, b), stream=io.StringIO()), Impl(Ref(a, b), stream=io.StringIO()),
                 Impl(stream=io.StringIO()).add(Ref(a, b))):
        assert_same_attributes(ref, impl, "Stats argument")
    # The argument Stats is not changed by being read.
    inner = Impl(a)
    before = rows(inner.stats)
    Impl(inner).strip_dirs().add(inner)
    assert rows(inner.stats) == before


def test_several_top_level_functions(tmp_path):
    """top_level is a set, printed in its iteration order: compare that block as a multiset and
    the rest exactly."""
    stats = synthetic_stats(n=300, seed=7)
    for key in list(stats)[10:200:17]:
        stats[key][4][TOP_LEVEL_CALLER] = (1, 1, 0.0, 0.0)
    path = str(tmp_path / "tops.prof")
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    texts = []
    for S in (Ref, Impl):
        s = S(path, stream=io.StringIO())
        tops = set(s.top_level)
        s.print_stats(5)
        s.strip_dirs().sort_stats("name").print_stats(5)
        texts.append((s.stream.getvalue(), tops, set(s.top_level)))
    (e_text, e_tops, e_tops2), (a_text, a_tops, a_tops2) = texts
    assert (a_tops, a_tops2) == (e_tops, e_tops2) and len(e_tops) > 5

    def split(text):
        lines = text.splitlines()
        header = [ln for ln in lines if ln.startswith(" " * 9) and "function calls" not in ln
                  and not ln.strip()[:1].isdigit()]
        rest = [ln for ln in lines if ln not in header]
        return Counter(header), rest

    assert split(a_text) == split(e_text)


@pytest.mark.parametrize("int_callers", [False, True])
def test_reports_longer_than_a_write(tmp_path, int_callers):
    """A hub with thousands of callers and callees makes one function's block of a report
    several hundred KiB, which rprofile hands to the stream in pieces mid-block. The text is
    pstats', and a caller missing from the stats near the end of the block (possible with the
    profile module's int callers) stops both at the same line, with the same KeyError."""
    hub = ("/srv/app/hub.py", 10, "hub")
    stats = {hub: (4000, 4000, 1.5, 9.25, {})}
    for i in range(4000):
        key = ("/srv/app/mod%d.py" % (i % 97), 1000 - i, "caller_%d" % i)
        stats[key] = (1, 1, i / 7.0, i / 3.0, {})
        stats[hub][4][key] = 1 if int_callers else (1, 1, i / 11.0, i / 13.0)
        stats[("/srv/app/leaf.py", i + 1, "leaf_%d" % i)] = (
            1, 1, 0.5, 0.5, {hub: 1 if int_callers else (1, 1, 0.5, 0.5)})
    path = str(tmp_path / "hub.prof")
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    ref, impl = both(lambda S, st: S(path, stream=st))
    ops = [lambda s: s.print_callers(r"\(hub\)"), lambda s: s.print_callees(r"\(hub\)")]
    if int_callers:
        gone = [k for k in stats if k[2].startswith("caller_")][-5]
        ops += [lambda s: s.stats.pop(gone), lambda s: s.print_callers(r"\(hub\)")]
    outcomes = assert_same_run(ref, impl, ops, "hub")
    assert outcomes[-1] is (KeyError if int_callers else "ok")
    assert len(impl.stream.getvalue()) > 400_000


def test_undecodable_and_unusual_names(tmp_path):
    """Names a file system can give: surrogate-escaped bytes, astral characters, empty strings;
    widths are counted in code points."""
    stats = {
        ("/x/bad\udcffname.py", 1, "f\udce9"): (1, 1, 0.5, 0.5, {}),
        ("/y/bad\udcffname.py", 1, "f\udce9"): (2, 3, 0.25, 1.5, {
            ("/x/bad\udcffname.py", 1, "f\udce9"): (3, 2, 0.25, 1.5)}),
        ("/z/\U0001f40d.py", 10 ** 6, "\U0001f40d" * 40): (1, 1, 0.0, 0.0, {
            ("/y/bad\udcffname.py", 1, "f\udce9"): (1, 1, 0.0, 0.0)}),
        ("", 0, ""): (0, 0, 0, 0, {}),
        ("~", 0, "<\udcff>"): (1, 1, 1e-3, 1e-3, {("", 0, ""): (1, 1, 1e-3, 1e-3)}),
    }
    path = str(tmp_path / "odd.prof")
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    ref, impl = both(lambda S, st: S(path, stream=st))
    assert_same_attributes(ref, impl)
    for s in (ref, impl):
        s.print_stats().print_callers().print_callees()
        s.strip_dirs().sort_stats("stdname").print_stats("\udcff").print_callers().print_callees()
    assert_same_attributes(ref, impl, "after strip_dirs")
    assert impl.stream.getvalue() == ref.stream.getvalue()


# ---------------------------------------------------------------------------------------------
# 4. Exceptions
# ---------------------------------------------------------------------------------------------

BAD_SORTS = [("bogus",), (5,), ("time", SortKey.NAME), (SortKey.NAME, "time"), (1, 2), ("cum",),
             ("c",), ("n",), ("t",), ("",), (-2,), (1.0,), (None,), ("time", 1), (b"time",),
             ([],), ("TIME",), ("time", "bogus"), ("time", MyStr("name")), (0, "calls")]


@pytest.mark.parametrize("spec", BAD_SORTS, ids=repr)
def test_bad_sort_keys(profile_files, spec):
    ref, impl = both(lambda S, st: S(profile_files["cprofile_tick"], stream=st))
    with pytest.raises(Exception) as info:
        ref.sort_stats(*spec)
    ref_type = type(info.value)
    with pytest.raises(ref_type) as info:
        impl.sort_stats(*spec)
    assert type(info.value) is ref_type
    assert_same_attributes(ref, impl, "after the failed sort_stats")


def test_empty_stats_object():
    ref, impl = both(lambda S, st: S(stream=st))
    assert_same_attributes(ref, impl)
    for s in (ref, impl):
        s.print_stats().print_callers().print_callees().sort_stats("time").reverse_order()
        s.print_stats(5).strip_dirs().print_stats("x")
        s.add().add(S_empty(s))
    assert_same_attributes(ref, impl, "after reports on an empty Stats")
    assert impl.stream.getvalue() == ref.stream.getvalue()


def S_empty(s):
    return type(s)()


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


_rng = random.Random(99)
RANDOM_BLOBS = [bytes(_rng.randrange(256) for _ in range(size)) for size in (1, 7, 64, 500, 3, 40)]

# Payloads that marshal loads but that are not a stats dict (or only nearly one).
BAD_PAYLOADS = {
    "marshal {}": {},
    "marshal 0": 0,
    "marshal None": None,
    "marshal []": [],
    "marshal [1, 2]": [1, 2],
    "marshal 'abc'": "abc",
    "marshal set": {("a", 1, "f")},
    "marshal 5-tuple": (1, 1, 1.0, 1.0, {}),
    "value is a 3-tuple": {("a.py", 1, "f"): (1, 2, 3)},
    "value is a 6-tuple": {("a.py", 1, "f"): (1, 1, 1.0, 1.0, {}, 0)},
    "value is an int": {("a.py", 1, "f"): 5},
    "value is a list": {("a.py", 1, "f"): [1, 1, 1.0, 1.0, {}]},
    "key is an int": {1: (1, 1, 1.0, 1.0, {})},
    "key is a 2-tuple": {("a.py", 1): (1, 1, 1.0, 1.0, {})},
    "key line is a str": {("a.py", "x", "f"): (1, 1, 1.0, 1.0, {})},
    "key line is a float": {("a.py", 1.5, "f"): (1, 1, 1.0, 1.0, {})},
    "key name is an int": {("a.py", 1, 7): (1, 1, 1.0, 1.0, {})},
    "count is a str": {("a.py", 1, "f"): ("1", "1", 1.0, 1.0, {})},
    "time is a str": {("a.py", 1, "f"): (1, 1, "1.0", 1.0, {})},
    "callers is a list": {("a.py", 1, "f"): (1, 1, 1.0, 1.0, [("b.py", 2, "g")])},
    "callers is None": {("a.py", 1, "f"): (1, 1, 1.0, 1.0, None)},
    "caller value is a 3-tuple": {
        ("a.py", 1, "f"): (1, 1, 1.0, 1.0, {("b.py", 2, "g"): (1, 1, 1.0)})},
    "caller key is a str": {("a.py", 1, "f"): (1, 1, 1.0, 1.0, {"g": (1, 1, 1.0, 1.0)})},
    "mixed caller formats": {("a.py", 1, "f"): (1, 1, 1.0, 1.0, {("b.py", 2, "g"): 1}),
                             ("b.py", 2, "g"): (1, 1, 1.0, 1.0,
                                                {("c.py", 3, "h"): (1, 1, 1.0, 1.0)})},
    "int callers naming a missing row": {("a.py", 1, "f"): (1, 1, 1, 1, {("x.py", 9, "x"): 1})},
    "bool and huge numbers": {("a.py", 1, "f"): (True, 2 ** 70, 2 ** 60, 1e300, {})},
    "nan and inf times": {("a.py", 1, "f"): (1, 1, math.nan, math.inf, {})},
}


def _holding_itself(container, put):
    """`container` after `put(container)` puts it inside itself: marshal writes it with a
    reference back to the container still being written."""
    put(container)
    return container


# Self-containing data, as marshal.dump writes it and marshal.load builds it.
BAD_PAYLOADS.update({
    "self-containing list": _holding_itself([], lambda l: l.append(l)),
    "self-containing dict": _holding_itself({}, lambda d: d.__setitem__(("a.py", 1, "f"), d)),
    "callers is a self-containing list": {
        ("a.py", 1, "f"): (1, 1, 1.0, 1.0, _holding_itself([1], lambda l: l.append(l)))},
    "count is a self-containing list": {
        ("a.py", 1, "f"): (_holding_itself([], lambda l: l.append(l)), 1, 1.0, 1.0, {})},
    "callers dict holds itself": {
        ("a.py", 1, "f"): (1, 1, 1.0, 1.0, _holding_itself(
            {}, lambda d: d.__setitem__(("b.py", 2, "g"), d))),
        ("b.py", 2, "g"): (1, 1, 0.5, 0.5, {})},
})


def bad_input(label, tmp_path, good_file):
    """The path of the bad input called `label`, written into tmp_path."""
    if label == "empty file":
        return _write(tmp_path / "empty.prof", b"")
    if label.startswith("truncated"):
        with open(good_file, "rb") as f:
            good = f.read()
        return _write(tmp_path / "trunc.prof", good[:1] if label.endswith("byte") else
                      good[: len(good) // 2])
    if label == "directory":
        return str(tmp_path)
    if label == "missing path":
        return str(tmp_path / "does-not-exist.prof")
    if label.startswith("random bytes"):
        return _write(tmp_path / "random.prof", RANDOM_BLOBS[int(label.split()[-1])])
    return _write(tmp_path / "payload.prof", marshal.dumps(BAD_PAYLOADS[label]))


BAD_INPUT_LABELS = (
    ["empty file", "truncated file", "truncated after one byte", "directory", "missing path"]
    + ["random bytes %d" % i for i in range(len(RANDOM_BLOBS))]
    + list(BAD_PAYLOADS)
)


@pytest.mark.parametrize("label", BAD_INPUT_LABELS)
def test_bad_files(tmp_path, profile_files, label):
    path = bad_input(label, tmp_path, profile_files["cprofile_tick"])
    results = {}
    for side, S in ((REF, Ref), (IMPL, Impl)):
        stream, stdout = io.StringIO(), io.StringIO()
        holder = {}
        with contextlib.redirect_stdout(stdout):
            kind, exc = outcome_of(lambda: holder.setdefault("s", S(path, stream=stream)))
        results[side] = (kind, exc, stream.getvalue(), stdout.getvalue(), holder.get("s"))
    e_kind, e_exc, e_text, e_out, ref = results[REF]
    a_kind, a_exc, a_text, a_out, impl = results[IMPL]
    if e_kind == "ok":
        assert a_kind == "ok", "pstats loads %s, %s raises %r" % (label, IMPL_NAME, a_exc)
    else:
        with pytest.raises(e_kind):
            if a_exc is not None:
                raise a_exc
        assert a_kind is e_kind, "pstats raises %r, %s raises %r" % (e_exc, IMPL_NAME, a_exc)
    invalid = "Invalid timing data"
    assert (invalid in a_text) == (invalid in e_text), (e_text, a_text)
    if invalid in e_text:
        assert path in a_text
    assert a_out == e_out == ""
    if e_kind != "ok":
        # The same file added to a good Stats: the nested load prints to sys.stdout.
        good = profile_files["cprofile_tick"]
        for side, S in ((REF, Ref), (IMPL, Impl)):
            stream, stdout = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout):
                kind, exc = outcome_of(lambda: S(good, stream=stream).add(path))
                kind2, _ = outcome_of(lambda: S(good, path, stream=stream))
            results[side] = (kind, kind2, invalid in stream.getvalue(),
                             invalid in stdout.getvalue())
        assert results[IMPL] == results[REF]
        return
    # Loaded: the reports must do the same (print the same, or fail alike).
    reports = [(m, r) for m in METHODS for r in ((), (".",), (1,))]
    outcomes = []
    for s in (ref, impl):
        s.stream.seek(0)
        s.stream.truncate(0)
        got = []
        for method, restriction in reports:
            kind, exc = outcome_of(lambda: getattr(s, method)(*restriction))
            got.append((method, restriction, kind))
        for op in (lambda: s.strip_dirs(), lambda: s.sort_stats("time"),
                   lambda: s.sort_stats("nfl"), lambda: s.print_stats(),
                   lambda: s.get_stats_profile(), lambda: s.add(s)):
            got.append(outcome_of(op)[0])
        outcomes.append((got, s.stream.getvalue()))
    assert outcomes[1][0] == outcomes[0][0]
    assert outcomes[1][1] == outcomes[0][1], first_difference(outcomes[0][1], outcomes[1][1])


@pytest.mark.parametrize("arg", [42, b"/tmp/x.prof", None, 1.5, object(), ["a.prof"]],
                         ids=["int", "bytes", "None", "float", "object", "list"])
def test_bad_argument_types(profile_files, arg):
    good = profile_files["cprofile_tick"]
    for args in ((arg,), (good, arg)):
        results = []
        for S in (Ref, Impl):
            stream = io.StringIO()
            kind, exc = outcome_of(lambda: S(*args, stream=stream))
            results.append((kind, stream.getvalue()))
        assert results[1] == results[0], args
