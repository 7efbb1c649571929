"""Reading profiles: rprofile.Stats against pstats.Stats, run by hand, never a pass/fail test.

    python bench/stats_bench.py [--rounds 5] [--only load,sort,print,...] [--impl pstats,rprofile]
                                [--scale 1.0]

Inputs, made once into bench/.build/stats/ (each in its own process) and reused:

- a synthetic profile of 100,000 functions and 1,000,000 caller edges (times --scale) in
  cProfile's marshal format: a few thousand files in nested package directories (stdlib,
  site-packages and application roots, an __init__.py in each directory, so strip_dirs() has
  collisions to merge), several functions per file, builtins ('~', 0, '<built-in method ...>'),
  a heavy-tailed number of callers per function, and recursive functions (nc != cc). Seeded, so
  the same scale gives the same file;
- 20 real profiles written by rprofile.Profile().dump_stats, one per stdlib workload (json, re,
  email, difflib, _pydecimal, ast, pickle, minidom, argparse, pydoc, ...), each profiled from a
  fresh interpreter with its imports, so that the files share importlib's functions and differ
  in the rest (one folder per Python version).

Operations, each measured in a fresh process that times only the operation (perf_counter around
it), implementations interleaved round by round (the order rotates):

- load: the constructor on the synthetic profile;
- sort_cumulative, sort_name_file_line: sort_stats('cumulative') and sort_stats('name', 'file',
  'line') on a loaded profile (load not timed);
- print_stats, print_callers, print_callees: the call with 50 (into an io.StringIO stream) after
  sort_stats('cumulative') (neither load nor sort timed); print_callees includes building the
  callee map, as the first call does in pstats;
- strip_dirs: strip_dirs() on a loaded profile;
- add: the constructor with the 20 real profiles (the first loaded, 19 added);
- e2e: Stats(file).sort_stats('cumulative').print_stats(50), all timed;
- memory, read in the e2e processes: their peak RSS (getrusage ru_maxrss) after the load and
  after sort+print, less the peak after the imports; and the RSS after the load (VmRSS, less the
  same after the imports).

Printed: median (min-max) milliseconds per implementation and the speed-up pstats/rprofile;
memory in MiB over the baseline and the ratio rprofile/pstats. Each child also digests what it
printed (the timed print, or an untimed print_stats after the other operations), and the
`output` column says whether the implementations printed the same; the texts are kept in
bench/.build/stats/py3.X/out/ for diffing.
"""

import argparse
import hashlib
import io
import json
import marshal
import os
import random
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".build", "stats")
PYDIR = os.path.join(CACHE, "py%d.%d" % sys.version_info[:2])
FORMAT = 4  # bump when the generators change, so stale inputs are not reused

IMPLS = ["pstats", "rprofile"]
OPS = ["load", "sort_cumulative", "sort_name_file_line", "print_stats", "print_callers",
       "print_callees", "strip_dirs", "add", "e2e", "memory"]
ALIASES = {"sort": ["sort_cumulative", "sort_name_file_line"],
           "print": ["print_stats", "print_callers", "print_callees"]}
PRINT_AMOUNT = 50


def synthetic_path(scale):
    return os.path.join(CACHE, "synthetic-v%d-scale%g.prof" % (FORMAT, scale))


def real_dir():
    return os.path.join(PYDIR, "real-v%d" % FORMAT)


# ---------------------------------------------------------------- the synthetic profile

VERBS = ("get set parse load dump read write make build create update handle process visit check "
         "validate format render compile resolve find match split join encode decode convert "
         "apply run call wrap emit send recv flush close open init reset register lookup fetch "
         "iter walk collect merge sort filter map reduce compute eval normalize quote escape "
         "prepare finish dispatch select scan emit_event bind patch").split()
NOUNS = ("name value node item key data header body token line path file config option arg "
         "args kwargs context state cache entry record field type attr module class func method "
         "stream buffer chunk block frame event handler request response session query result "
         "error message element tree list dict table row column index schema object url params "
         "template source target plugin hook signal task job worker pool batch").split()
COMMON = ("__init__ __repr__ __eq__ __hash__ __iter__ __len__ __getitem__ __setitem__ "
          "__contains__ __call__ __enter__ __exit__ __getattr__ __new__ __str__ __lt__ <lambda> "
          "<genexpr> <listcomp> <dictcomp> wrapper inner decorator _wrapped get copy update items "
          "keys values close run main setup _get _set").split()
PKG_WORDS = ("core util utils io net http web api db orm sql schema model models view views "
             "forms auth crypto compat parser lexer ast codegen runtime ext plugins contrib "
             "internal _impl backends storage cache tasks cli commands config logging events "
             "serializers fields widgets templates filters tests testing support vendor "
             "_vendor protocols transport async sync types typing metrics tracing").split()
TOP_PKGS = ("requests urllib3 django flask jinja2 sqlalchemy numpy pandas attr pydantic "
            "werkzeug click yaml certifi idna charset_normalizer botocore boto3 s3transfer "
            "dateutil pytz six setuptools pkg_resources packaging pip docutils pygments "
            "babel markupsafe tornado aiohttp multidict yarl celery kombu redis psycopg "
            "grpc google protobuf").split()
BUILTIN_FUNCS = ("len isinstance getattr hasattr setattr iter next min max sorted any all hash "
                 "id repr print exec compile __import__ issubclass callable vars globals locals "
                 "format divmod abs round sum map filter zip enumerate open").split()
BUILTIN_MODFUNCS = ("posix.stat posix.fspath posix.listdir posix.getcwd _io.open "
                    "time.perf_counter time.time time.monotonic marshal.loads marshal.dumps "
                    "_thread.allocate_lock _thread.get_ident math.sqrt math.floor math.log "
                    "_imp.acquire_lock _imp.release_lock _imp.is_builtin _imp.create_dynamic "
                    "_imp.exec_dynamic _json.scanstring _sre.compile _struct.unpack "
                    "_struct.pack zlib.crc32 _hashlib.openssl_sha256 _codecs.utf_8_decode "
                    "_weakref.proxy _functools.reduce _operator.getitem").split()
METHODS = ("append extend pop get join split strip startswith endswith replace encode decode "
           "items keys values update setdefault copy sort format lower upper find rfind "
           "partition rpartition read write readline seek tell close acquire release add "
           "discard remove insert index count match search sub fullmatch group groups "
           "__enter__ __exit__ __reduce_ex__ __format__ translate").split()
TYPES = ("list dict str bytes set frozenset tuple _io.TextIOWrapper _io.BufferedReader "
         "_io.StringIO _io.BytesIO _thread.lock _thread.RLock re.Pattern re.Match "
         "collections.deque collections.OrderedDict object int float bytearray").split()


def make_files(rnd, n_files):
    """Paths of n_files modules in nested package directories under a few roots."""
    roots = ["/usr/lib/python3.12", "/home/dev/project/.venv/lib/python3.12/site-packages",
             "/home/dev/project/src"]
    dirs = []  # [path, depth]
    dir_set = set()
    used_top = set()
    n_dirs = max(3, n_files // 7)
    while len(dirs) < n_dirs:
        if not dirs or rnd.random() < 0.12:
            root = rnd.choices(roots, weights=(3, 6, 1))[0]
            name = rnd.choice(TOP_PKGS) if root.endswith("site-packages") else rnd.choice(
                PKG_WORDS)
            if (root, name) in used_top:
                name = "%s%d" % (name, len(used_top))
            used_top.add((root, name))
            path, depth = "%s/%s" % (root, name), 1
        else:
            parent = rnd.choice(dirs)
            if parent[1] >= 5:
                continue
            path, depth = "%s/%s" % (parent[0], rnd.choice(PKG_WORDS)), parent[1] + 1
        if path in dir_set:
            continue
        dir_set.add(path)
        dirs.append([path, depth])
    files = ["%s/__init__.py" % d for d, _ in dirs]
    seen = set(files)
    # Module files, a few directories holding many.
    weights = [rnd.paretovariate(1.5) for _ in dirs]
    while len(files) < n_files:
        d = rnd.choices(dirs, weights=weights)[0][0]
        stem = rnd.choice(PKG_WORDS + NOUNS)
        if rnd.random() < 0.3:
            stem += "_" + rnd.choice(NOUNS)
        path = "%s/%s.py" % (d, stem)
        if path in seen:
            continue
        seen.add(path)
        files.append(path)
    files = files[:n_files]
    rnd.shuffle(files)
    return files


def func_name(rnd):
    r = rnd.random()
    if r < 0.25:
        return rnd.choice(COMMON)
    name = rnd.choice(VERBS) + "_" + rnd.choice(NOUNS)
    if r < 0.35:
        name += "_" + rnd.choice(NOUNS)
    if rnd.random() < 0.25:
        name = "_" + name
    return name


def builtin_names(rnd, count):
    names = ["<built-in method builtins.%s>" % f for f in BUILTIN_FUNCS]
    names += ["<built-in method %s>" % f for f in BUILTIN_MODFUNCS]
    combos = ["<method '%s' of '%s' objects>" % (m, t) for m in METHODS for t in TYPES]
    rnd.shuffle(combos)
    names = list(dict.fromkeys(names + combos))
    i = 0
    while len(names) < count:
        names.append("<built-in method _ext%d.%s>" % (i // 20, rnd.choice(VERBS)))
        names = list(dict.fromkeys(names))
        i += 1
    return names[:count]


def generate_synthetic(path, scale):
    rnd = random.Random(20261124)
    n_funcs = max(300, round(100_000 * scale))
    n_edges = max(3 * n_funcs, round(1_000_000 * scale))
    n_builtins = max(40, n_funcs // 150)
    n_py = n_funcs - n_builtins
    files = make_files(rnd, max(10, n_py // 30))

    # Functions per file: at least <module>, the rest spread unevenly (__init__.py files small).
    share = [rnd.lognormvariate(0, 1) * (0.2 if f.endswith("__init__.py") else 1) for f in files]
    counts = [1] * len(files)
    for i in rnd.choices(range(len(files)), weights=share, k=n_py - len(files)):
        counts[i] += 1
    keys = []  # (file, line, name); strings shared as in cProfile's dumps
    file_of = []
    for fi, (f, c) in enumerate(zip(files, counts)):
        keys.append((f, 1, "<module>"))
        file_of.append(fi)
        line = 1
        for _ in range(c - 1):
            line += rnd.randint(3, 40)
            keys.append((f, line, func_name(rnd)))
            file_of.append(fi)
    names = {}
    keys = [(f, line, names.setdefault(n, n)) for f, line, n in keys]
    keys += [("~", 0, n) for n in builtin_names(rnd, n_builtins)]
    file_of += [-1] * n_builtins
    by_file = {}
    for i, fi in enumerate(file_of):
        by_file.setdefault(fi, []).append(i)

    # Callers per function: heavy-tailed (builtins and a few utilities are called from
    # everywhere), a few roots with none, recursive functions calling themselves.
    n = len(keys)
    roots = set(rnd.sample(range(n_py), max(3, n // 20000)))
    recursive = set(i for i in range(n_py) if i not in roots and rnd.random() < 0.03)
    cap = n / 5
    weight = []
    for i in range(n):
        w = rnd.paretovariate(1.1) * (6 if i >= n_py else 1)
        weight.append(0 if i in roots else min(w, cap))
    degree = [0 if i in roots else 2 if i in recursive else 1 for i in range(n)]
    degree_total = sum(degree)
    for i in rnd.choices(range(n), weights=weight, k=n_edges - degree_total):
        degree[i] += 1
    for i in range(n):  # at most n-1 distinct callers (self only when recursive)
        limit = n - 1 if i in recursive else n - 2
        while degree[i] > limit:
            degree[i] -= 1
            j = rnd.randrange(n)
            while j in roots or degree[j] >= n - 2:
                j = rnd.randrange(n)
            degree[j] += 1

    callers_of = []
    for i in range(n):
        d = degree[i]
        chosen = set()
        if i in recursive:
            chosen.add(i)
        if d > n // 8:
            pool = rnd.sample(range(n), min(n, d + 1))
            for j in pool:
                if len(chosen) >= d:
                    break
                if j != i:
                    chosen.add(j)
        else:
            local = by_file[file_of[i]]
            while len(chosen) < d:
                j = rnd.choice(local) if rnd.random() < 0.3 else rnd.randrange(n)
                if j != i:
                    chosen.add(j)
        callers_of.append(chosen)

    # Times: per-call inline time around microseconds; cumulative a multiple of it, the
    # multiple smaller for functions called from many places (utilities rather than drivers),
    # so that the top of a sort by cumulative time mixes both.
    stats = {}
    funcs = []
    for i in range(n):
        percall = rnd.lognormvariate(-13, 1.5)
        factor = 1 + (rnd.lognormvariate(0, 2.5) * 10 / max(1, degree[i]) if i < n_py else
                      (rnd.lognormvariate(0, 2) if rnd.random() < 0.1 else 0))
        edges = []
        for j in callers_of[i]:
            if j == i:
                enc = rnd.randint(2, 500)
                ecc = rnd.randint(0, min(3, enc))
            else:
                enc = max(1, int(rnd.paretovariate(1.3)))
                ecc = enc if rnd.random() > 0.01 else rnd.randint(0, enc)
            edges.append((j, enc, ecc))
        if edges:
            nc = sum(e[1] for e in edges)
            cc = max(1, sum(e[2] for e in edges))
        else:
            nc = cc = 1
        tt = percall * nc
        ct = tt * factor
        funcs.append((i, cc, nc, tt, ct, edges))
    top = max(f[4] for f in funcs)
    order = list(range(n))
    rnd.shuffle(order)
    for i in order:
        _, cc, nc, tt, ct, edges = funcs[i]
        if i in roots:
            ct = top * rnd.uniform(1.0, 1.5)
        callers = {}
        for j, enc, ecc in edges:
            k = keys[j]
            # A new tuple per occurrence, as cProfile's create_stats makes them.
            callers[(k[0], k[1] + 0, k[2])] = (enc, ecc, tt * enc / nc, ct * enc / nc)
        k = keys[i]
        stats[(k[0], k[1] + 0, k[2])] = (cc, nc, tt, ct, callers)

    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        marshal.dump(stats, f)
    os.replace(tmp, path)
    info = {"functions": len(stats), "edges": sum(len(v[4]) for v in stats.values()),
            "files": len(files), "builtins": n_builtins, "recursive": len(recursive),
            "roots": len(roots), "max_callers": max(degree), "bytes": os.path.getsize(path)}
    with open(path + ".json", "w") as f:
        json.dump(info, f)


# ---------------------------------------------------------------- the real profiles

def _stdlib_source(name):
    with open(os.path.join(os.path.dirname(os.__file__), name), encoding="utf-8") as f:
        return f.read()


def r_json():
    import json

    doc = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i)], "score": i * 0.25,
            "nested": {"x": [i, i + 1], "ok": i % 2 == 0, "none": None}} for i in range(300)]
    for _ in range(4):
        text = json.dumps(doc, indent=2, sort_keys=True)  # the pure-Python encoder
        json.loads(text, object_hook=lambda d: d)
        json.loads(json.dumps(doc, default=str), parse_float=float)


def r_re():
    import re

    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    text = " ".join("%s%d" % (words[i % 8], i) for i in range(400))
    re.purge()
    for i in range(250):
        pat = re.compile(r"(?P<w>%s)(\d{%d,%d})\s+(?:[%s]+|\w+?)(?=\s|$)" % (
            "|".join(words[i % 5:i % 5 + 3]), i % 3 + 1, i % 3 + 4, "abc"[: i % 3 + 1]),
            re.IGNORECASE if i % 2 else 0)
        pat.findall(text)
        pat.sub(lambda m: m.group(1).upper(), text[:500])


def r_email():
    from email import policy
    from email.message import EmailMessage
    from email.parser import BytesParser

    for i in range(25):
        msg = EmailMessage()
        msg["Subject"] = "Report %d: caf\u00e9 r\u00e9sum\u00e9" % i
        msg["From"] = "Alice Example <alice@example.com>"
        msg["To"] = ", ".join("User %d <user%d@example.org>" % (j, j) for j in range(5))
        msg.set_content("Hello, this is line %d.\n" * 20 % tuple(range(20)))
        msg.add_alternative("<p>Hello <b>%d</b></p>\n" % i * 10, subtype="html")
        msg.add_attachment(bytes(range(256)) * 4, maintype="application",
                           subtype="octet-stream", filename="data%d.bin" % i)
        back = BytesParser(policy=policy.default).parsebytes(msg.as_bytes())
        for part in back.walk():
            part.get_content_type()
        back.get_body(preferencelist=("plain",)).get_content()
        [a.username for a in back["To"].addresses]


def r_difflib():
    import difflib

    a = _stdlib_source("textwrap.py").splitlines(keepends=True)
    b = [line.replace("text", "txt") if i % 7 == 0 else line for i, line in enumerate(a)
         if i % 11 != 3]
    list(difflib.unified_diff(a, b, "a.py", "b.py"))
    list(difflib.ndiff(a[:150], b[:150]))
    difflib.HtmlDiff().make_file(a[:120], b[:120])
    words = sorted(set(_stdlib_source("string.py").split()))
    for w in words[:40]:
        difflib.get_close_matches(w + "x", words)


def r_pydecimal():
    import _pydecimal as D

    D.getcontext().prec = 40
    for i in range(1, 40):
        x = D.Decimal(i) / 7
        x.sqrt()
        x.exp()
        x.ln()
        x.quantize(D.Decimal("0.0001"))
        str(x ** 3)
        x.to_eng_string()


def r_fractions_statistics():
    import statistics
    from fractions import Fraction

    data = [Fraction(i, i + 3) for i in range(1, 300)]
    statistics.mean(data)
    statistics.median(data)
    statistics.variance(data)
    floats = [float(x) * 3.5 for x in data]
    statistics.stdev(floats)
    statistics.quantiles(floats, n=10)
    statistics.NormalDist.from_samples(floats).cdf(1.0)
    statistics.harmonic_mean(floats)
    total = sum(data, Fraction(0))
    total.limit_denominator(1000)


def r_ast():
    import ast

    for name in ("textwrap.py", "calendar.py"):
        tree = ast.parse(_stdlib_source(name))
        ast.unparse(tree)
        sum(1 for _ in ast.walk(tree))
    ast.dump(ast.parse(_stdlib_source("string.py")))


def r_pickle():
    import collections
    import datetime
    import fractions
    import pickle

    data = {"ints": list(range(500)), "strs": ["s%d" % i for i in range(300)],
            "nested": [{"d": datetime.date(2024, 1 + i % 12, 1 + i % 28),
                        "f": fractions.Fraction(i, 7), "t": (i, str(i), [i] * 3),
                        "o": collections.OrderedDict(a=i)} for i in range(200)],
            "bytes": b"x" * 1000, "set": set(range(100))}
    for proto in (0, 2, 4, 5):
        for _ in range(3):
            pickle._loads(pickle._dumps(data, protocol=proto))


def r_xml():
    import xml.etree.ElementTree as ET
    from xml.dom import minidom

    doc = "<root>%s</root>" % "".join(
        '<item id="%d" kind="k%d"><name>n%d</name><val>%d</val><!-- c --></item>'
        % (i, i % 5, i, i * 3) for i in range(400))
    d = minidom.parseString(doc)
    d.toprettyxml()
    len(d.getElementsByTagName("val"))
    root = ET.fromstring(doc)
    ET.tostring(root)
    [e.get("id") for e in root.iterfind(".//item[@kind='k1']")]


def r_html():
    import html
    from html.parser import HTMLParser

    class Counter(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags = {}

        def handle_starttag(self, tag, attrs):
            self.tags[tag] = self.tags.get(tag, 0) + 1

        def handle_data(self, data):
            html.escape(data)

    page = "<html><body>%s</body></html>" % "".join(
        '<div class="c%d"><a href="/p?x=%d&amp;y=2">link &lt;%d&gt;</a><br/><p>text %d</p>'
        "</div>" % (i % 4, i, i, i) for i in range(600))
    p = Counter()
    p.feed(page)
    p.close()
    html.unescape(page)


def r_config_csv():
    import configparser
    import csv

    ini = "".join("[section%d]\nbase = /srv/%d\npath = %%(base)s/data\nflag = yes\nn = %d\n"
                  "name = value %d\n\n" % (i, i, i, i) for i in range(150))
    cp = configparser.ConfigParser()
    cp.read_string(ini)
    for sec in cp.sections():
        cp.get(sec, "path")
        cp.getboolean(sec, "flag")
        cp.getint(sec, "n")
    cp.write(io.StringIO())
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=["a", "b", "c"])
    w.writeheader()
    for i in range(2000):
        w.writerow({"a": i, "b": "x,%d" % i, "c": 'q"%d' % i})
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(rows) == 2000


def r_argparse():
    import argparse

    for _ in range(4):
        p = argparse.ArgumentParser(prog="tool", description="A tool. " * 20)
        for i in range(25):
            p.add_argument("--opt%d" % i, type=int, default=i, help="option %d " % i * 5)
        p.add_argument("-v", "--verbose", action="count", default=0)
        sub = p.add_subparsers(dest="cmd")
        for i in range(8):
            s = sub.add_parser("cmd%d" % i, help="command %d" % i)
            s.add_argument("files", nargs="*")
            s.add_argument("--force", action="store_true")
        for i in range(60):
            p.parse_args(["--opt%d" % (i % 25), str(i), "-vv", "cmd%d" % (i % 8), "a", "b",
                          "--force"])
        p.format_help()


def r_dataclasses_enum():
    import dataclasses
    import enum

    for i in range(25):
        cls = dataclasses.make_dataclass(
            "C%d" % i, [("f%d" % j, int, dataclasses.field(default=j)) for j in range(8)],
            order=True, frozen=i % 2 == 0)
        objs = [cls() for _ in range(20)]
        [dataclasses.asdict(o) for o in objs]
        dataclasses.replace(objs[0], f0=5)
        sorted(objs)
        E = enum.Enum("E%d" % i, ["A%d" % j for j in range(10)])
        [m.name for m in E]
        F = enum.Flag("F%d" % i, ["B%d" % j for j in range(6)])
        [m.name for m in F]
        bool((F.B0 | F.B2 | F.B5) & F.B2)


def r_textwrap_pprint():
    import pprint
    import textwrap

    text = " ".join(_stdlib_source("textwrap.py").split()[:3000])
    for width in range(20, 100, 8):
        textwrap.fill(text, width)
    textwrap.shorten(text, 200)
    textwrap.indent(textwrap.dedent(_stdlib_source("string.py")), "> ")
    nested = {"k%d" % i: [list(range(i % 7)), {"x": (i, "y" * (i % 13))}] for i in range(300)}
    pprint.pformat(nested, width=60)
    pprint.saferepr(nested)


def r_pydoc():
    import pydoc

    for name in ("json", "textwrap", "fractions"):
        pydoc.render_doc(name, renderer=pydoc.plaintext)
    pydoc.HTMLDoc().docmodule(sys.modules["json"])


def r_inspect_typing():
    import collections
    import functools
    import inspect
    import typing

    for mod in (collections, functools, inspect, os.path):
        for _, obj in inspect.getmembers(mod):
            if callable(obj):
                try:
                    inspect.signature(obj)
                except (TypeError, ValueError):
                    pass

    class Movie(typing.TypedDict):
        name: str
        year: int

    T = typing.TypeVar("T")

    class Box(typing.Generic[T]):
        item: "typing.Optional[T]"
        tags: typing.List[typing.Dict[str, int]]

    for _ in range(30):
        typing.get_type_hints(Box, localns={"typing": typing, "T": T})
        typing.get_type_hints(Movie)
    import textwrap

    inspect.getsource(textwrap)


def r_calendar_datetime():
    import calendar
    import datetime

    for year in (2023, 2024, 2025):
        calendar.TextCalendar().formatyear(year)
        calendar.HTMLCalendar().formatyear(year)
    base = datetime.datetime(2024, 1, 1, 12, 30)
    for i in range(300):
        d = base + datetime.timedelta(hours=7 * i)
        s = d.strftime("%Y-%m-%d %H:%M:%S %a %b")
        datetime.datetime.strptime(s, "%Y-%m-%d %H:%M:%S %a %b")  # _strptime, in Python
        datetime.datetime.fromisoformat(d.isoformat())


def r_urllib_ipaddress():
    import ipaddress
    import urllib.parse as up

    for i in range(400):
        url = "https://user:pw@host%d.example.com:8%03d/a/b/../c;p?x=%d&y=a+b&z=%%20#frag" % (
            i % 9, i, i)
        parts = up.urlsplit(url)
        up.parse_qs(parts.query)
        up.urlencode({"q": "caf\u00e9 %d" % i, "n": i, "l": [1, 2]}, doseq=True)
        up.urljoin(url, "../d/e?f=1")
        up.unquote(up.quote("/p\u00e5th/%d with spaces" % i))
    nets = list(ipaddress.ip_network("10.0.0.0/16").subnets(new_prefix=24))
    list(ipaddress.collapse_addresses(nets))
    [ipaddress.ip_address("2001:db8::%x" % i).exploded for i in range(300)]


def r_logging():
    import logging

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(levelname)-8s %(name)s %(funcName)s:%(lineno)d %(message)s"))
    log = logging.getLogger("bench.stats")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    adapter = logging.LoggerAdapter(log, {"extra": 1})
    for i in range(800):
        log.info("message %d %s", i, "x" * (i % 10))
        adapter.debug("adapted %d", i)
        if i % 100 == 0:
            try:
                raise ValueError(i)
            except ValueError:
                log.exception("failed %d", i)
    log.removeHandler(handler)


def r_random_collections():
    import collections
    import heapq
    import random as rnd_mod

    r = rnd_mod.Random(5)
    data = [r.randint(0, 10_000) for _ in range(3000)]
    r.shuffle(data)
    r.sample(data, 500)
    r.choices(data, k=500)
    [r.gauss(0, 1) for _ in range(500)]
    heapq.nlargest(20, data, key=lambda x: -x)
    list(heapq.merge(sorted(data[:1000]), sorted(data[1000:]), key=abs))
    c = collections.Counter(d % 97 for d in data)
    c.most_common(10)
    for i in range(30):
        collections.namedtuple("NT%d" % i, ["a", "b", "c%d" % i])
    od = collections.OrderedDict((i, i) for i in range(500))
    for i in range(0, 500, 3):
        od.move_to_end(i)


def r_zip_tar():
    import tarfile
    import zipfile

    payload = [("dir%d/file%d.txt" % (i % 5, i), ("line %d\n" % i * 50).encode())
               for i in range(80)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in payload:
            z.writestr(name, data)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        for info in z.infolist():
            z.read(info)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in payload:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r:gz") as t:
        for m in t.getmembers():
            t.extractfile(m).read()


REAL_WORKLOADS = {
    "json": r_json, "re": r_re, "email": r_email, "difflib": r_difflib,
    "pydecimal": r_pydecimal, "fractions_statistics": r_fractions_statistics, "ast": r_ast,
    "pickle": r_pickle, "xml": r_xml, "html": r_html, "config_csv": r_config_csv,
    "argparse": r_argparse, "dataclasses_enum": r_dataclasses_enum,
    "textwrap_pprint": r_textwrap_pprint, "pydoc": r_pydoc, "inspect_typing": r_inspect_typing,
    "calendar_datetime": r_calendar_datetime, "urllib_ipaddress": r_urllib_ipaddress,
    "logging": r_logging, "random_collections": r_random_collections, "zip_tar": r_zip_tar,
}
# Twenty of them (zip_tar is spare).
REAL_NAMES = list(REAL_WORKLOADS)[:20]


def real_paths():
    return [os.path.join(real_dir(), "%02d-%s.prof" % (i, name))
            for i, name in enumerate(REAL_NAMES)]


def make_real(name, path):
    """Profiles one workload, its imports included, in this fresh process."""
    import rprofile

    prof = rprofile.Profile()
    prof.enable()
    REAL_WORKLOADS[name]()
    prof.disable()
    prof.dump_stats(path + ".tmp")
    os.replace(path + ".tmp", path)


def summarize_real(paths, out):
    keys = set()
    rows = edges = 0
    for p in paths:
        with open(p, "rb") as f:
            st = marshal.load(f)
        rows += len(st)
        edges += sum(len(v[4]) for v in st.values())
        keys.update(st)
    with open(out, "w") as f:
        json.dump({"files": len(paths), "rows": rows, "edges": edges, "distinct": len(keys)}, f)


def synthetic(scale):
    """The synthetic profile's path (and its .json summary beside it), made first in a fresh
    process if missing; pickle_bench and report_bench read it too."""
    path = synthetic_path(scale)
    if not (os.path.exists(path) and os.path.exists(path + ".json")):
        print("generating %s ..." % os.path.relpath(path), file=sys.stderr)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, os.path.abspath(__file__), "--make-synthetic",
                        str(scale)], check=True)
        print("  %.1f s" % (time.perf_counter() - t0), file=sys.stderr)
    return path


def ensure_inputs(scale, ops):
    """Makes the inputs the selected operations need (each in a fresh process)."""
    me = os.path.abspath(__file__)
    if set(ops) - {"add"}:
        synthetic(scale)
    if "add" in ops:
        paths = real_paths()
        summary = os.path.join(real_dir(), "summary.json")
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            os.makedirs(real_dir(), exist_ok=True)
            print("profiling %d real workloads into %s ..." % (
                len(missing), os.path.relpath(real_dir())), file=sys.stderr)
            for p in missing:
                name = os.path.basename(p)[3:-5]
                subprocess.run([sys.executable, me, "--make-real", name, p], check=True)
        if missing or not os.path.exists(summary):
            subprocess.run([sys.executable, me, "--summarize-real", summary], check=True)


# ---------------------------------------------------------------- the measured children

def maxrss_bytes():
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def current_rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


def own_peak_bytes():
    """This process's own high-water mark (VmHWM), which, unlike ru_maxrss, does not start
    from the parent's: only used to check the baseline."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def child(impl, op, scale):
    if impl == "pstats":
        from pstats import Stats
    else:
        from rprofile import Stats
    big = synthetic_path(scale)
    stream = io.StringIO()
    result = {}
    timer = time.perf_counter
    if op == "e2e":  # also the memory figures: reading them costs microseconds
        base_peak, base_now, base_own = maxrss_bytes(), current_rss_bytes(), own_peak_bytes()
        t0 = timer()
        s = Stats(big, stream=stream)
        now, load_peak = current_rss_bytes(), maxrss_bytes()
        s.sort_stats("cumulative").print_stats(PRINT_AMOUNT)
        result["t"] = timer() - t0
        result["peak"] = maxrss_bytes() - base_peak
        result["load_peak"] = load_peak - base_peak
        result["load_rss"] = None if now is None else now - base_now
        result["base"] = base_peak
        # ru_maxrss starts from the parent's peak (Linux records it at exec): if that is above
        # this process's own, the baseline is the parent's and the figures are understated.
        result["inherited"] = 0 if base_own is None else max(0, base_peak - base_own)
    elif op == "load":
        t0 = timer()
        s = Stats(big, stream=stream)
        result["t"] = timer() - t0
        s.print_stats(5)  # untimed, for the output check
    elif op in ("sort_cumulative", "sort_name_file_line"):
        keys = ("cumulative",) if op == "sort_cumulative" else ("name", "file", "line")
        s = Stats(big, stream=stream)
        t0 = timer()
        s.sort_stats(*keys)
        result["t"] = timer() - t0
        s.print_stats(20)
    elif op in ("print_stats", "print_callers", "print_callees"):
        s = Stats(big, stream=stream)
        s.sort_stats("cumulative")
        method = getattr(s, op)
        t0 = timer()
        method(PRINT_AMOUNT)
        result["t"] = timer() - t0
    elif op == "strip_dirs":
        s = Stats(big, stream=stream)
        t0 = timer()
        s.strip_dirs()
        result["t"] = timer() - t0
        s.print_stats(20)
    elif op == "add":
        paths = real_paths()
        t0 = timer()
        s = Stats(*paths, stream=stream)
        result["t"] = timer() - t0
        s.sort_stats("cumulative").print_stats(20)
    else:
        raise SystemExit("unknown operation %r" % op)
    text = stream.getvalue()
    out = os.path.join(PYDIR, "out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "%s-%s.txt" % (op, impl)), "w") as f:
        f.write(text)
    result["digest"] = hashlib.sha1(text.encode()).hexdigest()[:16]
    print(json.dumps(result))


def measure(impl, op, scale):
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", impl, op, "--scale", str(scale)],
        capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit("%s %s failed (exit %d)" % (impl, op, proc.returncode))
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the driver

def parse_list(text, allowed, aliases=None):
    items = []
    for item in text.split(","):
        item = item.strip()
        for x in (aliases or {}).get(item, [item]):
            if x not in allowed:
                raise SystemExit("unknown %r (choose from %s)" % (x, ", ".join(
                    list(allowed) + list(aliases or {}))))
            if x not in items:
                items.append(x)
    return [x for x in allowed if x in items]


def check_rprofile():
    """None if rprofile.Stats can be measured, else why not. Asked of a child, so that this
    process does not grow by rprofile's import (see ensure_inputs)."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--check-rprofile"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return None if out == "ok" else out


def why_not_rprofile():
    try:
        import rprofile
    except ImportError as e:
        return "rprofile is not importable by %s (%s)" % (sys.executable, e)
    if not hasattr(rprofile, "Stats"):
        return ("rprofile %s at %s has no Stats (the installed build predates it): rebuild "
                "it, or measure pstats alone with --impl pstats" % (
                    getattr(rprofile, "__version__", "?"), os.path.dirname(rprofile.__file__)))
    return None


def mib(x):
    return x / (1 << 20)


def ms(seconds):
    x = seconds * 1000
    return "%.0f" % x if x >= 100 else "%.1f" % x if x >= 10 else "%.2f" % x if x >= 1 else \
        "%.3f" % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(OPS),
                    help="operations, comma-separated: %s (sort and print stand for their "
                         "groups)" % ", ".join(OPS))
    ap.add_argument("--impl", default=",".join(IMPLS), help="pstats, rprofile or both")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="size of the synthetic profile relative to 100,000 functions and "
                         "1,000,000 edges")
    ap.add_argument("--child", nargs=2, metavar=("IMPL", "OP"), help=argparse.SUPPRESS)
    ap.add_argument("--make-synthetic", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--make-real", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--summarize-real", help=argparse.SUPPRESS)
    ap.add_argument("--check-rprofile", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.check_rprofile:
        return print(why_not_rprofile() or "ok")
    if args.child:
        return child(args.child[0], args.child[1], args.scale)
    if args.make_synthetic is not None:
        return generate_synthetic(synthetic_path(args.make_synthetic), args.make_synthetic)
    if args.make_real:
        return make_real(*args.make_real)
    if args.summarize_real:
        return summarize_real(real_paths(), args.summarize_real)

    ops = parse_list(args.only, OPS, ALIASES)
    impls = parse_list(args.impl, IMPLS)
    if "rprofile" in impls:
        why = check_rprofile()
        if why:
            raise SystemExit("stats_bench: cannot measure rprofile.Stats: " + why)
    # Inputs are made in child processes: this one stays small, since a child's ru_maxrss
    # starts from its parent's peak on Linux (recorded when the child execs).
    ensure_inputs(args.scale, ops)

    # The memory figures come from the e2e children.
    runs = [o for o in ops if o != "memory"]
    if "memory" in ops and "e2e" not in runs:
        runs.append("e2e")
    res = {(o, i): [] for o in runs for i in impls}
    if "memory" in ops:
        for i in impls:
            res["memory", i] = res["e2e", i]
    started = time.perf_counter()
    for r in range(args.rounds):
        for o in runs:
            order = impls[r % len(impls):] + impls[: r % len(impls)]
            for i in order:
                res[o, i].append(measure(i, o, args.scale))
        print("round %d/%d done (%.0f s)" % (r + 1, args.rounds, time.perf_counter() - started),
              file=sys.stderr)

    head = ["Python %s, %d rounds" % (sys.version.split()[0], args.rounds)]
    if set(ops) - {"add"}:
        with open(synthetic_path(args.scale) + ".json") as f:
            info = json.load(f)
        head.append("synthetic profile: %s functions (%s builtins, %s recursive) in %s files, "
                    "%s caller edges (up to %s callers of one function), %.1f MB" % (
                        format(info["functions"], ","), format(info["builtins"], ","),
                        format(info["recursive"], ","), format(info["files"], ","),
                        format(info["edges"], ","), format(info["max_callers"], ","),
                        info["bytes"] / 1e6))
    if "add" in ops:
        with open(os.path.join(real_dir(), "summary.json")) as f:
            info = json.load(f)
        head.append("add: %d real profiles, %s rows and %s caller edges in all, %s distinct "
                    "functions" % (info["files"], format(info["rows"], ","),
                                   format(info["edges"], ","), format(info["distinct"], ",")))
    print("\n".join(head))

    timed = [o for o in ops if o != "memory"]
    both = len(impls) == 2
    if timed:
        print("medians (min-max) in milliseconds")
        print("operation           " + "".join("%-26s" % i for i in impls) +
              ("speed-up  output" if both else "output"))
        for o in timed:
            row = "%-20s" % o
            med = {}
            for i in impls:
                ts = [x["t"] for x in res[o, i]]
                med[i] = statistics.median(ts)
                row += "%-26s" % ("%s (%s-%s)" % (ms(med[i]), ms(min(ts)), ms(max(ts))))
            if both:
                row += "%-10s" % ("%.1fx" % (med["pstats"] / med["rprofile"])
                                  if med["rprofile"] > 0 else "n/a")
            row += output_check(res, o, impls)
            print(row)
    if "memory" in ops:
        print("memory, MiB over the process after its imports (median of %d)" % args.rounds)
        print("                        " + "".join("%-12s" % i for i in impls) +
              ("rprofile/pstats" if both else ""))
        for key, label in (("load_rss", "RSS after load"), ("load_peak", "peak, load"),
                           ("peak", "peak, load+sort+print")):
            vals = {}
            row = "%-24s" % label
            for i in impls:
                xs = [x[key] for x in res["memory", i] if x[key] is not None]
                vals[i] = statistics.median(xs) if xs else None
                row += "%-12s" % ("%.1f" % mib(vals[i]) if vals[i] is not None else "n/a")
            if both and vals["pstats"] and vals["rprofile"] is not None:
                row += "%.2f" % (vals["rprofile"] / vals["pstats"])
            print(row)
        print("baseline peak after imports: " + ", ".join(
            "%s %.1f MiB" % (i, mib(statistics.median(x["base"] for x in res["memory", i])))
            for i in impls) + "; output " + output_check(res, "memory", impls))
        inherited = max(x["inherited"] for i in impls for x in res["memory", i])
        if inherited > 1 << 20:
            print("warning: the baseline ru_maxrss was the parent's peak, %.1f MiB above the "
                  "child's own; the figures above are understated by up to that" % mib(inherited))


def output_check(res, op, impls):
    """Whether every run of op printed the same text (implementations and rounds alike)."""
    digests = {i: {x["digest"] for x in res[op, i]} for i in impls}
    if any(len(d) > 1 for d in digests.values()):
        return "varies"
    if len(impls) == 1:
        return "-"
    return "same" if len(set.union(*digests.values())) == 1 else "DIFFERS"


if __name__ == "__main__":
    main()
