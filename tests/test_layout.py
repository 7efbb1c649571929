"""The source tree keeps the shape the README's layout table describes: no import cycle between
files in src/ or python/ (subpackages included), nor between src/'s top-level folders, a
Python-free core that uses nothing outside itself (and a
Python-free sampler that uses only the core and itself), data modules
that import no function modules, and no source file over 1,200 lines outside its tests."""

import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = ROOT / "python" / "rprofile"
MAX_LINES = 1200
# Modules that hold data (types and their plain methods), never the functions that act on it.
DATA_MODULES = {("core", "counters"), ("tracer", "state"), ("tracer", "track"),
                ("tracer", "hook_state")}

if not SRC.is_dir():
    pytest.skip("run from a source checkout", allow_module_level=True)


def _rust_modules():
    """{module path tuple: (file, text without its tests and comments)}."""
    out = {}
    for f in SRC.rglob("*.rs"):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "mod":
            parts = parts[:-1]
        if parts == ["lib"]:
            parts = []
        text = f.read_text()
        cut = text.find("#[cfg(test)]")
        if cut >= 0:
            text = text[:cut]
        out[tuple(parts)] = (f, re.sub(r"//[^\n]*", "", text))
    return out


def _rust_imports(modules):
    def resolve(path):
        for n in range(len(path), 0, -1):
            if tuple(path[:n]) in modules:
                return tuple(path[:n])
        return None

    graph = {}
    for mod, (_, text) in modules.items():
        deps = set()
        for m in re.finditer(r"crate::((?:\w+::)*\w+)", text):
            deps.add(resolve(m.group(1).split("::")))
        for m in re.finditer(r"crate::((?:\w+::)*)\{([^}]*)\}", text):
            base = [p for p in m.group(1).split("::") if p]
            for name in m.group(2).split(","):
                name = name.strip().split("::")[0].split(" ")[0]
                if name and name != "self":
                    deps.add(resolve(base + [name]))
        for m in re.finditer(r"\bsuper::(\w+)", text):
            deps.add(resolve(list(mod[:-1]) + [m.group(1)]))
        for m in re.finditer(r"\bsuper::\{([^}]*)\}", text):
            for name in m.group(1).split(","):
                name = name.strip().split("::")[0]
                if name and name != "self":
                    deps.add(resolve(list(mod[:-1]) + [name]))
        # A folder's mod.rs that re-exports a child (`pub use child::...`) depends on it.
        for m in re.finditer(r"^\s*pub use (?:self::)?(\w+)::", text, re.M):
            deps.add(resolve(list(mod) + [m.group(1)]))
        deps.discard(None)
        deps.discard(mod)
        graph[mod] = deps
    return graph


def _python_imports():
    """{module: rprofile modules it imports}, modules dotted below the package ("sampling",
    "sampling.__main__"); a package is its __init__."""
    def name_of(path):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        return ".".join(parts)

    modules = {name_of(f): f for f in PACKAGE.rglob("*.py")}

    def known(dotted):
        # `rprofile.a.b` is module a.b, or a name in module a.
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in modules:
                return ".".join(parts[:n])
        return None

    graph = {}
    for name, f in modules.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                    mod = ".".join(base + ([node.module] if node.module else []))
                elif node.module and (node.module + ".").startswith("rprofile."):
                    mod = node.module[len("rprofile."):]
                else:
                    continue
                # `from rprofile import _x` imports the module _x; `from rprofile import Stats`
                # a name of the package's __init__.
                for a in node.names:
                    sub = (mod + "." if mod else "") + a.name
                    targets.append(sub if sub in modules else (mod or "__init__"))
            elif isinstance(node, ast.Import):
                targets += [a.name[len("rprofile."):] for a in node.names
                            if a.name.startswith("rprofile.")]
            for t in targets:
                m = known(t)
                if m:
                    deps.add(m)
        deps.discard(name)
        graph[name] = deps
    return graph


def _cycles(graph):
    """The strongly connected components with more than one member."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_rust_files():
    cycles = _cycles(_rust_imports(_rust_modules()))
    assert cycles == [], ["/".join(m) for c in cycles for m in c]


def test_no_import_cycle_between_python_modules():
    graph = _python_imports()
    # The subpackage is seen, and what it imports.
    assert "sampling" in graph and "sampling.__main__" in graph, sorted(graph)
    assert _cycles(graph) == []


def _folders(graph):
    """{top-level folder of src/: the others its files import}; lib.rs is the crate's root."""
    out = {}
    for mod, deps in graph.items():
        if not mod or not (SRC / mod[0]).is_dir():
            continue
        out.setdefault(mod[0], set()).update(d[0] for d in deps if d and d[0] != mod[0])
    return out


def test_no_import_cycle_between_rust_folders():
    folders = _folders(_rust_imports(_rust_modules()))
    assert {"profiler", "hook", "tracer"} <= set(folders)
    # The tracer's three rooms, one way: the Python API drives the front ends, which call the
    # event path.
    assert "hook" in folders["profiler"] and "tracer" in folders["hook"]
    assert not folders["tracer"] & {"hook", "profiler"}, folders["tracer"]
    assert _cycles(folders) == []


def test_the_python_helpers_use_only_the_stats_model():
    # pyutil/ is what the faces, the profiler and the tracer borrow: it must not reach back.
    modules = _rust_modules()
    graph = _rust_imports(modules)
    assert ("pyutil",) in modules
    for mod, (path, _) in modules.items():
        if mod[:1] == ("pyutil",):
            outside = {d for d in graph[mod] if d[0] not in {"pyutil", "stats", "core"}}
            assert not outside, (path, outside)


def test_the_core_is_python_free_and_self_contained():
    modules = _rust_modules()
    graph = _rust_imports(modules)
    for mod, (path, text) in modules.items():
        if mod[:1] != ("core",):
            continue
        assert "pyo3" not in text, path
        outside = {d for d in graph[mod] if d[:1] != ("core",)}
        assert not outside, (path, outside)


# Each Python-free folder and the folders it may use besides itself.
PYTHON_FREE = {
    # The Stats engine and the marshal format: rprofile.Stats' model, read and written.
    "stats": {"core", "marshal"},
    "marshal": set(),
    # The reader runs on a thread that never holds the GIL, reading another process.
    "sampler": {"core", "samples"},
    # What a sampling run collected and its outputs (the stats model among them).
    "samples": {"core", "stats", "marshal"},
    # The HTML report: from the stats model, a sampling run or a timeline's events.
    "report": {"core", "stats", "samples"},
    # The pprof export: of the stats model, a sampling run, or a timeline's call paths (the
    # report's, so that both read a timeline one way).
    "pprof": {"core", "stats", "samples", "report"},
    # The timeline's exports (Chrome trace, speedscope): of the core's events only.
    "timeline_export": {"core"},
    # `rprofile top`: a running sampler's profiles, drawn; its snapshots are the report's.
    "top": {"core", "sampler", "samples", "stats", "report"},
}


@pytest.mark.parametrize("folder", sorted(PYTHON_FREE))
def test_the_python_free_folders_use_only_what_they_may(folder):
    modules = _rust_modules()
    graph = _rust_imports(modules)
    assert (folder,) in modules
    allowed = PYTHON_FREE[folder] | {folder}
    for mod, (path, text) in modules.items():
        if mod[:1] != (folder,):
            continue
        assert "pyo3" not in text, path
        outside = {d for d in graph[mod] if d[0] not in allowed}
        assert not outside, (path, outside)


def test_data_modules_import_no_function_modules():
    modules = _rust_modules()
    graph = _rust_imports(modules)
    for mod in DATA_MODULES:
        assert mod in modules, mod
        # Data may hold other data and the core's types; it calls into no profiler function.
        allowed = {d for d in graph[mod] if d in DATA_MODULES or d[:1] == ("core",)}
        assert graph[mod] <= allowed, (mod, graph[mod] - allowed)


def test_no_source_file_is_over_the_limit_outside_its_tests():
    long = {}
    for path in list(SRC.rglob("*.rs")) + list(PACKAGE.rglob("*.py")):
        text = path.read_text()
        cut = text.find("#[cfg(test)]") if path.suffix == ".rs" else -1
        n = (text[:cut] if cut >= 0 else text).count("\n")
        if n > MAX_LINES and "fuzz_tests" not in path.name:
            long[os.fspath(path.relative_to(ROOT))] = n
    assert long == {}
