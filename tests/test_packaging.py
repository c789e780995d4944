"""The package's dependencies: compatible ranges in pyproject.toml, the exact set in
constraints.txt, and the two agree (every exact version is inside its range)."""

from __future__ import annotations

import re
import tomllib

from tests.helpers import ROOT


def _name(req: str) -> str:
    return re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0].lower().replace("_", "-")


def _constraints() -> dict[str, str]:
    out = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, version = line.split("==")
            out[name.lower().replace("_", "-")] = version
    return out


def test_dependencies_are_ranges_and_the_constraints_pin_them_inside():
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = project["dependencies"] + project["optional-dependencies"]["test"]
    pinned = _constraints()
    for req in reqs:
        r = Requirement(req)
        assert not any(s.operator == "==" for s in r.specifier), f"{req}: a range, not a pin"
        name = _name(req)
        assert name in pinned, f"{name} is not in constraints.txt"
        assert r.specifier.contains(pinned[name], prereleases=True), (
            f"constraints.txt has {name}=={pinned[name]}, outside {req}")


def test_the_readme_and_ci_install_with_the_constraints():
    first = (ROOT / "README.md").read_text(encoding="utf-8").split("```")[1]
    assert "pip install -e '.[test]' -c constraints.txt" in first
    assert "-c constraints.txt" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_wheel_installs_one_import_name(tmp_path):
    """The built wheel holds `sproutrag` alone at its top level (no generic `flows`,
    `tasks` or `schemas` beside other projects' modules): the repository's folders of
    those names install as sproutrag.flows, sproutrag.tasks and sproutrag.schemas."""
    import subprocess
    import sys
    import zipfile

    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "-q", "-w", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    [wheel] = tmp_path.glob("sproutrag-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert top == {"sproutrag"}, top
    for path in ("sproutrag/flows/cli.py", "sproutrag/tasks/encode.py",
                 "sproutrag/schemas/settings.py", "sproutrag/search/retriever.py",
                 "sproutrag/resources/weights.json", "sproutrag/py.typed"):
        assert path in names, path
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "sproutrag = sproutrag.flows.cli:main" in zipfile.ZipFile(wheel).read(
        entry).decode()


def test_the_source_distribution_holds_what_the_readme_and_the_tests_use(tmp_path):
    """The sdist (MANIFEST.in) holds the README's constraints, sample corpus, changelog and
    docs, and the whole test suite with its helpers (it held 7 test files that could not
    import `tests.helpers`); nothing of a checkout's outputs."""
    import subprocess
    import sys
    import tarfile

    code = ("import sys; from setuptools import build_meta; "
            "print(build_meta.build_sdist(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    [sdist] = tmp_path.glob("sproutrag-*.tar.gz")
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for path in ("constraints.txt", "CHANGELOG.md", "README.md", "sproutrag/py.typed",
                 "data/sample/master_services_agreement.txt", "docs/results.md",
                 "tests/helpers.py", "tests/conftest.py", "tests/flows/test_safety.py",
                 "infra/prefect.yaml", "flows/cli.py"):
        assert path in names, path
    assert not [n for n in names if n.startswith(("out/", ".sproutrag/", ".venv/"))
                or "__pycache__" in n]


def test_the_package_reports_its_own_version():
    import sproutrag

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert sproutrag.__version__ == project["version"]
    assert f"## {project['version']}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_readmes_api_names_import_from_the_package():
    """The README writes `TrainedWeights.load(FILE)` and `Context` beside
    `from sproutrag import Retriever`; they were importable from their modules only."""
    from sproutrag import Context, Retriever, SearchParams, TrainedWeights

    assert Context.__module__ == "sproutrag.search.context"
    assert TrainedWeights.__module__ == "sproutrag.encoder.weights"
    assert SearchParams.__module__ == "sproutrag.params" and callable(Retriever)
