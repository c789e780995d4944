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
