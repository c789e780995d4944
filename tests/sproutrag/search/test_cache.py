"""The Retriever's tree and term-count cache: keyed by tree id, bounded by bytes."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.cache import LRUCache
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store


def test_lru_keeps_the_recently_used_within_the_budget():
    cache = LRUCache(10)
    for key in "abc":
        cache.put(key, key.upper(), 4)
    assert cache.keys() == ["b", "c"] and cache.nbytes == 8
    assert cache.get("b") == "B"  # b is now the most recent
    cache.put("d", "D", 4)
    assert cache.keys() == ["b", "d"] and cache.get("c") is None
    cache.put("huge", "H", 50)  # larger than the budget: not kept
    assert len(cache) == 0 and cache.nbytes == 0
    with pytest.raises(ValueError):
        LRUCache(-1)


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()


def _eight_documents(tmp_path):
    """A toy store of eight one-line documents (each WORDS rotated) and search weights
    with a lexical weight (so term counts are cached too)."""
    store = toy_store(tmp_path / "db")
    store.write([toy_document(f"d{i}", " ".join(WORDS[i:] + WORDS[:i]), seed=i)
                 for i in range(8)], "fp")
    return store, TrainedWeights(np.zeros((1, 1), np.float32),
                                 SearchParams(threshold=-1.0, lexical_weight=1.0))


def test_retriever_cache_is_bounded_and_follows_replaced_trees(tmp_path):
    from sproutrag.search.retriever import Retriever

    store, weights = _eight_documents(tmp_path)
    encoder = toy_encoder(weights)
    unbounded = Retriever(store.uri, encoder=encoder, n_docs=8)
    budget = 6_000  # about two trees with their term counts
    small = Retriever(store.uri, encoder=encoder, n_docs=8, cache_bytes=budget)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.normal(size=TOY_DIM).astype(np.float32)
        for doc in (["d1"], ["d5", "d2"], None):
            want = unbounded.search_vector("beta kappa", q, k=3, doc_ids=doc)
            assert small.search_vector("beta kappa", q, k=3, doc_ids=doc) == want
            assert 0 < small.documents.cache.nbytes <= budget
    # unbounded grows: 8 trees, 8 term counts and 8 names
    assert len(unbounded.documents.cache) == 24
    assert len(small.documents.cache) < 24
    # Kinds share the cache and the tree id is part of every key.
    assert {k[0] for k in unbounded.documents.cache.keys()} == {"tree", "terms", "name"}
    old = {k for k in unbounded.documents.cache.keys() if k[1] == "d1"}
    store.write([toy_document("d1", "replaced text now", seed=99)], "fp")
    [hit] = unbounded.search_vector("replaced", rng.normal(size=TOY_DIM).astype(np.float32),
                                    k=1, doc_ids=["d1"])
    assert hit.text in ("replaced", "text", "now")
    assert old and not ({k for k in unbounded.documents.cache.keys() if k[1] == "d1"} <= old)


def test_a_query_reads_the_texts_of_the_documents_it_has_not_seen_once(tmp_path, monkeypatch):
    """Term counts and names of a query's new documents come from one read of their texts
    (not one read per document); a query over documents already seen reads none."""
    from sproutrag.search.retriever import Retriever
    from sproutrag.storage.store import Store

    store, weights = _eight_documents(tmp_path)
    reads = []
    for name in ("document_texts", "document_text"):
        real = getattr(Store, name)
        monkeypatch.setattr(Store, name, lambda self, *a, _real=real, _name=name: (
            reads.append((_name, len(a[0]) if _name == "document_texts" else 1)),
            _real(self, *a))[1])
    r = Retriever(store.uri, encoder=toy_encoder(weights), n_docs=8)
    q = np.random.default_rng(1).normal(size=TOY_DIM).astype(np.float32)
    first = r.search_vector("beta kappa", q, k=3)
    # one read of the eight texts: term counts and names (the leading document's text,
    # where the others' names are looked up, is its leaves')
    assert reads == [("document_texts", 8)]
    reads.clear()
    assert r.search_vector("beta kappa", q, k=3) == first
    assert reads == []
    texts = store.document_texts({"d1": store.stored_state().to_pydict()["tree_id"][1],
                                  "d2": "not-its-tree", "nope": "x"})
    assert list(texts) == ["d1"] and texts["d1"] == (" ".join(WORDS[1:] + WORDS[:1]), None)


def test_a_documents_table_without_the_title_column_is_read(tmp_path):
    """Schema 4 tables written before `title` was added lack it: their texts are read
    with no title, and corpus-wide queries (which read names) still answer."""
    import lancedb

    from sproutrag.search.retriever import Retriever

    store, weights = _eight_documents(tmp_path)
    lancedb.connect(store.uri).open_table("documents").drop_columns(["title"])
    store = toy_store(tmp_path / "db")
    tree = dict(zip(*store.stored_state().select(["doc_id", "tree_id"]).to_pydict().values()))
    assert store.document_texts({"d3": tree["d3"]}) == {
        "d3": (" ".join(WORDS[3:] + WORDS[:3]), None)}
    r = Retriever(store.uri, encoder=toy_encoder(weights), n_docs=8)
    q = np.random.default_rng(2).normal(size=TOY_DIM).astype(np.float32)
    assert len(r.search_vector("beta kappa", q, k=3)) == 3
