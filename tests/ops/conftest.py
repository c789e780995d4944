"""Fixtures of the operations tests (their helpers are in tests/processes.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import SAMPLE, SMALL_DOCS


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    """Three small documents of the sample corpus, copied (tests may change them)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in SMALL_DOCS:
        shutil.copy(SAMPLE / name, corpus / name)
    return corpus
