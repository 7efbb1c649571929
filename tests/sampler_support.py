"""What the sampler's test modules share: their programs, whether this interpreter is one the
sampler must read, running `python -m rprofile`, and readers of the files it writes (pstats
files, folded stacks) and of the tracer's call graph, the oracle of sampled stacks."""

import ast
import collections
import functools
import json
import os
import pstats
import re
import subprocess
import sys
import sysconfig

import pytest

from rprofile.sampling import Sampler

PROGRAMS = os.path.join(os.path.dirname(__file__), "sampled_programs")


def sampled_program(name):
    return os.path.join(PROGRAMS, name)


# The versions whose stacks the sampler reads (their GIL builds): there its tests run and a
# stack that cannot be read fails them; elsewhere they skip, with the sampler's own reason.
SAMPLED_VERSIONS = [(3, 10), (3, 11), (3, 12), (3, 13), (3, 14), (3, 15)]


def sampled_here():
    return (sys.version_info[:2] in SAMPLED_VERSIONS
            and not sysconfig.get_config_var("Py_GIL_DISABLED"))


def sampler_unsupported():
    """None where the sampler must work, else why it does not (a version it does not read)."""
    if sampled_here():
        return None
    try:
        with Sampler(rate=100):
            pass
    except ValueError as e:
        return str(e)
    return None


# Marks a test (or, as `pytestmark`, a module) that needs the sampler.
needs_sampler = pytest.mark.skipif(sampler_unsupported() is not None,
                                   reason=str(sampler_unsupported()))


def run_rprofile(*args, check=True, **kw):
    """`python -m rprofile *args`, its output captured; it must succeed unless `check` is
    False."""
    proc = subprocess.run([sys.executable, "-m", "rprofile", *args], capture_output=True,
                          text=True, timeout=300, **kw)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def attach_and_go(child, *options):
    """Attaches `python -m rprofile --sample *options` to `child`, a program that says "ready",
    waits for a line, then does its work and prints what it measured as JSON and exits; returns
    that JSON and the sampler's stderr, once both ended well."""
    assert child.stdout.readline().strip() == "ready"
    sampler = subprocess.Popen([sys.executable, "-m", "rprofile", "--sample", "--pid",
                                str(child.pid), *options],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The sampler says so once it is attached; then the work starts.
    assert sampler.stderr.readline().startswith("rprofile: sampling process %d" % child.pid)
    child.stdin.write("go\n")
    child.stdin.flush()
    spent = json.loads(child.stdout.readline())
    # The program ran to its end; the sampler saw it exit and wrote what it collected.
    _, stderr = sampler.communicate(timeout=60)
    assert sampler.returncode == 0, stderr
    assert child.wait(timeout=10) == 0
    return spent, stderr


def samples_by_function(path):
    """{function name: (direct samples, cumulative samples)} from a sampled stats file."""
    out = {}
    for (_, _, name), (cc, nc, _, _, _) in pstats.Stats(path).stats.items():
        d, c = out.get(name, (0, 0))
        out[name] = (d + cc, c + nc)
    return out


def collapsed(path):
    """[(thread name, [function names outermost first], count)] from a folded-stacks file, whose
    root frames are "name (tid N)"."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            thread, *frames = stack.split(";")
            thread = re.sub(r" \(tid \d+\)$", "", thread)
            rows.append((thread, [fr.split(" (")[0] for fr in frames], int(count)))
    return rows


def stack_frames(path):
    """[([(name, file, line or None)] outermost first, count)] of a folded-stacks file."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = []
            for frame in stack.split(";")[1:]:
                name, _, where = frame.rpartition(" (")
                file, colon, lineno = where.rstrip(")").rpartition(":")
                # A frame whose line is not known (3.10) has no ":LINE".
                if not colon or not lineno.lstrip("-").isdigit():
                    file, lineno = where.rstrip(")"), None
                frames.append((name, file, lineno and int(lineno)))
            rows.append((frames, int(count)))
    return rows


GENERATORS = {"numbers", "squares", "delegate", "<genexpr>"}


def generator_stacks(path):
    """(whole, cut, {cut stack: count}) of the samples through generators.py's generators: whole
    when `<module>` and `main` are under them. Generators of other files (site's, at startup) are
    not the program's."""
    whole = cut = 0
    bad = collections.Counter()
    for frames, count in stack_frames(path):
        if not any(name in GENERATORS and file.endswith("generators.py")
                   for name, file, _ in frames):
            continue
        if [name for name, _, _ in frames[:2]] == ["<module>", "main"]:
            whole += count
        else:
            cut += count
            bad[";".join(name for name, _, _ in frames)] += count
    return whole, cut, bad


def traced_edges(path):
    """{(caller, callee): count} of a stats file, functions as (file, first line, name)."""
    return {(caller, callee): value if isinstance(value, int) else value[0]
            for callee, (_, _, _, _, callers) in pstats.Stats(str(path)).stats.items()
            for caller, value in callers.items()}


def is_builtin(func):
    return func[0] == "~"


@functools.lru_cache(maxsize=None)
def _generators(path):
    """{first line: whether it yields inside a `try` or `with`} of the generator functions
    defined in the source file `path` (a code object's first line: its first decorator's); empty
    when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    guarded = (ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar")
                                                   else ())
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yields = set()  # whether each yield met is inside a `try` or `with`
        todo = [(n, False) for n in node.body]
        while todo:
            n, inside = todo.pop()
            if isinstance(n, (ast.Yield, ast.YieldFrom)):
                yields.add(inside)
            if not isinstance(n, nested):
                todo.extend((c, inside or isinstance(n, guarded)) for c in ast.iter_child_nodes(n))
        if yields:
            found[min([node.lineno] + [d.lineno for d in node.decorator_list])] = True in yields
    return found


def is_generator(func):
    """Whether `func` ((file, first line, name)) is a generator expression, or a generator
    function of a source file."""
    return func[2] == "<genexpr>" or func[1] in _generators(func[0])


def closed_generators(traced):
    """{caller: generators its frame can run by dropping a generator}: on 3.13+ closing a
    generator suspended outside any `try` clears it without running it, and a generator it held
    suspended inside a `try` (or `with`) is then thrown `GeneratorExit` under the frame that
    dropped the first (Jinja's `find` returning drops `find_all`, which held
    `iter_child_nodes`, which held `iter_fields`). Only such a generator is run this way, and
    only through generators: a tracer sees `find -> find_all -> ... -> iter_fields`."""
    callees = collections.defaultdict(set)
    for caller, callee in traced:
        if is_generator(callee):
            callees[caller].add(callee)
    closed = {}
    for start in callees:
        seen, todo = set(), list(callees[start])
        while todo:
            f = todo.pop()
            if f not in seen:
                seen.add(f)
                todo.extend(callees.get(f, ()))
        closed[start] = {f for f in seen if _generators(f[0]).get(f[1], False)}
    return closed


NATIVE_HOLDER = r"""
#include <pthread.h>
#include <unistd.h>

/* The C API's, declared here: the library is built without Python's headers and takes them
   from the interpreter that loads it. */
extern int PyGILState_Ensure(void);
extern void PyGILState_Release(int);
extern void *PyEval_SaveThread(void);
extern void PyEval_RestoreThread(void *);

static pthread_t thread;
static int wake[2];
static volatile unsigned long ident;

/* A thread state made for this thread, then the GIL let go: a thread in no Python code, asleep
   in read() until stop_holding() writes. */
static void *hold(void *arg)
{
    char c;
    int gil = PyGILState_Ensure();
    ident = (unsigned long)pthread_self();
    void *state = PyEval_SaveThread();
    while (read(wake[0], &c, 1) < 0)
        ;
    PyEval_RestoreThread(state);
    PyGILState_Release(gil);
    return 0;
}

unsigned long start_holding(void)
{
    if (pipe(wake) != 0 || pthread_create(&thread, 0, hold, 0) != 0)
        return 0;
    while (!ident)
        usleep(100);
    return ident;
}

void stop_holding(void)
{
    while (write(wake[1], "x", 1) < 0)
        ;
    pthread_join(thread, 0);
    close(wake[0]);
    close(wake[1]);
}
"""


def native_holder(folder):
    """NATIVE_HOLDER built with the C compiler into `folder` and loaded: `start_holding()` starts
    its thread and returns the thread's ident, `stop_holding()` ends it. Skips the test where
    no C compiler builds it."""
    import ctypes
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the native thread")
    src, lib = os.path.join(folder, "holder.c"), os.path.join(folder, "holder.so")
    with open(src, "w") as f:
        f.write(NATIVE_HOLDER)
    built = subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src, "-lpthread"],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        pytest.skip("the C compiler cannot build the native thread: " + built.stderr[-500:])
    holder = ctypes.CDLL(lib)
    holder.start_holding.restype = ctypes.c_ulong
    return holder


def reachable_through_builtins(traced):
    """{caller: callees reached directly or through built-ins only}."""
    callees = collections.defaultdict(set)
    for caller, callee in traced:
        callees[caller].add(callee)
    reach = {}
    for start in callees:
        seen, todo, out = set(), list(callees[start]), set()
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            out.add(f)
            if is_builtin(f):
                todo.extend(callees.get(f, ()))
        reach[start] = out
    return reach
