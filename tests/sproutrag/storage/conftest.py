"""Fixtures of the storage tests."""

from __future__ import annotations

import pytest

from tests.helpers import toy_store


@pytest.fixture
def store(tmp_path):
    """An empty toy store (tests.helpers.toy_store) in a fresh folder."""
    return toy_store(tmp_path / "db")
