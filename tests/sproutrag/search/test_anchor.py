"""A corpus-wide query's statistics from the first stage's leading documents
(`node_scores.anchor_documents`): the leading document ranks its own nodes as it would
alone, whatever look-alike documents follow it (no model)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.search.lexical import LeafTerms
from sproutrag.search.node_scores import anchor_documents, node_scores
from sproutrag.trees.tree import build_tree


def test_the_leading_documents_until_they_hold_the_leaves():
    leaves = {"a": 40, "b": 3, "c": 3, "d": 50}
    assert anchor_documents(["a", "b", "c", "d"], leaves, 32) == ["a"]
    assert anchor_documents(["b", "c", "a", "d"], leaves, 32) == ["b", "c", "a"]
    assert anchor_documents(["b", "c", "a", "d"], leaves, 6) == ["b", "c"]
    assert anchor_documents(["b", "c"], leaves, 32) is None  # every document needed
    assert anchor_documents(["a", "d"], leaves, 0) is None  # 0: off
    assert anchor_documents([], leaves, 32) is None


def _doc(rng, texts: list[str]):
    vecs = rng.normal(size=(len(texts), 8)).astype(np.float32)
    n = len(texts)
    ri, rj = np.arange(n - 1), np.arange(1, n)
    tree = build_tree(vecs, ri, rj, np.full(n - 1, 0.5, np.float32))
    return tree, LeafTerms.of(texts)


@pytest.mark.parametrize("weight", [0.0, 0.75])
def test_the_leading_document_scores_its_nodes_as_alone(weight):
    rng = np.random.default_rng(3)
    gold = _doc(rng, ["notice period of thirty days", "payment is due", "the law of Delaware",
                      "notice in writing", "cure within ten days"])
    looks = [_doc(rng, ["notice period notice", "notice of payment"]) for _ in range(4)]
    trees = {"gold": gold[0], **{f"l{i}": t for i, (t, _) in enumerate(looks)}}
    terms = {"gold": gold[1], **{f"l{i}": x for i, (_, x) in enumerate(looks)}}
    q = rng.normal(size=8).astype(np.float32)
    kw = {"query": "notice period", "lexical": terms, "lexical_weight": weight}
    alone = node_scores({"gold": gold[0]}, q, **kw)["gold"]
    anchored = node_scores(trees, q, anchor=["gold"], **kw)
    np.testing.assert_allclose(anchored["gold"].rank, alone.rank)
    np.testing.assert_array_equal(anchored["gold"].cosine, alone.cosine)
    shared = node_scores(trees, q, **kw)
    if weight:  # today's statistics: the look-alikes change how gold ranks its nodes
        assert not np.allclose(shared["gold"].rank, alone.rank)
    every = node_scores(trees, q, anchor=list(trees), **kw)
    for d in trees:
        np.testing.assert_array_equal(every[d].rank, shared[d].rank)


def test_the_retriever_checks_anchor_leaves(tmp_path):
    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.params import SearchParams
    from sproutrag.search.retriever import QueryError, Retriever
    from tests.helpers import toy_document, toy_encoder, toy_store

    store = toy_store(tmp_path / "db")
    store.write([toy_document("d0", "notice period payment")], "fp")
    encoder = toy_encoder(TrainedWeights(np.zeros((1, 1), np.float32), SearchParams()))
    with pytest.raises(QueryError, match="anchor_leaves"):
        Retriever(store.uri, encoder=encoder, anchor_leaves=-1)
    with pytest.raises(QueryError, match="link_weight"):  # before any database is opened
        Retriever(str(store.uri) + "-not-there", encoder=encoder, link_weight=float("nan"))
    assert Retriever(store.uri, encoder=encoder, anchor_leaves=0).anchor_leaves == 0
