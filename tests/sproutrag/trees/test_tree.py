"""Tests of sproutrag.trees.tree: sparse single linkage against the paper's naive merge loop and
scipy, tree invariants, damaged trees, bad inputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import linkage

from sproutrag.trees.tree import (
    InvalidTreeError,
    Tree,
    build_tree,
    leaf_order_from_leaf_start,
    single_linkage,
    validate_tree,
)
from tests.helpers import DAMAGE, good_tree, random_relations

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- oracle


def naive_single_linkage(n: int, rel_i, rel_j, rel_m) -> tuple[np.ndarray, np.ndarray]:
    """The paper's O(n^3) loop: merge the active pair with the highest M; the parent's
    relation to r is max(M_ur, M_vr). Relations carry their (i, j) leaf pair so that ties
    are broken by the smallest (min(i, j), max(i, j)), as the fast code does."""
    dense = np.zeros((n, n))
    for a, b, v in zip(rel_i, rel_j, rel_m, strict=True):
        if a != b:
            dense[a, b] = dense[b, a] = max(dense[a, b], v)

    def pair(x: int, y: int) -> tuple[int, int]:
        return (x, y) if x < y else (y, x)

    # key[(u, r)] = (-M_ur, leaf pair realising it); smaller key = stronger relation.
    key = {(u, r): (-dense[u, r], u, r) for u in range(n) for r in range(u + 1, n)}
    active = set(range(n))
    merges, sims = [], []
    for s in range(n - 1):
        u, v = min((p for p in key if p[0] in active and p[1] in active), key=key.__getitem__)
        merges.append((u, v))
        sims.append(-key[(u, v)][0])
        active -= {u, v}
        new = n + s
        for r in active:
            key[pair(new, r)] = min(key[pair(u, r)], key[pair(v, r)])  # max(M_ur, M_vr)
        active.add(new)
    return np.asarray(merges, dtype=np.int32).reshape(-1, 2), np.asarray(sims, np.float32)


relations = st.tuples(
    st.integers(1, 40),
    st.sampled_from(["banded", "sparse", "dense"]),
    st.sampled_from(["continuous", "ties"]),
    st.integers(0, 2**32 - 1),
)


@FAST
@given(relations)
def test_single_linkage_equals_naive_merge_loop(args):
    n, kind, values, seed = args
    i, j, m = random_relations(n, kind, values, seed)
    merges, sims = single_linkage(n, i, j, m)
    want_merges, want_sims = naive_single_linkage(n, i, j, m)
    np.testing.assert_array_equal(merges, want_merges)
    np.testing.assert_array_equal(sims, want_sims)
    assert merges.dtype == np.int32 and sims.dtype == np.float32
    assert merges.shape == (n - 1, 2) and (np.diff(sims) <= 0).all()


def memberships(n: int, merges: np.ndarray) -> list[frozenset]:
    members = [frozenset([k]) for k in range(n)]
    for a, b in merges.astype(int).tolist():
        members.append(members[a] | members[b])
    return members[n:]


@FAST
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_single_linkage_equals_scipy_on_tie_free_input(n, seed):
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(n, k=1)  # scipy's condensed order
    m = rng.uniform(0.0, 1.0, size=len(i))
    dist = 1.0 - m
    assume(len(np.unique(dist)) == len(dist))
    perm = rng.permutation(len(i))
    merges, sims = single_linkage(n, i[perm], j[perm], m[perm])
    z = linkage(dist, method="single")
    np.testing.assert_allclose(1.0 - sims.astype(np.float64), z[:, 2], atol=1e-6)
    assert memberships(n, merges) == memberships(n, z[:, :2])


def test_duplicates_keep_max_and_either_order():
    merges, sims = single_linkage(3, [1, 0, 2, 2], [0, 1, 1, 1], [0.2, 0.7, 0.1, 0.4])
    np.testing.assert_array_equal(merges, [[0, 1], [2, 3]])
    np.testing.assert_allclose(sims, [0.7, 0.4])


def test_components_join_in_document_order_with_zero():
    # components {1, 3}, {0}, {2, 4}: leaf 0 absorbs {1, 3}, then {2, 4}
    merges, sims = single_linkage(5, [1, 2], [3, 4], [0.9, 0.8])
    np.testing.assert_array_equal(merges, [[1, 3], [2, 4], [0, 5], [6, 7]])
    np.testing.assert_allclose(sims, [0.9, 0.8, 0.0, 0.0])


def test_one_leaf():
    merges, sims = single_linkage(1, [], [], [])
    assert merges.shape == (0, 2) and sims.shape == (0,)
    tree = build_tree(np.ones((1, 3), np.float32), [], [], [])
    validate_tree(tree)
    assert tree.n == 1 and tree.root == 0 and tree.leaves_of(0).tolist() == [0]
    assert tree.parent.tolist() == [-1] and tree.height.tolist() == [0]


# --------------------------------------------------------------------------- trees


def dfs_leaf_order(tree: Tree) -> list[int]:
    order, stack = [], [tree.root]
    while stack:
        k = stack.pop()
        if tree.left[k] < 0:
            order.append(k)
        else:
            stack += [int(tree.right[k]), int(tree.left[k])]
    return order


@FAST
@given(relations, st.sampled_from(["mean_of_children", "size_weighted"]))
def test_tree_invariants(args, how):
    n, kind, values, seed = args
    i, j, m = random_relations(n, kind, values, seed)
    vecs = np.random.default_rng(seed).normal(size=(n, 5)).astype(np.float32)
    tree = build_tree(vecs, i, j, m, parent_embedding=how)
    validate_tree(tree)
    assert tree.n == n and tree.vectors.shape == (2 * n - 1, 5)
    np.testing.assert_array_equal(tree.vectors[:n], vecs)
    assert tree.leaf_order.tolist() == dfs_leaf_order(tree)
    assert sorted(tree.leaves_of(tree.root).tolist()) == list(range(n))
    for k in range(n, 2 * n - 1):
        children = np.concatenate([tree.leaves_of(tree.left[k]), tree.leaves_of(tree.right[k])])
        np.testing.assert_array_equal(tree.leaves_of(k), children)


def test_parent_embedding_options():
    rng = np.random.default_rng(0)
    n = 30
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    i, j, m = random_relations(n, "banded", "continuous", 1)
    mean = build_tree(vecs, i, j, m, parent_embedding="mean_of_children")
    sized = build_tree(vecs, i, j, m, parent_embedding="size_weighted")
    for k in range(n, 2 * n - 1):
        u, v = mean.left[k], mean.right[k]
        np.testing.assert_allclose(mean.vectors[k], (mean.vectors[u] + mean.vectors[v]) / 2)
        np.testing.assert_allclose(sized.vectors[k], vecs[sized.leaves_of(k)].mean(axis=0),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="parent_embedding"):
        build_tree(vecs, i, j, m, parent_embedding="max")


@pytest.mark.parametrize("edges", ["chain", "none"])
def test_chain_of_100k_leaves_builds_without_recursion(edges):
    n = 100_000
    if edges == "chain":
        i = np.arange(n - 1)
        rel = (i, i + 1, np.linspace(1.0, 0.5, n - 1))
    else:
        rel = ([], [], [])
    tree = build_tree(np.ones((n, 2), np.float32), *rel)
    validate_tree(tree)
    assert tree.height[tree.root] == n - 1
    # the smaller child id goes left, so each new leaf lands before the chain so far
    want = np.r_[np.arange(n - 1, 1, -1), 0, 1]
    np.testing.assert_array_equal(tree.leaves_of(tree.root), want)


def test_from_columns_round_trip():
    n = 25
    i, j, m = random_relations(n, "banded", "ties", 7)
    tree = build_tree(np.random.default_rng(7).normal(size=(n, 4)), i, j, m)
    cols = {f.name: getattr(tree, f.name) for f in dataclasses.fields(Tree)}
    del cols["leaf_order"]
    cols = {k: (v.astype(np.int64) if v.dtype == np.int32 else v) for k, v in cols.items()}
    back = Tree.from_columns(**cols)
    validate_tree(back)
    for f in dataclasses.fields(Tree):
        a, b = getattr(tree, f.name), getattr(back, f.name)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    with pytest.raises(InvalidTreeError, match="permutation"):
        leaf_order_from_leaf_start(np.zeros(2 * n - 1, np.int32), n)


# --------------------------------------------------------------------------- damage


@pytest.mark.parametrize("problem", list(DAMAGE))
def test_validate_tree_catches_damage(problem):
    tree = good_tree()
    validate_tree(tree, name="doc-1")
    with pytest.raises(InvalidTreeError, match=f"^doc-1: .*{problem}"):
        validate_tree(DAMAGE[problem](tree), name="doc-1")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((3, [0], [3], [0.5]), r"rel_j\[0\] = 3 is out of range"),
        ((3, [-1], [1], [0.5]), r"rel_i\[0\] = -1 is out of range"),
        ((3, [0, 1], [1, 2], [0.5, -0.1]), r"rel_m\[1\] = -0.1"),
        ((3, [0], [1], [float("nan")]), r"rel_m\[0\] = nan"),
        ((3, [0], [1], [float("inf")]), r"rel_m\[0\] = inf"),
        ((3, [0, 1], [1], [0.5]), "same length"),
        ((3, [0.0], [1], [0.5]), "rel_i must hold integers"),
        ((0, [], [], []), "n must be >= 1"),
        ((2.5, [], [], []), "n must be an integer"),
        ((3, [[0]], [[1]], [[0.5]]), "rel_i must be 1-D"),
    ],
)
def test_bad_relations(args, match):
    with pytest.raises(ValueError, match=match):
        single_linkage(*args)


def test_bad_leaf_vectors():
    with pytest.raises(ValueError, match="leaf_vectors must have shape"):
        build_tree(np.zeros((0, 3)), [], [], [])
    with pytest.raises(ValueError, match="leaf_vectors row 1 holds non-finite"):
        build_tree(np.array([[0.0], [np.inf]]), [], [], [])
    with pytest.raises(ValueError, match="out of range for n = 2"):
        build_tree(np.zeros((2, 3)), [0], [2], [0.5])
