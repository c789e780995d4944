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
