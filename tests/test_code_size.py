"""CONVENTIONS' sizes: every module of the library, the flows, the tasks and the schemas
under 400 lines, every function under 50 (from its `def` line to its last)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sproutrag", "flows", "tasks", "schemas")
MODULE_LINES = 400
FUNCTION_LINES = 50


def _sources() -> list[Path]:
    return sorted(p for top in PACKAGES for p in (ROOT / top).rglob("*.py"))


def oversized(paths: list[Path]) -> list[str]:
    """'path: N lines' for each module of PATHS over MODULE_LINES and 'path:line name: N
    lines' for each function over FUNCTION_LINES."""
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        if len(text.splitlines()) > MODULE_LINES:
            found.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_modules_and_functions_are_small():
    paths = _sources()
    assert len(paths) > 50 and ROOT / "sproutrag" / "search" / "retriever.py" in paths
    assert not oversized(paths), "\n".join(oversized(paths))


def test_the_size_check_finds_a_long_module_and_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    long_function = tmp_path / "long_function.py"
    long_function.write_text(f"def f():\n{body}\n")
    long_module = tmp_path / "long_module.py"
    long_module.write_text("x = 1\n" * (MODULE_LINES + 1))
    short = tmp_path / "short.py"
    short.write_text("def f():\n" + "\n".join(body.splitlines()[:FUNCTION_LINES - 1]) + "\n")
    found = oversized([long_function, long_module, short])
    assert found == [f"{long_function}:1 f: {FUNCTION_LINES + 1} lines",
                     f"{long_module}: {MODULE_LINES + 1} lines"]
