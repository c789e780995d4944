"""Dependencies point one way: flows -> tasks -> the library and schemas; no import cycles.
(The repository's flows/, tasks/ and schemas/ install as sproutrag.flows, sproutrag.tasks
and sproutrag.schemas.)"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import CLI

ROOT = Path(__file__).resolve().parents[1]
#: Orchestration: the library must not load any of it, not even indirectly.
FORBIDDEN = ("prefect", "sproutrag.flows", "sproutrag.tasks")


def forbidden(name: str) -> bool:
    """NAME is orchestration: a module of FORBIDDEN or inside one."""
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def library_modules() -> list[str]:
    """Every module of the `sproutrag` package (each one is a public entry point)."""
    found = pkgutil.walk_packages([str(ROOT / "sproutrag")], prefix="sproutrag.")
    return ["sproutrag", *sorted(m.name for m in found if m.name != "sproutrag.__main__")]


_PROBE = """
import importlib, json, sys
forbidden = {forbidden!r}
out = {{}}
for name in {modules!r}:
    importlib.import_module(name)
    out[name] = sorted({{f for f in forbidden for m in sys.modules
                         if m == f or m.startswith(f + ".")}})
    if out[name]:
        break
out["torch"] = "torch" in sys.modules
print(json.dumps(out))
"""


def _import_in_fresh_interpreter(modules: list[str]) -> dict:
    code = _PROBE.format(forbidden=FORBIDDEN, modules=modules)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_no_library_module_loads_orchestration():
    """Import every sproutrag module in a fresh interpreter: none loads prefect, flows or
    tasks (the first module whose import loaded one is named)."""
    modules = library_modules()
    assert "sproutrag.encoder.encoder" in modules and "sproutrag.search.retriever" in modules
    found = _import_in_fresh_interpreter(modules)
    offenders = {name: mods for name, mods in found.items() if name != "torch" and mods}
    assert not offenders, f"the library imports orchestration: {offenders}"


def test_core_modules_do_not_load_torch():
    found = _import_in_fresh_interpreter(
        ["sproutrag", "sproutrag.ingest.corpus", "sproutrag.ingest.stages",
         "sproutrag.storage.store", "sproutrag.trees.tree", "sproutrag.ingest.chunking",
         "sproutrag.ingest.sentences",
         "sproutrag.encoder.encoder", "sproutrag.encoder.factory"])
    assert found["torch"] is False


def _imported_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def test_library_sources_never_import_orchestration():
    """Also imports inside functions (the fresh-interpreter test sees only module level)."""
    for path in (ROOT / "sproutrag").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _imported_names(node):
                assert not forbidden(name), f"{path}: imports {name}"


def _runtime_imports(path: Path) -> list[str]:
    """Every import the module can execute: at module level and inside functions (a lazy
    import is still a dependency), but not those under `if TYPE_CHECKING:`."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        out.extend(_imported_names(node))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return out


def import_graph() -> dict[str, set[str]]:
    """sproutrag module -> the sproutrag modules it imports (anywhere but for typing)."""
    modules = set(library_modules())
    graph: dict[str, set[str]] = {}
    for name in modules:
        rel = name.split(".")[1:]
        path = ROOT.joinpath("sproutrag", *rel[:-1], f"{rel[-1]}.py") if rel else (
            ROOT / "sproutrag" / "__init__.py")
        if not path.is_file():
            path = ROOT.joinpath("sproutrag", *rel, "__init__.py")
        graph[name] = {m for m in _runtime_imports(path) if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := dfs(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := dfs(node)):
            return cycle
    return None


def test_no_import_cycles_among_library_modules():
    graph = import_graph()
    assert graph["sproutrag.search.retriever"], "the import graph was not read"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_find_cycle_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


#: The library's packages, lowest first: a module may import its own package and those
#: below it, never one above ("root": sproutrag's own modules, shared by every layer).
LAYERS = ("root", "trees", "encoder", "storage", "ingest", "search", "learn")
#: What `trees` may use besides the standard library: it knows nothing but arrays (and
#: raises the project's InvalidTreeError).
TREES_MAY_IMPORT = {"numpy", "scipy", "sproutrag.errors"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "root"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a higher layer (module -> imported module)."""
    rank = {name: k for k, name in enumerate(LAYERS)}
    return sorted(f"{m} ({layer_of(m)}) imports {d} ({layer_of(d)})"
                  for m, deps in graph.items() for d in deps
                  if rank[layer_of(d)] > rank[layer_of(m)])


def test_packages_import_only_lower_layers():
    graph = import_graph()
    assert {layer_of(m) for m in graph} == set(LAYERS), "a package is missing from LAYERS"
    assert layer_violations(graph) == []


def test_layer_check_sees_an_upward_import():
    graph = {"sproutrag.storage.store": {"sproutrag.search.retriever"},
             "sproutrag.search.retriever": {"sproutrag.storage.store"}}
    assert layer_violations(graph) == [
        "sproutrag.storage.store (storage) imports sproutrag.search.retriever (search)"]


def test_trees_import_nothing_but_numpy_and_scipy():
    for path in (ROOT / "sproutrag" / "trees").glob("*.py"):
        imported = {name for name in _runtime_imports(path)
                    if name.split(".")[0] not in sys.stdlib_module_names}
        other = {name for name in imported if name not in TREES_MAY_IMPORT
                 and name.split(".")[0] not in ("numpy", "scipy")
                 and not name.startswith(("sproutrag.errors.", "sproutrag.trees"))}
        assert not other, f"{path.name} imports {sorted(other)}"


def test_help_is_quick_and_explains():
    out = subprocess.run(
        [*CLI, "index", "--help"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    assert "CORPUS" in out and "--db" in out
