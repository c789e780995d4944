"""train: learn the query-time search parameters on training queries (grid search).

What is learned (see `sproutrag.params.SearchParams`): the weight of lexical evidence
(`lexical_weight`), the size calibration of internal nodes (`size_penalty`), whether the
best leaves seed the candidates (`seed_leaves`), the candidate threshold `delta` and,
only when asked, the relative cutoff `margin`. The objective is the paper's IE
(precision over the first k units / k, recall over gold spans) averaged over k = 1, 3, 5
and over queries, and then **averaged over the training sets** (each set counts the
same, whatever its number of queries), so one domain's question style cannot dominate.

The search is coordinate-wise: first the lexical weight, the size penalty and the seeds
together at delta 0 and no margin, where the simplest setting within one standard error
of the best is taken (less lexical weight, then less penalty, then seeds on: the
one-standard-error rule, so a grid point is not picked for noise); then delta (and
margin) at that point, ties to the smallest delta and no margin. Node scores are
computed once per query and lexical weight.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sproutrag.learn.evaluation import query_scores
from sproutrag.learn.features import DocFeatures
from sproutrag.learn.metrics import per_query_ie
from sproutrag.learn.variants import (
    Variant,
    query_node_scores,
    retrieve_tree,
    variant_trees,
)
from sproutrag.params import SearchParams
from sproutrag.trees.tree import Tree

LEXICAL_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
SIZE_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
SEED_GRID = (False, True)
DELTA_GRID = tuple(round(x, 2) for x in np.arange(0.0, 0.81, 0.05))
MARGIN_GRID: tuple[float | None, ...] = (None, 0.0, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15,
                                         0.2)


class _Scorer:
    """Scores a search configuration on fixed trees, reusing node scores across configs."""

    def __init__(
        self, feats: dict[str, DocFeatures], trees: dict[str, Tree],
        queries: Sequence[dict[str, Any]], qvecs: np.ndarray, ks: Sequence[int],
    ) -> None:
        self.feats, self.trees, self.queries, self.qvecs, self.ks = feats, trees, queries, qvecs, ks
        self.groups = [str(q.get("set", "")) for q in queries]
        self._scores: dict[float, list[dict]] = {}

    def _node_scores(self, weight: float) -> list[dict]:
        if weight not in self._scores:
            self._scores[weight] = [
                query_node_scores(self.trees, self.feats, q, v, weight)
                for q, v in zip(self.queries, self.qvecs, strict=True)
            ]
        return self._scores[weight]

    def units(self, p: SearchParams) -> dict[int, list[list[tuple[str, int, int]]]]:
        """Ranked units per k per query: `retrieve_tree` with cached node scores."""
        out: dict[int, list] = {k: [] for k in self.ks}
        for q, v, sc in zip(self.queries, self.qvecs, self._node_scores(p.lexical_weight)):
            for k in self.ks:
                out[k].append(retrieve_tree(self.trees, self.feats, v, q["doc_ids"], k=k,
                                            params=p, scores=sc))
        return out

    def per_query(self, runs: dict[int, list]) -> np.ndarray:
        """Each query's IE averaged over k."""
        scores = query_scores(runs, self.feats, self.queries)
        return np.asarray(per_query_ie([scores[k] for k in sorted(scores)]), np.float64)

    def mean(self, ie: np.ndarray) -> float:
        """Mean IE per training set (queries' "set" key), averaged over the sets."""
        by = self._by_set(ie)
        return float(np.mean([v.mean() for v in by])) if by else 0.0

    def standard_error(self, diff: np.ndarray) -> float:
        """Standard error of `mean(diff)` (per-query paired differences), sets weighted
        equally: sqrt(sum of the sets' squared standard errors) / number of sets."""
        by = [v for v in self._by_set(diff) if len(v) > 1]
        if not by:
            return 0.0
        return float(np.sqrt(sum(v.var(ddof=1) / len(v) for v in by)) / len(by))

    def _by_set(self, values: np.ndarray) -> list[np.ndarray]:
        groups = np.asarray(self.groups)
        return [values[groups == g] for g in dict.fromkeys(self.groups)]


def learn_search(
    feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]], qvecs: np.ndarray,
    variant: Variant, *, ks: Sequence[int] = (1, 3, 5), learn_margin: bool = False,
    lexical_grid: Sequence[float] = LEXICAL_GRID, size_grid: Sequence[float] = SIZE_GRID,
    seed_grid: Sequence[bool] = SEED_GRID, delta_grid: Sequence[float] = DELTA_GRID,
    log: Any = print,
) -> tuple[SearchParams, list[dict[str, Any]]]:
    """The search parameters with the best objective on the training queries, and the grid.

    Every lexical-weight entry needs `DocFeatures.terms` (`features.attach_terms`).
    """
    scorer = _Scorer(feats, variant_trees(feats, variant), queries, qvecs, ks)
    base = SearchParams(beam_width=variant.search.beam_width)
    rows: list[dict[str, Any]] = []
    trials: list[tuple[SearchParams, np.ndarray]] = []

    def trial(p: SearchParams) -> float:
        ie = scorer.per_query(scorer.units(p))
        value = scorer.mean(ie)
        trials.append((p, ie))
        rows.append({**p.learned(), "ie": value})
        return value

    for w, g, seed in itertools.product(lexical_grid, size_grid, seed_grid):
        trial(replace(base, lexical_weight=w, size_penalty=g, seed_leaves=seed))
    point, best_ie = _one_standard_error(trials, scorer)
    log(f"search: lexical_weight {point.lexical_weight:g}, size_penalty "
        f"{point.size_penalty:g}, seed_leaves {point.seed_leaves}: IE {100 * best_ie:.2f} "
        f"(best on the grid {100 * max(r['ie'] for r in rows):.2f})")
    cut, cut_ie = point, best_ie
    margins = MARGIN_GRID if learn_margin else (None,)
    for delta, margin in itertools.product(delta_grid, margins):
        if delta == 0 and margin is None:
            continue  # already scored
        value = trial(replace(point, threshold=float(delta), margin=margin))
        if round(value, 12) > round(cut_ie, 12):
            cut, cut_ie = replace(point, threshold=float(delta), margin=margin), value
    log(f"cutoffs: delta {cut.threshold:g}, margin {cut.margin}: IE {100 * cut_ie:.2f}")
    return cut, rows


def _one_standard_error(
    trials: list[tuple[SearchParams, np.ndarray]], scorer: _Scorer
) -> tuple[SearchParams, float]:
    """The simplest setting whose objective is within one standard error of the best.

    Simplest = least lexical weight, then least size penalty (the closest to the paper's
    search), then seeds on (they never lose the best leaf on a deep tree, whatever the
    training trees looked like). The standard error is that of the paired per-query
    difference to the best setting (the usual guard against picking a grid point for
    noise).
    """
    best_p, best_ie = max(trials, key=lambda t: scorer.mean(t[1]))
    top = scorer.mean(best_ie)
    ok = [(p, ie) for p, ie in trials
          if scorer.mean(ie) >= top - scorer.standard_error(best_ie - ie) - 1e-12]
    p, ie = min(ok, key=lambda t: (t[0].lexical_weight, t[0].size_penalty,
                                  not t[0].seed_leaves))
    return p, scorer.mean(ie)
