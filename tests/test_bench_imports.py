"""The benchmark scripts under bench/ import only names the library still has: a name
moved or renamed in sproutrag (a refactor) fails here, not in the next benchmark run."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _has(module: str, name: str) -> bool:
    """Whether `from MODULE import NAME` works (NAME an attribute or a submodule)."""
    if hasattr(importlib.import_module(module), name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        return False
    return True


def missing_imports(folder: Path) -> list[str]:
    """'file:line module.name' for each name a script under FOLDER imports from sproutrag
    (at its top or inside a function) that does not import, and 'file:line module' for
    each such module that does not exist."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                pairs = [(node.module, a.name) for a in node.names]
            else:
                continue
            for module, name in pairs:
                if module.split(".")[0] != "sproutrag":
                    continue
                where = f"{path.relative_to(folder)}:{node.lineno} {module}"
                try:
                    ok = _has(module, name) if name else bool(importlib.import_module(module))
                except ImportError:
                    found.append(where)
                    continue
                if not ok:
                    found.append(f"{where}.{name}")
    return found


def test_the_benchmarks_import_names_the_library_has():
    assert len(list((ROOT / "bench").rglob("*.py"))) > 10
    assert missing_imports(ROOT / "bench") == []


def test_a_moved_name_and_a_missing_module_are_found(tmp_path):
    (tmp_path / "old.py").write_text(
        "def main():\n"
        "    from sproutrag.search.first_stage import FirstStage, no_such_name\n"
        "    import sproutrag.no_such_module\n")
    assert missing_imports(tmp_path) == [
        "old.py:2 sproutrag.search.first_stage.no_such_name",
        "old.py:3 sproutrag.no_such_module"]
