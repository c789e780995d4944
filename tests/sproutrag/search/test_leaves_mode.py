"""Leaves mode through the Retriever: tree mode's own fused score over the documents tree
mode searches, no tree (a deterministic fake encoder, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.retriever import QueryError, Retriever
from sproutrag.search.tree_search import leaves_mode
from tests.helpers import TOY_DIM as DIM
from tests.helpers import toy_document, toy_encoder, toy_store

WORDS = "notice period payment term party law breach cure days written".split()


@pytest.fixture
def retriever(tmp_path) -> Retriever:
    store = toy_store(tmp_path / "db")
    docs = [toy_document(f"d{i:02d}", " ".join(WORDS[(i + j) % 10] for j in range(4 + i % 5)),
                  seed=i) for i in range(24)]
    store.write(docs, "fp")
    learned = SearchParams(threshold=-1.0, lexical_weight=0.75, size_penalty=2.0,
                           seed_leaves=True)
    encoder = toy_encoder(TrainedWeights(np.zeros((1, 1), np.float32), learned))
    return Retriever(store.uri, encoder=encoder)


def _expected(r: Retriever, q: np.ndarray, query: str, k: int, doc_ids=None):
    """leaves_mode over the documents tree mode would search, computed by hand."""
    docs = r.choose_documents(q, doc_ids, k=k)
    trees = {d: r.tree(d, t) for d, t in r._tree_ids(docs).items()}
    lexical = {d: r.leaf_terms(d, t) for d, t in r._tree_ids(docs).items()}
    ranked = leaves_mode({d: st.tree.vectors[: st.tree.n] for d, st in trees.items()}, q,
                         k=k, params=r.params, query=query, lexical=lexical)
    return [(d, f"{d}:{u}", [tuple(trees[d].spans[u])]) for d, u, _ in ranked]


@pytest.mark.parametrize("doc_ids", [None, ["d03", "d07", "d11"]])
def test_leaves_mode_is_tree_modes_score_over_the_same_documents(retriever, doc_ids):
    rng = np.random.default_rng(0)
    for query in ("notice period", "payment breach", "written cure days"):
        q = rng.normal(size=DIM).astype(np.float32)
        for k in (1, 5, 12):
            hits = retriever.search_vector(query, q, k=k, doc_ids=doc_ids, mode="leaves")
            got = [(h.doc_id, h.node_id, [tuple(s) for s in h.spans]) for h in hits]
            assert got == _expected(retriever, q, query, k, doc_ids)
            assert all(len(h.spans) == 1 for h in hits)  # leaves only
            assert len(hits) == k if doc_ids is None else len(hits) <= k
            if doc_ids:
                assert {h.doc_id for h in hits} <= set(doc_ids)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)


def test_leaves_mode_with_internal_nodes_priced_out_equals_tree_mode(retriever):
    """With the size penalty prohibitive, tree mode returns exactly leaves mode's units."""
    r = Retriever(retriever.store.uri, encoder=retriever.encoder,
                  overrides={"size_penalty": 1e6})
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.normal(size=DIM).astype(np.float32)
        tree = r.search_vector("notice period", q, k=6)
        leaves = r.search_vector("notice period", q, k=6, mode="leaves")
        assert [(h.node_id, h.spans) for h in tree] == [(h.node_id, h.spans) for h in leaves]


def test_unknown_mode_names_the_modes(retriever):
    with pytest.raises(QueryError, match="tree, leaves, flat"):
        retriever.search_vector("q", np.ones(DIM, np.float32), k=3, mode="nodes")
