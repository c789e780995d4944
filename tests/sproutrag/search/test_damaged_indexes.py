"""A query while an index of `nodes` is damaged (a file of it lost): it answers from the
vectors, with one warning a process, never a traceback (toy documents, no model)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search import text_index
from sproutrag.search.retriever import Retriever
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store


@pytest.fixture
def store(tmp_path):
    store = toy_store(tmp_path / "db")
    words = "notice period payment term party law breach cure days written".split()
    store.write([toy_document(f"d{i:03d}", " ".join(words[(i + j) % 10] for j in range(6)),
                              seed=i) for i in range(60)], "fp")
    store.ensure_text_index()
    store.ensure_vector_index(min_rows=0)
    return store


def _break(store, kind: str) -> None:
    [index] = [i for i in store.table("nodes").list_indices() if i.index_type == kind]
    folder = store.table("nodes").to_lance().uri + f"/_indices/{index.index_uuid}"
    for path in Path(folder).iterdir():
        path.unlink()


FTS_SAID = "full-text index of nodes cannot be read"


@pytest.mark.parametrize("kind, said, memory_rows", [
    ("FTS", FTS_SAID, 0), ("FTS", FTS_SAID, 100_000),  # text hits' rows read / from memory
    ("IvfSq", "vector index of nodes cannot be read", 0)])
def test_a_damaged_index_answers_from_the_vectors_with_one_warning(store, caplog, kind,
                                                                   said, memory_rows):
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    r = Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=memory_rows)
    q = np.random.default_rng(2).normal(size=TOY_DIM).astype(np.float32)
    before = r.search_vector("notice period", q, k=5)
    with r.view.one_view():
        written = r.first.writing("notice")  # rule 27's lookup, the same index
    assert written
    _break(store, kind)
    text_index._warned.clear()
    r = Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=memory_rows)
    with caplog.at_level(logging.WARNING, logger="sproutrag.search"):
        for _ in range(3):
            hits = r.search_vector("notice period", q, k=5)
            assert sum(len(h.spans) for h in hits) == 5
        with r.view.one_view():
            assert r.first.writing("notice") == (written if kind == "IvfSq" else [])
    warned = [rec.getMessage() for rec in caplog.records if said in rec.getMessage()]
    assert len(warned) == 1  # once a process
    if kind == "IvfSq":  # the exact search finds what the index found
        assert [h.node_id for h in hits] == [h.node_id for h in before]
