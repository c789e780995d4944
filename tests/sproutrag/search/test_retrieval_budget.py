"""Tree mode fills the budget of k units like flat mode, whatever the number of documents
the first stage would pick (a deterministic fake encoder, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.limits import MAX_COUNT
from sproutrag.params import SearchParams
from sproutrag.search.retriever import QueryError, Retriever
from sproutrag.storage.store import Store
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def _retriever(store: Store, memory_rows: int) -> Retriever:
    no_cutoff = SearchParams(threshold=-1.0)
    weights = TrainedWeights(np.zeros((1, 1), np.float32), no_cutoff)
    encoder = toy_encoder(weights)
    return Retriever(store.uri, encoder=encoder, memory_rows=memory_rows)


def _units(hits) -> int:
    return sum(len(h.spans) for h in hits)


@pytest.mark.parametrize("memory_rows", [300_000, 0])  # in memory, LanceDB's search
def test_tree_mode_fills_k_over_many_one_sentence_documents(tmp_path, memory_rows):
    store = toy_store(tmp_path / "db")
    store.write([toy_document(f"d{i:02d}", WORDS[i % len(WORDS)], seed=i) for i in range(70)], "fp")
    r = _retriever(store, memory_rows)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = rng.normal(size=TOY_DIM).astype(np.float32)
        for k in (5, 20, 60):
            flat = r.search_vector("q", q, k=k, mode="flat")
            tree = r.search_vector("q", q, k=k)
            assert _units(flat) == _units(tree) == k
            assert len({h.doc_id for h in tree}) == k  # one unit per document
        # More than the database holds: every unit, no error, up to the largest k.
        assert _units(r.search_vector("q", q, k=500)) == 70
        for mode in ("tree", "flat"):
            assert _units(r.search_vector("q", q, k=MAX_COUNT, mode=mode)) == 70
            with pytest.raises(QueryError, match="k must be an integer between 1 and"):
                r.search_vector("q", q, k=MAX_COUNT + 1, mode=mode)
        # Restricted: the units of those documents only.
        hits = r.search_vector("q", q, k=20, doc_ids=["d03", "d07"])
        assert _units(hits) == 2 and {h.doc_id for h in hits} == {"d03", "d07"}


def test_tree_mode_widens_past_n_docs_for_multi_unit_documents(tmp_path):
    store = toy_store(tmp_path / "db")
    store.write([toy_document(f"d{i:02d}", " ".join(WORDS[i % 9:i % 9 + 3]), seed=i)
                 for i in range(20)], "fp")  # 20 documents of 3 units
    r = _retriever(store, 300_000)
    q = np.random.default_rng(1).normal(size=TOY_DIM).astype(np.float32)
    assert len(r.choose_documents(q, None)) == r.n_docs == 8  # 24 units are enough
    assert len(r.choose_documents(q, None, k=24)) == 8
    assert len(r.choose_documents(q, None, k=25)) == 9
    assert len(r.choose_documents(q, None, k=1000)) == 20
    assert _units(r.search_vector("q", q, k=40)) == 40
    assert _units(r.search_vector("q", q, k=1000)) == 60
    # The first n_docs documents are the same, in the same order, whatever k.
    assert r.choose_documents(q, None, k=1000)[:8] == r.choose_documents(q, None)
