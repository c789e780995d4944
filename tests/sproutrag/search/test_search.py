from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sproutrag.search.tree_search import (
    beam_search,
    cosine_scores,
    forest_beam_search,
    select_evidence,
    tree_candidates,
)
from sproutrag.trees.tree import build_tree


def _random_tree(n: int, seed: int, d: int = 8):
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, d)).astype(np.float32)
    i = np.arange(max(n - 1, 0), dtype=np.int64)
    ri = np.concatenate([i, i[:-2]]) if n > 2 else i
    rj = np.concatenate([i + 1, i[:-2] + 2]) if n > 2 else i + 1
    rm = rng.uniform(0.01, 1.0, size=len(ri)).astype(np.float32)
    return build_tree(vecs, ri, rj, rm), rng.normal(size=d).astype(np.float32)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 10_000), delta=st.floats(-1, 0.6))
def test_full_width_beam_equals_brute_force(n, seed, delta):
    tree, q = _random_tree(n, seed)
    found = beam_search(tree, q, beam_width=2 * n, threshold=delta)
    scores = cosine_scores(tree.vectors, q)
    expected = set(np.flatnonzero(scores >= delta).tolist())
    assert set(found.nodes.tolist()) == expected
    assert np.allclose(found.scores, scores[found.nodes])


def _one_tree_beam(tree, scores, width):
    """The paper's beam search, one tree, one level at a time, written out plainly."""
    beam, scored = [tree.root], {tree.root}
    while True:
        children = [c for x in beam if tree.left[x] >= 0 for c in (tree.left[x], tree.right[x])]
        if not children:
            return scored
        scored.update(int(c) for c in children)
        beam = sorted(children, key=lambda c: -scores[c])[:width]


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6),
       seed=st.integers(0, 10_000), width=st.integers(1, 6))
def test_forest_beam_search_is_each_trees_own_beam(sizes, seed, width):
    made = [_random_tree(n, seed + i) for i, n in enumerate(sizes)]
    trees = [t for t, _ in made]
    q = made[0][1]
    scores = [cosine_scores(t.vectors, q, t.norms) for t in trees]
    found = forest_beam_search(trees, scores, beam_width=width)
    assert len(found) == len(trees)
    for tree, s, nodes in zip(trees, scores, found):
        assert len(set(nodes.tolist())) == len(nodes)  # no node twice
        assert set(nodes.tolist()) == _one_tree_beam(tree, s, width)
        assert np.allclose(tree.norms, np.linalg.norm(tree.vectors, axis=1))
    assert forest_beam_search([], [], beam_width=width) == []
    with pytest.raises(ValueError, match="beam_width"):
        forest_beam_search(trees, scores, beam_width=0)


def test_narrow_beam_follows_the_best_children():
    tree, q = _random_tree(40, 3)
    found = beam_search(tree, q, beam_width=1, threshold=-1.0)
    scores = cosine_scores(tree.vectors, q)
    node = tree.root
    path = [node]
    while tree.left[node] >= 0:
        kids = [tree.left[node], tree.right[node]]
        node = max(kids, key=lambda c: scores[c])
        path.append(node)
    assert set(path) <= set(found.nodes.tolist())


def test_chain_of_100k_leaves_does_not_recurse():
    n = 100_000
    vecs = np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32)
    i = np.arange(n - 1)
    # decreasing similarity along the document: a chain-shaped tree
    tree = build_tree(vecs, i, i + 1, np.linspace(1.0, 0.1, n - 1).astype(np.float32))
    assert tree.height[tree.root] == n - 1
    found = beam_search(tree, vecs[-1], beam_width=5, threshold=-1.0)
    assert found.nodes.size > n  # every level was visited


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 50), seed=st.integers(0, 10_000), k=st.integers(1, 12))
def test_budget_never_exceeds_k_and_never_repeats_a_leaf(n, seed, k):
    tree, q = _random_tree(n, seed)
    found = beam_search(tree, q, beam_width=2 * n, threshold=-1.0)
    chosen = select_evidence(
        {"d": tree}, [("d", int(a), float(s)) for a, s in zip(found.nodes, found.scores)], k=k
    )
    leaves = np.concatenate([c.leaves for c in chosen]) if chosen else np.zeros(0)
    assert len(leaves) <= k
    assert len(set(leaves.tolist())) == len(leaves)
    assert [c.score for c in chosen] == sorted((c.score for c in chosen), reverse=True)
    # with every node a candidate, the whole budget (up to n leaves) is spent: leaves fit
    assert len(leaves) == min(k, n)


def test_candidate_too_big_is_passed_over_and_overlap_skipped():
    vecs = np.eye(4, dtype=np.float32)
    tree = build_tree(vecs, np.array([0, 2, 1]), np.array([1, 3, 2]),
                      np.array([0.9, 0.8, 0.1], dtype=np.float32))
    root, left_pair = tree.root, 4  # node 4 = {0, 1}, node 5 = {2, 3}
    cands = [("d", root, 0.99), ("d", left_pair, 0.9), ("d", 0, 0.8), ("d", 2, 0.7)]
    chosen = select_evidence({"d": tree}, cands, k=3)
    assert [c.node for c in chosen] == [left_pair, 2]  # root (4 leaves) too big; 0 overlaps
    with pytest.raises(ValueError, match="k must be"):
        select_evidence({"d": tree}, cands, k=0)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 10_000), margin=st.floats(0, 0.5))
def test_margin_keeps_the_best_leaf_and_only_groups_that_each_pass(n, seed, margin):
    tree, q = _random_tree(n, seed)
    other, q2 = _random_tree(max(1, n // 2), seed + 1)
    trees = {"a": tree, "b": other}
    plain = tree_candidates(trees, q, beam_width=3, threshold=-1.0)
    expected = [("a", int(x), float(s)) for x, s in zip(
        *(lambda c: (c.nodes, c.scores))(beam_search(tree, q, beam_width=3, threshold=-1.0)))]
    assert sorted(plain[: len(expected)]) == sorted(expected)  # no margin: the beam's
    assert {d for d, _, _ in plain[len(expected):]} <= {"b"}  # candidates, tree by tree
    cut = tree_candidates(trees, q, beam_width=3, threshold=-1.0, margin=margin)
    assert set(cut) <= set(plain)
    leaf_best = max(s for d, x, s in plain if trees[d].left[x] < 0)
    assert any(s == leaf_best for _, _, s in cut)  # the best leaf always survives
    for d, x, s in cut:
        t = trees[d]
        leaf_scores = cosine_scores(t.vectors, q)[t.leaves_of(x)]
        assert s >= leaf_best - margin - 1e-6
        assert leaf_scores.min() >= leaf_best - margin - 1e-6
    wide = tree_candidates(trees, q, beam_width=3, threshold=-1.0, margin=2.0)
    assert wide == plain


def test_margin_zero_returns_single_best_unit():
    vecs = np.eye(4, dtype=np.float32)
    tree = build_tree(vecs, np.array([0, 2, 1]), np.array([1, 3, 2]),
                      np.array([0.9, 0.8, 0.1], dtype=np.float32))
    q = np.array([1.0, 0.5, 0.0, 0.0], dtype=np.float32)
    cands = tree_candidates({"d": tree}, q, beam_width=5, threshold=0.0, margin=0.0)
    assert [(d, x) for d, x, _ in cands] == [("d", 0)]
    # nothing reaches delta: no candidates, margin or not
    assert tree_candidates({"d": tree}, q, beam_width=5, threshold=0.99, margin=0.1) == []


def test_lexical_fusion_standardises_over_leaves():
    from sproutrag.search.lexical import LeafTerms, bm25_nodes
    from sproutrag.search.tree_search import node_scores

    tree, q = _random_tree(6, 7)
    terms = LeafTerms.of(["notice", "payment", "notice period", "x", "y", "z"])
    plain = node_scores({"d": tree}, q)["d"]
    np.testing.assert_allclose(plain.rank, plain.cosine)  # w = 0: cosine itself
    fused = node_scores({"d": tree}, q, query="notice period", lexical={"d": terms},
                        lexical_weight=0.5)["d"]
    cos, lex = plain.cosine.astype(np.float64), bm25_nodes("notice period", [terms], [tree])[0]
    zc = (cos - cos[:6].mean()) / cos[:6].std()
    zl = (lex - lex[:6].mean()) / lex[:6].std()
    np.testing.assert_allclose(fused.rank, zc + 0.5 * zl, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="LeafTerms"):
        node_scores({"d": tree}, q, query="notice", lexical_weight=0.5)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 60), seed=st.integers(0, 10_000), k=st.integers(1, 6))
def test_seeded_search_never_misses_the_best_leaves(n, seed, k):
    from sproutrag.params import SearchParams
    from sproutrag.search.tree_search import search_trees

    tree, q = _random_tree(n, seed)
    greedy = SearchParams(beam_width=1, threshold=-1.0, seed_leaves=True, size_penalty=100.0)
    chosen = search_trees({"d": tree}, q, k=k, params=greedy)
    leaves = np.concatenate([c.leaves for c in chosen])
    scores = cosine_scores(tree.vectors, q)[: tree.n]
    best = np.argsort(-scores, kind="stable")[: min(k, n)]
    # internal nodes priced out: exactly the top-k leaves, as flat retrieval finds them
    assert set(leaves.tolist()) == set(best.tolist())


def test_size_penalty_decides_between_a_node_and_its_leaves():
    from sproutrag.params import SearchParams
    from sproutrag.search.tree_search import search_trees

    vecs = np.eye(4, dtype=np.float32)
    tree = build_tree(vecs, np.array([0, 2, 1]), np.array([1, 3, 2]),
                      np.array([0.9, 0.8, 0.1], dtype=np.float32))
    q = np.array([1.0, 0.9, 0.0, 0.0], dtype=np.float32)  # node {0,1} 0.999, leaf 0 0.743
    free = search_trees({"d": tree}, q, k=2, params=SearchParams())
    assert [c.node for c in free] == [4]  # the node {0, 1} as one hit
    priced = search_trees({"d": tree}, q, k=2, params=SearchParams(size_penalty=0.3))
    assert [c.node for c in priced] == [0, 1]  # 0.999 - 0.3 < 0.743: its leaves win
    with pytest.raises(ValueError, match="lexical_weight"):
        SearchParams(lexical_weight=-1)
    with pytest.raises(ValueError, match="beam_width"):
        SearchParams(beam_width=0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 10_000), k=st.integers(1, 6),
       w=st.sampled_from([0.0, 0.5, 1.0]))
def test_leaves_mode_ranks_by_tree_modes_own_score(n, seed, k, w):
    """Leaves mode is tree mode's fused score with no tree: when the size penalty prices
    every internal node out (and seeds make the best leaves candidates), tree mode picks
    exactly the leaves that leaves mode ranks first, in the same order and scores."""
    from sproutrag.params import SearchParams
    from sproutrag.search.lexical import LeafTerms
    from sproutrag.search.tree_search import leaves_mode, search_trees

    tree, q = _random_tree(n, seed)
    words = ["notice", "period", "payment", "term", "party", "law"]
    texts = [" ".join(words[(seed + u * j) % 6] for j in range(1 + u % 3)) for u in range(n)]
    lexical = {"d": LeafTerms.of(texts)}
    params = SearchParams(beam_width=2, threshold=-1.0, lexical_weight=w, seed_leaves=True,
                          size_penalty=1e6)
    tree_hits = search_trees({"d": tree}, q, k=k, params=params, query="notice period",
                             lexical=lexical)
    leaf_hits = leaves_mode({"d": tree.vectors[: tree.n]}, q, k=k, params=params,
                            query="notice period", lexical=lexical)
    assert [(c.doc_id, c.node) for c in tree_hits] == [(d, u) for d, u, _ in leaf_hits]
    # float32 cosines of the whole tree and of its leaf rows may differ in the last bit
    np.testing.assert_allclose([c.score for c in tree_hits], [s for _, _, s in leaf_hits],
                               rtol=1e-5, atol=1e-6)


def test_leaves_mode_keeps_tree_modes_cutoffs():
    from sproutrag.params import SearchParams
    from sproutrag.search.tree_search import leaves_mode

    vecs = np.eye(3, dtype=np.float32)
    q = np.array([1.0, 0.5, -1.0], dtype=np.float32)  # cosines 0.67, 0.33, -0.67
    ranked = leaves_mode({"d": vecs}, q, k=3, params=SearchParams(), fill=False)  # delta 0
    assert [u for _, u, _ in ranked] == [0, 1]  # the negative cosine is cut, as in tree mode
    ranked = leaves_mode({"d": vecs}, q, k=3, params=SearchParams(threshold=-1.0, margin=0.4),
                         fill=False)
    assert [u for _, u, _ in ranked] == [0, 1]  # within 0.4 of the best leaf
    # filled (the default): the cutoffs order, what they drop follows up to k
    assert [u for _, u, _ in leaves_mode({"d": vecs}, q, k=3, params=SearchParams())] == [
        0, 1, 2]
    assert [u for _, u, _ in leaves_mode({"d": vecs}, q, k=2, params=SearchParams())] == [
        0, 1]
