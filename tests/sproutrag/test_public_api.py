"""The public API: every name `sproutrag` exports resolves, lazily."""

from __future__ import annotations

import json
import subprocess
import sys

import sproutrag
from tests.helpers import ROOT


def test_every_public_name_resolves_to_its_definition():
    for name in sproutrag.__all__:
        value = getattr(sproutrag, name)
        assert value is not None, name
        if name != "__version__":
            assert getattr(value, "__name__", name) == name


def test_unknown_names_raise_attribute_error():
    try:
        sproutrag.NotAThing  # noqa: B018
    except AttributeError as exc:
        assert "NotAThing" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_package_loads_no_heavy_dependency():
    code = ("import json, sys, sproutrag; "
            "print(json.dumps([m for m in ('torch', 'lancedb', 'transformers', 'prefect') "
            "if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


def test_type_checkers_see_every_public_name_where_it_is_defined():
    """The lazy names are also imported under TYPE_CHECKING (a type checker cannot follow
    `__getattr__`: `from sproutrag import Retriever` read as Any), each from the module
    `_PUBLIC` loads it from, and the package ships its PEP 561 marker."""
    import ast
    import tomllib

    tree = ast.parse((ROOT / "sproutrag" / "__init__.py").read_text(encoding="utf-8"))
    [block] = [n for n in tree.body if isinstance(n, ast.If)
               and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    seen = {a.asname: n.module for n in block.body for a in n.names}
    assert seen == sproutrag._PUBLIC
    assert (ROOT / "sproutrag" / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["sproutrag"]
