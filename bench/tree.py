"""Benchmark of sproutrag.trees.tree.build_tree on banded sparse relations (a script, not a test).

Each leaf relates to its 20 neighbours (10 on each side, uniform random similarity),
d = 384 vectors. Times come from time.perf_counter on an untraced run; peak memory is
tracemalloc's peak above the baseline (numpy buffers included) on a second, traced run.
scipy.cluster.hierarchy.linkage(method="single") on the dense condensed equivalent
(distance 1 - m, absent pairs at distance 1) is the reference where it fits in memory.

    .venv/bin/python bench/tree.py [--sizes 1000 10000 100000] [--scipy-max 10000]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from scipy.cluster.hierarchy import linkage

from sproutrag.trees.tree import build_tree, single_linkage, validate_tree

HALF_WINDOW = 10
DIM = 384


def banded_relations(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Pairs (i, i + k) for k = 1..HALF_WINDOW with uniform random similarity."""
    i = np.concatenate([np.arange(n - k) for k in range(1, HALF_WINDOW + 1)])
    j = np.concatenate([np.arange(k, n) for k in range(1, HALF_WINDOW + 1)])
    return i, j, rng.uniform(0.01, 1.0, size=len(i))


def dense_condensed(n: int, i: np.ndarray, j: np.ndarray, m: np.ndarray) -> np.ndarray:
    """scipy's condensed distance vector 1 - M (absent pairs: distance 1)."""
    dist = np.ones(n * (n - 1) // 2)
    a, b = np.minimum(i, j), np.maximum(i, j)
    dist[n * a - a * (a + 1) // 2 + (b - a - 1)] = 1.0 - m
    return dist


def timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    """(result, seconds untraced, peak MB above baseline under tracemalloc)."""
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    del out
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return out, seconds, peak / 2**20


def run(n: int, scipy_max: int) -> None:
    rng = np.random.default_rng(n)
    i, j, m = banded_relations(n, rng)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    t0 = time.perf_counter()
    _, sims = single_linkage(n, i, j, m)
    link_s = time.perf_counter() - t0
    tree, build_s, build_mb = timed(lambda: build_tree(vecs, i, j, m))
    t0 = time.perf_counter()
    validate_tree(tree)
    valid_s = time.perf_counter() - t0
    print(f"n={n:>7,} edges={len(i):>9,}  build_tree {build_s:7.3f} s  peak {build_mb:8.1f} MB"
          f"  (single_linkage {link_s:.3f} s, validate_tree {valid_s:.3f} s,"
          f" root height {tree.height[tree.root]})")
    if n > scipy_max:
        print(f"{'':>9}scipy linkage(single): skipped (dense condensed would be"
              f" {n * (n - 1) // 2 * 8 / 2**30:.1f} GiB)")
        return
    dist = dense_condensed(n, i, j, m)
    z, sp_s, sp_mb = timed(lambda: linkage(dist, method="single"))
    same = np.allclose(np.sort(1.0 - sims.astype(np.float64)), np.sort(z[:, 2]), atol=1e-6)
    print(f"{'':>9}scipy linkage(single) on dense {dist.nbytes / 2**20:.0f} MB condensed:"
          f" {sp_s:7.3f} s  peak {sp_mb:8.1f} MB  | ours/scipy time: build_tree"
          f" {build_s / sp_s:.2f}x, single_linkage {link_s / sp_s:.2f}x"
          f" | same merge heights: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--scipy-max", type=int, default=10_000)
    args = parser.parse_args()
    print(f"banded relations: {2 * HALF_WINDOW} neighbours per leaf, d={DIM};"
          " time: perf_counter (untraced run); peak: tracemalloc above baseline (traced run)")
    for n in args.sizes:
        run(n, args.scipy_max)


if __name__ == "__main__":
    main()
