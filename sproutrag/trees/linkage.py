"""Single linkage over a sparse relation graph, exactly, in O(E log E).

The paper's merge loop (merge the active pair with the highest relation M; the parent's
relation to r is max(M_ur, M_vr)) is single-linkage clustering on similarity M, i.e. a
maximum spanning forest taken in Kruskal order. `single_linkage` runs it over the E
stored (i, j, m) pairs (union-find, no recursion); absent pairs have similarity 0, so
components still apart at the end are joined in document order. `sproutrag.trees.tree` turns
the merges into a `Tree`.
"""

from __future__ import annotations

import operator

import numpy as np


def _check_relations(
    n: int, rel_i: np.ndarray, rel_j: np.ndarray, rel_m: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate (i, j, m) triples; return them as int64, int64, float64 1-D arrays."""
    arrays = {"rel_i": np.asarray(rel_i), "rel_j": np.asarray(rel_j), "rel_m": np.asarray(rel_m)}
    for name, arr in arrays.items():
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    lengths = {name: len(arr) for name, arr in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"rel_i, rel_j and rel_m must have the same length, got {lengths}")
    out = []
    for name in ("rel_i", "rel_j"):
        arr = arrays[name]
        if arr.size and arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
        bad = np.flatnonzero((arr < 0) | (arr >= n))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{name}[{k}] = {int(arr[k])} is out of range for n = {n} leaves")
        out.append(arr)
    m = arrays["rel_m"]
    if m.size and m.dtype.kind not in "iuf":
        raise ValueError(f"rel_m must hold real numbers, got dtype {m.dtype}")
    m = m.astype(np.float64, copy=False)
    bad = np.flatnonzero(~(m >= 0) | ~np.isfinite(m))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"rel_m[{k}] = {float(m[k])!r}: similarities must be finite and >= 0")
    return out[0], out[1], m


def _kruskal(n: int, a: list[int], b: list[int], m: list[float]) -> tuple[list, list, list]:
    """Union-find (path halving, union by size) over edges already in Kruskal order.

    Returns the merges (left, right child ids, smaller first) and their similarities;
    components left over are joined in document order with similarity 0.
    """
    uf = list(range(n))  # union-find parent
    size = [1] * n
    cid = list(range(n))  # cluster node id of each union-find root
    lefts: list[int] = []
    rights: list[int] = []
    sims: list[float] = []

    def union(x: int, y: int, sim: float) -> int:
        cx, cy = cid[x], cid[y]
        lefts.append(min(cx, cy))
        rights.append(max(cx, cy))
        sims.append(sim)
        if size[x] < size[y]:
            x, y = y, x
        uf[y] = x
        size[x] += size[y]
        cid[x] = n + len(sims) - 1
        return x

    for x, y, sim in zip(a, b, m, strict=True):
        while uf[x] != x:
            uf[x] = uf[uf[x]]
            x = uf[x]
        while uf[y] != y:
            uf[y] = uf[uf[y]]
            y = uf[y]
        if x != y:
            union(x, y, sim)
            if len(sims) == n - 1:
                return lefts, rights, sims
    # Absent pairs weigh 0 and tie-break by (i, j): the zero edges (0, 1), (0, 2), ... come
    # first and already connect everything, so leaf 0's component absorbs the others in order.
    r0 = 0
    while uf[r0] != r0:
        r0 = uf[r0]
    for y in range(1, n):
        while uf[y] != y:
            uf[y] = uf[uf[y]]
            y = uf[y]
        if y != r0:
            r0 = union(r0, y, 0.0)
    return lefts, rights, sims


def single_linkage(
    n: int, rel_i: np.ndarray, rel_j: np.ndarray, rel_m: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact single-linkage clustering of n leaves over sparse similarities (i, j, m).

    Pairs may come in either order; a duplicated pair counts with its largest m; pairs
    with i == j are ignored; absent pairs have similarity 0. Edges are taken by
    decreasing m, ties by (min(i, j), max(i, j)), exactly as the naive merge loop with
    that tie-break. Returns ``merges`` (int32, (n-1, 2), scipy numbering, smaller child
    first) and ``sims`` (float32, (n-1,), non-increasing).
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise ValueError(f"n must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    i, j, m = _check_relations(n, rel_i, rel_j, rel_m)
    a, b = np.minimum(i, j), np.maximum(i, j)
    keep = (a != b) & (m > 0)  # zero-weight edges are covered by the final sweep
    a, b, m = a[keep], b[keep], m[keep]
    order = np.lexsort((b, a, -m))
    lefts, rights, sims = _kruskal(n, a[order].tolist(), b[order].tolist(), m[order].tolist())
    merges = np.empty((n - 1, 2), dtype=np.int32)
    merges[:, 0], merges[:, 1] = lefts, rights
    return merges, np.asarray(sims, dtype=np.float32)
