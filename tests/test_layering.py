"""Dependencies point one way: flows -> tasks -> sproutrag, schemas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    return set(out.split())


def test_import_sproutrag_does_not_import_prefect_or_torch():
    mods = _modules_after(
        "import sproutrag, sproutrag.cli, sproutrag.corpus, sproutrag.indexing, "
        "sproutrag.store, sproutrag.tree, sproutrag.chunking, sproutrag.encoding"
    )
    assert not any(m == "prefect" or m.startswith("prefect.") for m in mods)
    assert "torch" not in mods


def test_library_sources_never_import_prefect():
    for path in (ROOT / "sproutrag").rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            assert not stripped.startswith(("import prefect", "from prefect")), path


def test_help_is_quick_and_explains():
    out = subprocess.run(
        [sys.executable, "-m", "sproutrag", "index", "--help"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    assert "CORPUS" in out and "--db" in out
