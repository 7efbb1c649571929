"""Restriction patterns and number formatting of rprofile.Stats against pstats.

pstats keeps the functions whose ``func_std_string`` ``re.search`` finds the pattern in.
rprofile hands a pattern to the Rust ``regex`` crate when every construct in it means the same
there, and to Python's ``re`` otherwise; these tests run many patterns over many names through
both Stats classes and compare the printed selections, and check that a good share of the
patterns really went to the Rust engine (so the comparison is not only of ``re`` with itself).
"""

import io
import marshal
import random

import pstats
import pytest

import rprofile
from rprofile import _rprofile

NAMES = [
    ("/usr/lib/python3/json/decoder.py", 343, "decode"),
    ("/usr/lib/python3/json/decoder.py", 361, "raw_decode"),
    ("/home/me/app/models.py", 12, "__init__"),
    ("/home/me/app/models.py", 40, "<lambda>"),
    ("/home/me/app/models.py", 41, "<listcomp>"),
    ("/home/me/app/views.py", 7, "index"),
    ("/home/me/app/views.py", 1007, "Index_2"),
    ("~", 0, "<built-in method builtins.len>"),
    ("~", 0, "<method 'append' of 'list' objects>"),
    ("~", 0, "<built-in method _abc._abc_instancecheck>"),
    ("~", 0, "plain_builtin"),
    ("/tmp/Übung/straße.py", 3, "grüß"),
    ("/tmp/数据/模块.py", 5, "函数"),
    ("/tmp/with space/x y.py", 9, "f g"),
    ("/tmp/tab\there.py", 1, "t"),
    ("/tmp/new\nline.py", 2, "n\n"),
    ("/tmp/\x1cfs.py", 4, "sep\x1c"),
    ("/tmp/a{b}[c](d).py", 5, "weird$name^"),
    ("/tmp/surrogate_\udcff.py", 6, "s\udcfe"),
    ("C:\\Users\\x\\win.py", 8, "w"),
    ("/tmp/digits١٢٣.py", 9, "arabic_٤"),
    ("/tmp/dash-and_under.py", 10, "a-b"),
    ("/tmp/&~#.py", 11, "amp&tilde~hash#"),
    ("/tmp/x_y.py", 1, "g^h[i"),
]

PATTERNS = [
    "", ".", "decode", "^/usr", "py$", r"\.py:", r"\d+", r"\d{2,}", r"\w+\(", r"\s", r"\S+$",
    r"\bdecode\b", r"\Bdecode", "{built-in", "{method", r"\{built", "}", "{", "a{2}", "a{,2}",
    "a{2,}", "x{1,3}?", "[abc]", "[^abc]", "[a-z]+", "[A-Z]", "[0-9]", "[-a]", "[a-]", "[.]",
    "[$]", "[\\]]", "[]a]", "[[a]", "[a&&b]", "[a--b]", "[a~~b]", "[&]", "[~]", "(?:json|app)",
    "(json|app)/", "(?i)DECODE", "(?<=json/)dec", "(?=dec)", "(?!x)", r"(\w)\1", "(?P<n>a)",
    "(?#comment)x", r"\A/tmp", r"\Z", r"\<lambda>", r"\>", r"\x41", r"\u00fc", r"\N{DIGIT ONE}",
    r"\t", r"\n", "\n", r"$", "e$", "^~", "~", "#", "&", "-", " ", "f g", r"\ ", r"\#", r"\-",
    r"\&", r"\~", "Ü", "ß", "straße", "数据", "١", r"\d$", "٤", "[١-٣]", "(a|b)*c", "a*?b",
    "a+?", "a??", "a*+", "a++", "(?>a)", r"\\", "\\\\win", "a.c", ".*", ".+", "^.*$", "^$",
    "(", "[", "*", "a**", r"\p{L}", "models.py:4[01]", r"models\.py:4\d\(", "<listcomp>",
    "<.*>", "[<>]", "len>", "sep\x1c", r"\x1c", "weird\\$", "name\\^$", "^/tmp/a\\{b",
    "s\udcfe", "surrogate_", ")", "a{1", "a{1,2", "a{b}", "{}", "{,}", "x{0}", "[\\d]", "[\\w-]",
    "[\\s]", "[\\b]", "[a\\-z]", "[z-a]", "(?s:.)", "(?m)^/", "(?x) d e c o d e",
    # Ranges starting at a '^' or '[' that is not the class opener.
    "[\\^-a]", "[a^-c]", "[[-a]", "[\\[-a]", "x[^^-a]y", "[-^]", "[^-a]",
]


def _random_patterns(n, seed):
    rng = random.Random(seed)
    atoms = ["a", "e", "d", "o", "py", r"\.", ".", r"\d", r"\w", r"\s", "[a-e]", "[^/]", "/",
             ":", r"\(", "<", ">", "{", "}", "Ü", "_", "-", "~", "0", "1"]
    quants = ["", "", "", "*", "+", "?", "{1,2}", "{2}", "*?"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 5)):
            atom = rng.choice(atoms)
            if rng.random() < 0.2:
                atom = "(" + atom + "|" + rng.choice(atoms) + ")"
            parts.append(atom + rng.choice(quants))
        p = "".join(parts)
        if rng.random() < 0.2:
            p = "^" + p
        if rng.random() < 0.2:
            p += "$"
        out.append(p)
    return out


ALL_PATTERNS = PATTERNS + _random_patterns(300, seed=4)

# Some patterns draw FutureWarnings ("possible nested set") from re itself, on both sides.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def names_file(tmp_path_factory):
    stats = {}
    for i, key in enumerate(NAMES):
        stats[key] = (i + 1, i + 2, 0.5 * i, 1.25 * i, {NAMES[(i + 1) % len(NAMES)]:
                                                       (1, 1, 0.1, 0.2)})
    path = tmp_path_factory.mktemp("names") / "names.prof"
    with open(path, "wb") as f:
        marshal.dump(stats, f)
    return str(path)


def _report(stats_class, path, pattern):
    out = io.StringIO()
    stats_class(path, stream=out).sort_stats("line").print_stats(pattern)
    return out.getvalue()


def test_patterns_select_what_re_search_selects(names_file):
    mismatches = []
    for pattern in ALL_PATTERNS:
        expected = _report(pstats.Stats, names_file, pattern)
        got = _report(rprofile.Stats, names_file, pattern)
        if got != expected:
            mismatches.append(pattern)
    assert not mismatches, "patterns selecting differently from pstats: %r" % mismatches


def test_most_patterns_run_on_the_rust_engine():
    translated = [p for p in ALL_PATTERNS if _rprofile._testing._regex_translate(p) is not None]
    assert len(translated) > len(ALL_PATTERNS) // 2, translated
    # Constructs whose meaning differs between the engines are never handed to Rust.
    for p in [r"(\w)\1", "(?i)DECODE", "(?<=json/)dec", r"\Z", "[]a]", "[a--b]", "a*+"]:
        assert _rprofile._testing._regex_translate(p) is None, p


@pytest.mark.parametrize("x", [0.0, -0.0, 0.0005, 0.0015, 0.0025, 0.0625, 1.0005, 2.5e-4,
                               123456.7895, 1e300, -1e-300, 5e-324, float("inf"),
                               float("-inf"), float("nan"), 1 / 3, 2 / 3, 0.1 + 0.2, 12345678.9])
def test_f8_is_pythons_format(x):
    assert _rprofile._testing._f8(x) == "%8.3f" % x


def test_f8_random_values():
    rng = random.Random(8)
    for _ in range(20000):
        x = rng.choice([rng.random() * 10 ** rng.randint(-8, 12),
                        rng.randint(0, 10 ** 6) / 8000, -rng.random()])
        assert _rprofile._testing._f8(x) == "%8.3f" % x, x
