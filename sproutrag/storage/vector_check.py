"""Do a stored tree's vectors agree with each other? (`sproutrag check`, `index --verify`)

Every internal node of a tree holds the mean of its two children's vectors (the paper's
(e_u + e_v) / 2, or weighted by their leaves: `trees.tree.build_tree`) and every leaf the
encoder's L2-normalised vector (zeros for a chunk no window holds). A value changed in
place in a data file, one that leaves the file readable (a disk fault, a bad restore),
breaks one of these: the changed leaf is no longer of unit length, or its parent is no
longer the mean of its children (a changed internal node: it and its parent both).

The vectors are not kept while `nodes` is read (one batch at a time): `projections`
keeps per row two fixed random projections of its vector and its length, and
`first_disagreement` checks the means on them (a mean's projection is the mean of the
projections). A change is seen unless it is orthogonal to both directions (a measure-zero
set: no fault lands there) or too small to tell from float32 rounding. A leaf's change
reaches its parent's mean divided by the parent's leaves (size-weighted means), so a
leaf is checked by its length too; what no check sees is a leaf of a one-leaf tree
changed to another vector of unit length. Costs 12 bytes per `nodes` row (each
projection summed in float64, kept in float32: 6e-8 of rounding) and one product per
batch of vectors.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: What `projections` keeps per row, and its dtype.
KEPT = {"proj0": np.float32, "proj1": np.float32, "norm": np.float32}
#: The largest difference of a projection from the children's mean that float32 rounding
#: explains (a parent is rounded once to float32, about 6e-8 of a vector of unit length at
#: most; the children's mean it is compared with is computed from the stored children).
TOLERANCE = 2e-6
#: How far from 1 a leaf's length may be (the encoder normalises in float32: about 1e-7).
NORM_TOLERANCE = 1e-4
_SEED = 20261130


def _directions(dim: int) -> np.ndarray:
    """(dim, 2) fixed random unit directions (the same in every process)."""
    d = np.random.default_rng(_SEED).standard_normal((dim, 2))
    return d / np.linalg.norm(d, axis=0)


def projections(column: pa.Array) -> dict[str, np.ndarray]:
    """Per row of a vector COLUMN (fixed-size lists): its projections on the two
    directions and its length (NaN where the vector is null or not finite)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n, dim = len(column), column.type.list_size
    if dim < 1 or n == 0:
        empty = np.full(n, np.nan)
        return {"proj0": empty, "proj1": empty, "norm": empty.astype(np.float32)}
    values = column.values.slice(column.offset * dim, n * dim)
    if values.null_count:
        values = pc.fill_null(values, float("nan"))
    vectors = values.to_numpy(zero_copy_only=False).reshape(n, dim)
    with np.errstate(invalid="ignore", over="ignore"):  # a non-finite vector: NaN
        proj = np.dot(vectors, _directions(dim))  # summed in float64: rounding of 1e-16
        norm = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))  # float32: 1e-7 is enough
    if column.null_count:
        null = ~column.is_valid().to_numpy(zero_copy_only=False)
        proj[null], norm[null] = np.nan, np.nan
    return {"proj0": proj[:, 0], "proj1": proj[:, 1], "norm": norm.astype(np.float32)}


def first_disagreement(cols: dict[str, np.ndarray], tree: np.ndarray, starts: np.ndarray,
                       skip: np.ndarray) -> np.ndarray:
    """Per tree, the first node (by idx) whose vector disagrees with its tree's, or -1.

    COLS: the flat rows of every tree in idx order (``left``, ``right``, ``n_leaves`` and
    `KEPT`); TREE: each row's tree; STARTS: each tree's first row; SKIP: per tree, not to
    be checked (an invalid tree, whose children cannot be trusted)."""
    out = np.full(len(starts), -1, dtype=np.int64)
    if not len(tree):
        return out
    base = starts[tree]
    checked = ~skip[tree]
    left, right = cols["left"].astype(np.int64), cols["right"].astype(np.int64)
    leaf = checked & (left < 0)
    norm = cols["norm"]
    wrong = leaf & ~((np.abs(norm - 1) <= NORM_TOLERANCE) | (norm == 0))
    k = np.flatnonzero(checked & (left >= 0))
    lk, rk = base[k] + left[k], base[k] + right[k]
    proj = np.stack([cols["proj0"], cols["proj1"]], axis=1).astype(np.float64)
    nl = cols["n_leaves"][lk].astype(np.float64)[:, None]
    nr = cols["n_leaves"][rk].astype(np.float64)[:, None]
    mean = (proj[lk] + proj[rk]) / 2
    weighted = (nl * proj[lk] + nr * proj[rk]) / (nl + nr)
    off = np.minimum(np.abs(proj[k] - mean).max(axis=1),
                     np.abs(proj[k] - weighted).max(axis=1))
    wrong[k[~(off <= TOLERANCE)]] = True  # NaN is wrong too
    rows = np.flatnonzero(wrong)[::-1]  # the last assignment wins: the first node
    out[tree[rows]] = rows - base[rows]
    return out


def vector_problem(tree_id: str, node: int, n_nodes: int) -> str:
    """Why the tree TREE_ID is damaged: its node NODE's vector disagrees."""
    n_leaves = (n_nodes + 1) // 2
    if node < n_leaves:
        what = "is not of unit length (a value changed in place in a data file)"
    else:
        what = ("is not the mean of its children's (a value of it or of a child changed "
                "in place in a data file)")
    return f"its tree {tree_id}: the vector of node {node} {what}"
