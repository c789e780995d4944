"""Document and section evidence in the score (issue 29): the document prior, the
ancestors' mean, and diversity across documents, each against a reference written apart
from the library."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sproutrag.params import SearchParams
from sproutrag.search.hierarchy import (
    ancestor_means,
    best_first,
    document_scores,
    hierarchical_scores,
)
from sproutrag.search.lexical import LeafTerms, bm25_documents
from sproutrag.search.node_scores import node_scores
from sproutrag.search.tree_search import leaves_mode, search_trees, select_evidence
from sproutrag.trees.tree import build_tree


def _chain_tree(vecs: np.ndarray):
    """A tree merging leaves left to right: ((0, 1), 2), 3) ..."""
    n = len(vecs)
    i = np.arange(n - 1, dtype=np.int64)
    return build_tree(vecs.astype(np.float32), i, i + 1,
                      np.linspace(1.0, 0.1, n - 1).astype(np.float32))


def _random_tree(n: int, seed: int, d: int = 6):
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, d)).astype(np.float32)
    i = np.arange(max(n - 1, 0), dtype=np.int64)
    ri = np.concatenate([i, i[:-2]]) if n > 2 else i
    rj = np.concatenate([i + 1, i[:-2] + 2]) if n > 2 else i + 1
    return build_tree(vecs, ri, rj, rng.uniform(0.01, 1.0, len(ri)).astype(np.float32))


def _ancestors_reference(tree, rank: np.ndarray) -> np.ndarray:
    """Walk up from every node through its parents, skipping the root."""
    out = np.zeros(len(rank))
    for x in range(len(rank)):
        seen, p = [], int(tree.parent[x])
        while p >= 0:
            if p != tree.root:
                seen.append(rank[p])
            p = int(tree.parent[p])
        out[x] = np.mean(seen) if seen else 0.0
    return out


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 10_000))
def test_ancestor_means_walk_the_parents_below_the_root(n, seed):
    tree, _ = _random_tree(n, seed), None
    rank = np.random.default_rng(seed).normal(size=2 * n - 1)
    assert np.allclose(ancestor_means(tree, rank), _ancestors_reference(tree, rank))


def test_ancestor_means_of_a_chain():
    tree = _chain_tree(np.eye(4, 6))
    rank = np.arange(7, dtype=np.float64)  # leaves 0-3, then nodes 4 = (0, 1), 5, 6 = root
    got = ancestor_means(tree, rank)
    assert got[6] == 0 and got[5] == 0 and got[3] == 0  # the root and its children
    assert got[4] == 5.0 and got[2] == 5.0  # under node 5 only
    assert got[0] == got[1] == 4.5  # under nodes 4 and 5


def test_document_prior_ranks_whole_documents_and_is_zero_alone():
    q = np.array([1.0, 0.0, 0.0], np.float32)
    near = np.array([[1.0, 0.1, 0.0], [0.9, 0.3, 0.0]], np.float32)
    far = np.array([[0.0, 1.0, 0.0], [0.1, 0.0, 1.0]], np.float32)
    assert document_scores({"a": near}, q) == {"a": 0.0}
    got = document_scores({"a": near, "b": far}, q)
    assert got["a"] > 0 > got["b"] and got["a"] == pytest.approx(-got["b"])
    # the lexical part: the documents are the collection, whole texts the units
    terms = {"a": LeafTerms.of(["payment terms", "net days"]),
             "b": LeafTerms.of(["governing law", "venue"])}
    lex = document_scores({"a": far, "b": far}, q, query="payment", lexical=terms,
                          lexical_weight=1.0)
    assert lex["a"] > 0 > lex["b"]
    assert bm25_documents("payment", list(terms.values()))[1] == 0.0


def test_hierarchical_scores_add_the_prior_and_keep_cosines():
    rng = np.random.default_rng(0)
    trees = {d: _chain_tree(rng.normal(size=(5, 6))) for d in ("a", "b", "c")}
    q = rng.normal(size=6).astype(np.float32)
    raw = node_scores(trees, q)
    assert hierarchical_scores(trees, raw, SearchParams(), q) is raw  # off: untouched
    p = SearchParams(doc_weight=0.5, ancestor_weight=0.25)
    got = hierarchical_scores(trees, raw, p, q)
    prior = document_scores({d: t.vectors[: t.n] for d, t in trees.items()}, q)
    for d, t in trees.items():
        want = raw[d].rank + 0.5 * prior[d] + 0.25 * _ancestors_reference(t, raw[d].rank)
        assert np.allclose(got[d].rank, want)
        assert got[d].cosine is raw[d].cosine


def _two_documents():
    """Document "a" holds five near-matches of the query, "b" one good unit a little
    below them: the case of a question that needs two documents."""
    q = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    a = np.array([[1.0, 0.05 * i, 0.0, 0.0] for i in range(1, 6)], np.float32)
    b = np.array([[1.0, 0.4, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]],
                 np.float32)
    return q, {"a": _chain_tree(a), "b": _chain_tree(b)}


def test_diversity_keeps_room_for_the_second_document():
    q, trees = _two_documents()
    base = SearchParams(seed_leaves=True, size_penalty=10.0)
    alone = search_trees(trees, q, k=3, params=base)
    assert {s.doc_id for s in alone} == {"a"}  # each unit scored alone: "a" takes all k
    diverse = search_trees(trees, q, k=3, params=SearchParams(
        seed_leaves=True, size_penalty=10.0, doc_diversity=1.0))
    assert {s.doc_id for s in diverse} == {"a", "b"}
    assert diverse[0].doc_id == "a" and sum(len(s.leaves) for s in diverse) == 3
    ranked = leaves_mode({d: t.vectors[: t.n] for d, t in trees.items()}, q, k=3,
                         params=SearchParams(doc_diversity=1.0))
    assert [d for d, _, _ in ranked][:2] == ["a", "b"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 12), lam=st.floats(0.0, 3.0))
def test_select_evidence_with_diversity_is_greedy_on_the_penalised_score(seed, k, lam):
    """Reference: repeatedly take the candidate with the best score - lambda x (units
    taken from its document), skipping overlaps and what does not fit."""
    rng = np.random.default_rng(seed)
    trees = {d: _random_tree(int(rng.integers(1, 8)), seed + i) for i, d in enumerate("abc")}
    cands = [(d, x, float(rng.normal())) for d, t in trees.items()
             for x in range(2 * t.n - 1)]
    got = select_evidence(trees, cands, k=k, diversity=lam)
    taken = {d: set() for d in trees}
    left, budget, want = list(cands), k, []
    while left and budget:
        left.sort(key=lambda c: (-(c[2] - lam * len(taken[c[0]])), c[0], c[1]))
        d, x, s = left.pop(0)
        leaves = set(trees[d].leaves_of(x).tolist())
        if len(leaves) > budget or leaves & taken[d]:
            continue
        taken[d] |= leaves
        budget -= len(leaves)
        want.append((d, x))
    assert [(s.doc_id, s.node) for s in got] == want
    assert sum(len(s.leaves) for s in got) <= k


def test_one_document_is_unchanged_by_prior_and_diversity():
    rng = np.random.default_rng(3)
    trees = {"only": _random_tree(30, 3)}
    q = rng.normal(size=6).astype(np.float32)
    base = SearchParams(seed_leaves=True)
    on = SearchParams(seed_leaves=True, doc_weight=2.0, doc_diversity=1.0)
    for k in (1, 3, 5, 10):
        a = search_trees(trees, q, k=k, params=base)
        b = search_trees(trees, q, k=k, params=on)
        assert [(s.doc_id, s.node) for s in a] == [(s.doc_id, s.node) for s in b]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 20),
                          st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, -1.0])),
                unique_by=lambda c: c[:2], max_size=40))
def test_best_first_without_diversity_is_the_sorted_order(candidates):
    # scores often tie: then the smaller (doc_id, node) comes first
    expected = sorted(candidates, key=lambda c: (-c[2], c[0], c[1]))
    assert list(best_first(candidates, 0.0, {})) == expected
