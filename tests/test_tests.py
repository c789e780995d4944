"""The test suite's own rules: shared helpers live in tests/helpers.py and
tests/processes.py, fixtures in conftest.py files; no test module imports another test
module or a conftest.py (pytest loads those itself)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(path: Path, top: Path) -> set[str]:
    """Dotted names of the modules PATH (under the folder TOP) imports: relative imports
    resolved; for `from PACKAGE import NAME`, also PACKAGE.NAME, which may be a module."""
    package = ".".join(path.relative_to(top).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def forbidden_imports(root: Path = TESTS) -> list[str]:
    """'file: module' for every import of a test module or conftest under ROOT."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        for module in sorted(_imported_modules(path, root.parent)):
            parts = module.split(".")
            if parts[0] == "tests" and (parts[-1].startswith("test_") or
                                        parts[-1] == "conftest"):
                bad.append(f"{path.relative_to(root.parent)}: {module}")
    return bad


def test_no_test_module_imports_another_test_module_or_a_conftest():
    bad = forbidden_imports()
    assert not bad, ("move what these share into tests/helpers.py, tests/processes.py "
                     "or a conftest.py fixture:\n" + "\n".join(bad))


def test_the_check_finds_each_form_of_import(tmp_path):
    tests = tmp_path / "tests"
    (tests / "flows").mkdir(parents=True)
    forms = ["from tests.flows.test_incremental import TEXTS",
             "import tests.sproutrag.storage.test_store",
             "from tests.flows import test_crash",
             "from .test_safety import _flow",
             "from tests.conftest import ROOT",
             "from tests.helpers import ROOT, run_flow",
             "from tests.processes import free_port"]
    for n, line in enumerate(forms):
        (tests / "flows" / f"test_m{n}.py").write_text(f"def f():\n    {line}\n")
    bad = {line.split(": ")[1] for line in forbidden_imports(tests)}
    assert bad == {"tests.flows.test_incremental", "tests.sproutrag.storage.test_store",
                   "tests.flows.test_crash", "tests.flows.test_safety", "tests.conftest"}
