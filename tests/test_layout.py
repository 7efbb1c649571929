"""The source tree keeps the shape the README's layout table describes: no import cycle between
files in src/ or python/, a Python-free core that uses nothing outside itself (and a
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
DATA_MODULES = {("core", "counters"), ("profiler", "state"), ("profiler", "track")}

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
    graph = {}
    for f in PACKAGE.glob("*.py"):
        tree = ast.parse(f.read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                    "rprofile"):
                deps.add(node.module.split(".")[1] if "." in node.module else "__init__")
                if node.module == "rprofile":
                    deps.update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("rprofile."):
                        deps.add(a.name.split(".")[1])
        name = f.stem
        graph[name] = {d for d in deps if d != name and (PACKAGE / (d + ".py")).exists()}
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
    assert _cycles(_python_imports()) == []


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
    # The reader runs on a thread that never holds the GIL, reading another process.
    "sampler": {"core", "samples"},
    # What a sampling run collected and its outputs (the stats model among them).
    "samples": {"core", "stats", "marshal"},
    # The HTML report: from the stats model, a sampling run or a timeline's events.
    "report": {"core", "stats", "samples"},
    # The pprof export: of the stats model, a sampling run, or a timeline's call paths (the
    # report's, so that both read a timeline one way).
    "pprof": {"core", "stats", "samples", "report"},
}


@pytest.mark.parametrize("folder", sorted(PYTHON_FREE))
def test_the_sampling_folders_are_python_free_and_use_only_what_they_may(folder):
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
        allowed = {d for d in graph[mod] if d in DATA_MODULES or d[:1] in (("core",), ("hook",))}
        assert graph[mod] <= allowed, (mod, graph[mod] - allowed)


def test_no_source_file_is_over_the_limit_outside_its_tests():
    long = {}
    for path in list(SRC.rglob("*.rs")) + list(PACKAGE.glob("*.py")):
        text = path.read_text()
        cut = text.find("#[cfg(test)]") if path.suffix == ".rs" else -1
        n = (text[:cut] if cut >= 0 else text).count("\n")
        if n > MAX_LINES and "fuzz_tests" not in path.name:
            long[os.fspath(path.relative_to(ROOT))] = n
    assert long == {}
