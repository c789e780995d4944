"""Attention trees: exact single linkage over a sparse relation graph, as flat arrays.

A document of n leaves (chunks) becomes a binary tree of 2n - 1 nodes in scipy's
linkage numbering: leaves are 0..n-1 (document order), merge step s creates node n + s,
the root is 2n - 2. Every per-node quantity is a flat numpy column (see `Tree`).

The paper's merge loop (merge the active pair with the highest relation M; the parent's
relation to r is max(M_ur, M_vr)) is single-linkage clustering on similarity M, i.e. a
maximum spanning forest taken in Kruskal order. `single_linkage` (`sproutrag.trees.linkage`)
runs it in O(E log E) over the E stored (i, j, m) pairs; absent pairs have similarity 0.
Nothing here recurses: chain-shaped trees of 100k leaves are ordinary input.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sproutrag.errors import InvalidTreeError  # noqa: F401 - also importable from here
from sproutrag.trees.linkage import single_linkage

__all__ = [
    "PARENT_EMBEDDINGS", "InvalidTreeError", "Tree", "build_tree", "leaf_order_from_leaf_start",
    "check_shapes", "single_linkage", "validate_tree",
]

PARENT_EMBEDDINGS = ("mean_of_children", "size_weighted")


# --------------------------------------------------------------------------- tree


@dataclass(frozen=True, eq=False)
class Tree:
    """A dendrogram over 2n - 1 nodes as flat columns (scipy numbering).

    ``left``/``right``: children (-1 for leaves); ``parent``: -1 for the root;
    ``height``: 0 for leaves, 1 + max(children) otherwise; ``n_leaves``: leaves below;
    the node's leaves are ``leaf_order[leaf_start:leaf_end]``; ``merge_sim``: the
    similarity at which the node was formed (NaN for leaves); ``leaf_order``: leaf ids in
    dendrogram order (left subtree first); ``vectors``: float32 (2n - 1, d), leaves as
    given, parents progressive embeddings (not re-normalised).
    """

    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    height: np.ndarray
    n_leaves: np.ndarray
    leaf_start: np.ndarray
    leaf_end: np.ndarray
    merge_sim: np.ndarray
    leaf_order: np.ndarray
    vectors: np.ndarray

    @property
    def n(self) -> int:
        """Number of leaves."""
        return len(self.leaf_order)

    @property
    def root(self) -> int:
        """Id of the root node (2n - 2)."""
        return 2 * self.n - 2

    @cached_property
    def norms(self) -> np.ndarray:
        """L2 norm of every node's vector (computed once per tree; cosines divide by it)."""
        return np.linalg.norm(self.vectors, axis=1)

    def leaves_of(self, node: int) -> np.ndarray:
        """Leaf ids under ``node``, in dendrogram order."""
        return self.leaf_order[self.leaf_start[node] : self.leaf_end[node]]

    @classmethod
    def from_columns(
        cls, left: np.ndarray, right: np.ndarray, parent: np.ndarray, height: np.ndarray,
        n_leaves: np.ndarray, leaf_start: np.ndarray, leaf_end: np.ndarray,
        merge_sim: np.ndarray, vectors: np.ndarray,
    ) -> Tree:
        """Rebuild a tree from stored columns (``leaf_order`` is recovered from leaf_start).

        Columns are cast to the tree's dtypes; call `validate_tree` on the result.
        """
        ints = {
            k: np.asarray(v).astype(np.int32)
            for k, v in dict(left=left, right=right, parent=parent, height=height,
                             n_leaves=n_leaves, leaf_start=leaf_start, leaf_end=leaf_end).items()
        }
        total = len(ints["left"])
        if total % 2 != 1:
            raise InvalidTreeError(f"a tree has an odd number of nodes, got {total}")
        order = leaf_order_from_leaf_start(ints["leaf_start"], (total + 1) // 2)
        return cls(
            **ints,
            merge_sim=np.asarray(merge_sim).astype(np.float32),
            leaf_order=order,
            vectors=np.asarray(vectors).astype(np.float32),
        )


def leaf_order_from_leaf_start(leaf_start: np.ndarray, n: int) -> np.ndarray:
    """Leaf ids in dendrogram order: leaf ``v`` sits at position ``leaf_start[v]``."""
    pos = np.asarray(leaf_start)[:n].astype(np.int64)
    if len(pos) != n or n < 1:
        raise InvalidTreeError(f"leaf_start has {len(pos)} leaf entries, need n = {n} >= 1")
    bad = np.flatnonzero((pos < 0) | (pos >= n))
    if bad.size:
        v = int(bad[0])
        raise InvalidTreeError(f"leaf {v} has leaf_start {int(pos[v])}, outside [0, {n})")
    order = np.full(n, -1, dtype=np.int32)
    order[pos] = np.arange(n, dtype=np.int32)
    if (order < 0).any():
        raise InvalidTreeError(f"leaf_start of the leaves is not a permutation of 0..{n - 1}")
    return order


def _node_columns(n: int, merges: np.ndarray) -> dict[str, np.ndarray]:
    """left, right, parent, height, n_leaves, leaf_start, leaf_end, leaf_order from merges."""
    total = 2 * n - 1
    left = np.full(total, -1, dtype=np.int32)
    right = np.full(total, -1, dtype=np.int32)
    left[n:], right[n:] = merges[:, 0], merges[:, 1]
    parent = np.full(total, -1, dtype=np.int32)
    parent[left[n:]] = parent[right[n:]] = np.arange(n, total, dtype=np.int32)
    height, count = [0] * total, [1] * total
    lefts, rights = merges[:, 0].tolist(), merges[:, 1].tolist()
    # Bottom-up: merge k's children were created before it.
    for k, (u, v) in enumerate(zip(lefts, rights, strict=True), start=n):
        height[k] = 1 + max(height[u], height[v])
        count[k] = count[u] + count[v]
    start = [0] * total
    for k in range(total - 1, n - 1, -1):  # top-down: a parent's id exceeds its children's
        u, v = lefts[k - n], rights[k - n]
        start[u] = start[k]
        start[v] = start[k] + count[u]
    leaf_start = np.asarray(start, dtype=np.int32)
    n_leaves = np.asarray(count, dtype=np.int32)
    # Same order as an iterative DFS from the root taking left children first.
    leaf_order = np.empty(n, dtype=np.int32)
    leaf_order[leaf_start[:n]] = np.arange(n, dtype=np.int32)
    return dict(
        left=left, right=right, parent=parent, height=np.asarray(height, dtype=np.int32),
        n_leaves=n_leaves, leaf_start=leaf_start, leaf_end=leaf_start + n_leaves,
        leaf_order=leaf_order,
    )


def _progressive_vectors(
    leaf_vectors: np.ndarray, merges: np.ndarray, n_leaves: np.ndarray, how: str
) -> np.ndarray:
    """Leaf vectors, then one vector per merge, children before parents."""
    n, d = leaf_vectors.shape
    out = np.empty((2 * n - 1, d), dtype=np.float32)
    out[:n] = leaf_vectors
    weighted = how == "size_weighted"
    counts = n_leaves.tolist()
    for k, (u, v) in enumerate(merges.tolist(), start=n):
        if weighted:
            nu, nv = counts[u], counts[v]
            out[k] = (nu * out[u].astype(np.float64) + nv * out[v]) / (nu + nv)
        else:
            out[k] = (out[u] + out[v]) * np.float32(0.5)
    return out


def build_tree(
    leaf_vectors: np.ndarray,
    rel_i: np.ndarray,
    rel_j: np.ndarray,
    rel_m: np.ndarray,
    *,
    parent_embedding: str = "mean_of_children",
) -> Tree:
    """Build a document's attention tree from its chunk vectors and sparse relations.

    ``parent_embedding``: "mean_of_children" is the paper's (e_u + e_v) / 2;
    "size_weighted" is (n_u e_u + n_v e_v) / (n_u + n_v), the mean of the node's leaves.
    Parent vectors are not re-normalised (cosine search normalises).
    """
    if parent_embedding not in PARENT_EMBEDDINGS:
        raise ValueError(
            f"parent_embedding must be one of {PARENT_EMBEDDINGS}, got {parent_embedding!r}"
        )
    vecs = np.asarray(leaf_vectors)
    if vecs.ndim != 2 or vecs.shape[0] < 1 or vecs.shape[1] < 1:
        raise ValueError(f"leaf_vectors must have shape (n >= 1, d >= 1), got {vecs.shape}")
    vecs = vecs.astype(np.float32, copy=False)
    finite = np.isfinite(vecs).all(axis=1)
    if not finite.all():
        raise ValueError(f"leaf_vectors row {int(np.argmin(finite))} holds non-finite values")
    n = vecs.shape[0]
    merges, sims = single_linkage(n, rel_i, rel_j, rel_m)
    cols = _node_columns(n, merges)
    merge_sim = np.full(2 * n - 1, np.nan, dtype=np.float32)
    merge_sim[n:] = sims
    vectors = _progressive_vectors(vecs, merges, cols["n_leaves"], parent_embedding)
    return Tree(**cols, merge_sim=merge_sim, vectors=vectors)


# --------------------------------------------------------------------------- validation


def _fail(name: str, msg: str) -> None:
    raise InvalidTreeError(f"{name}: {msg}")


def check_shapes(tree: Tree, name: str) -> int:
    """The number of leaves of TREE; `InvalidTreeError` naming NAME unless every column
    has its dtype and shape (what the other checks rely on)."""
    total = len(np.asarray(tree.left))
    if total < 1 or total % 2 != 1:
        _fail(name, f"a tree has an odd number >= 1 of nodes, got {total}")
    n = (total + 1) // 2
    int_cols = ("left", "right", "parent", "height", "n_leaves", "leaf_start", "leaf_end")
    for col in (*int_cols, "merge_sim", "leaf_order"):
        arr = getattr(tree, col)
        want = np.float32 if col == "merge_sim" else np.int32
        size = n if col == "leaf_order" else total
        if not isinstance(arr, np.ndarray) or arr.dtype != want:
            _fail(name, f"{col} must be a {np.dtype(want)} array, got {type(arr).__name__}"
                  f"{'' if not isinstance(arr, np.ndarray) else ' of ' + str(arr.dtype)}")
        if arr.shape != (size,):
            _fail(name, f"{col} must have shape ({size},), got {arr.shape}")
    v = tree.vectors
    if not isinstance(v, np.ndarray) or v.dtype != np.float32 or v.ndim != 2:
        _fail(name, "vectors must be a 2-D float32 array")
    if v.shape[0] != total or v.shape[1] < 1:
        _fail(name, f"vectors must have shape ({total}, d >= 1), got {v.shape}")
    return n


def _check_children(tree: Tree, name: str, n: int) -> None:
    total = 2 * n - 1
    if (tree.left[:n] != -1).any() or (tree.right[:n] != -1).any():
        leaf = int(np.flatnonzero((tree.left[:n] != -1) | (tree.right[:n] != -1))[0])
        _fail(name, f"leaf {leaf} has children ({tree.left[leaf]}, {tree.right[leaf]})")
    ids = np.arange(n, total)
    for col in ("left", "right"):
        child = getattr(tree, col)[n:]
        bad = np.flatnonzero((child < 0) | (child >= ids))
        if bad.size:
            k = int(bad[0]) + n
            _fail(name, f"node {k} uses {col} child {getattr(tree, col)[k]} before it exists "
                  f"(children must have ids in [0, {k}))")
    bad = np.flatnonzero(tree.left[n:] >= tree.right[n:])
    if bad.size:
        k = int(bad[0]) + n
        _fail(name, f"node {k} has left {tree.left[k]} >= right {tree.right[k]}")
    uses = np.bincount(np.concatenate([tree.left[n:], tree.right[n:]]), minlength=total)
    if (uses > 1).any():
        c = int(np.flatnonzero(uses > 1)[0])
        _fail(name, f"node {c} is used as a child {int(uses[c])} times")
    expect = np.full(total, -1, dtype=np.int32)
    expect[tree.left[n:]] = expect[tree.right[n:]] = ids
    if (tree.parent != expect).any():
        k = int(np.flatnonzero(tree.parent != expect)[0])
        _fail(name, f"node {k} has parent {tree.parent[k]}, its children say {expect[k]}")


def _check_counts(tree: Tree, name: str, n: int) -> None:
    lc, rc = tree.left[n:], tree.right[n:]
    for col, leaf_value, combine in (
        ("n_leaves", 1, lambda a, b: a + b),
        ("height", 0, lambda a, b: 1 + np.maximum(a, b)),
    ):
        arr = getattr(tree, col).astype(np.int64)
        if (arr[:n] != leaf_value).any():
            k = int(np.flatnonzero(arr[:n] != leaf_value)[0])
            _fail(name, f"leaf {k} has {col} {arr[k]}, expected {leaf_value}")
        want = combine(arr[lc], arr[rc])
        if (arr[n:] != want).any():
            k = int(np.flatnonzero(arr[n:] != want)[0])
            _fail(name, f"node {k + n} has {col} {arr[k + n]}, its children give {want[k]}")


def _check_leaf_ranges(tree: Tree, name: str, n: int) -> None:
    s, e, root = tree.leaf_start, tree.leaf_end, 2 * n - 2
    if (e - s != tree.n_leaves).any():
        k = int(np.flatnonzero(e - s != tree.n_leaves)[0])
        _fail(name, f"node {k} has leaf range [{s[k]}, {e[k]}) but {tree.n_leaves[k]} leaves")
    if s[root] != 0 or e[root] != n:
        _fail(name, f"root {root} has leaf range [{s[root]}, {e[root]}), expected [0, {n})")
    lc, rc = tree.left[n:], tree.right[n:]
    nested = (s[lc] == s[n:]) & (e[lc] == s[rc]) & (e[rc] == e[n:])
    if not nested.all():
        k = int(np.flatnonzero(~nested)[0]) + n
        _fail(name, f"leaf ranges of node {k}'s children do not tile [{s[k]}, {e[k]})")
    order = tree.leaf_order
    if not np.array_equal(np.sort(order), np.arange(n)):
        _fail(name, f"leaf_order is not a permutation of 0..{n - 1}")
    mism = order[s[:n]] != np.arange(n)
    if mism.any():
        v = int(np.flatnonzero(mism)[0])
        _fail(name, f"leaf {v} has leaf_start {s[v]} but leaf_order[{s[v]}] = {order[s[v]]}")


def validate_tree(tree: Tree, *, name: str = "tree") -> None:
    """Raise `InvalidTreeError` naming ``name`` and the first problem found, if any.

    Checks array types and shapes, children (existing before their parent, used once,
    smaller id left), parents, n_leaves, height, nested contiguous leaf ranges, leaf_order,
    merge_sim (NaN exactly on leaves) and finite vectors.
    """
    n = check_shapes(tree, name)
    _check_children(tree, name, n)
    _check_counts(tree, name, n)
    _check_leaf_ranges(tree, name, n)
    sim = tree.merge_sim
    if not np.isnan(sim[:n]).all() or not np.isfinite(sim[n:]).all():
        _fail(name, "merge_sim must be NaN for leaves and finite for internal nodes")
    if not np.isfinite(tree.vectors).all():
        k = int(np.flatnonzero(~np.isfinite(tree.vectors).all(axis=1))[0])
        _fail(name, f"vectors row {k} holds non-finite values")
