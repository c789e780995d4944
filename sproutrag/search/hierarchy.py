"""Document and section evidence in the score, and diversity across documents.

A unit scored alone loses to look-alike units of other documents once a search spans
many documents. `document_scores` is each searched document's own match (no tree),
`ancestor_means` the evidence of the sections above a node (the tree), and
`hierarchical_scores` adds them to the rank score as `SearchParams.doc_weight` and
`SearchParams.ancestor_weight` ask; `best_first` orders candidates so that each unit a
document already gave lowers its next ones by `SearchParams.doc_diversity`. All three are
off by default; docs/whole-corpus.md
has what they measure.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

import numpy as np

from sproutrag.params import SearchParams
from sproutrag.search.lexical import LeafTerms, bm25_documents
from sproutrag.search.node_scores import NodeScores, cosine_scores
from sproutrag.trees.tree import Tree


def _z(values: np.ndarray) -> np.ndarray:
    """(x - mean) / sd (sd 0 -> 1)."""
    sd = float(values.std()) if values.size else 0.0
    return (values - (values.mean() if values.size else 0.0)) / (sd if sd > 1e-9 else 1.0)


def document_scores(
    leaf_vectors: dict[str, np.ndarray], query_vec: np.ndarray, *, query: str = "",
    lexical: dict[str, LeafTerms] | None = None, lexical_weight: float = 0.0,
) -> dict[str, float]:
    """D(d): how well each searched document matches the query as a whole, with no tree:
    ``z(cosine of the mean of its leaf vectors) + w * z(BM25 of its whole text)``, both
    standardised over the searched documents (the documents are BM25's collection). 0
    for every document when only one is searched: the prior only ranks documents against
    each other."""
    ids = list(leaf_vectors)
    if len(ids) < 2:
        return {d: 0.0 for d in ids}
    means = np.stack([np.asarray(leaf_vectors[d], np.float32).mean(axis=0) for d in ids])
    score = _z(cosine_scores(means, query_vec).astype(np.float64))
    if lexical_weight > 0:
        if lexical is None or any(d not in lexical for d in ids):
            raise ValueError("lexical_weight > 0 needs the LeafTerms of every searched document")
        score = score + lexical_weight * _z(bm25_documents(query, [lexical[d] for d in ids]))
    return dict(zip(ids, score.tolist()))


def ancestor_means(tree: Tree, rank: np.ndarray) -> np.ndarray:
    """Each node's mean RANK over its ancestors below the root (the sections that hold
    it; 0 for the root and its children). float64 (2n-1,)."""
    total = np.zeros(len(rank), dtype=np.float64)
    count = np.zeros(len(rank), dtype=np.float64)
    root, n = tree.root, tree.n
    left, right = tree.left.tolist(), tree.right.tolist()
    values = rank.tolist()
    for p in range(root, n - 1, -1):  # parents have larger ids than their children
        t, c = total[p], count[p]
        if p != root:
            t, c = t + values[p], c + 1
        for child in (left[p], right[p]):
            total[child], count[child] = t, c
    return np.divide(total, count, out=np.zeros_like(total), where=count > 0)


def hierarchical_scores(
    trees: dict[str, Tree], scores: dict[str, NodeScores], params: SearchParams,
    query_vec: np.ndarray, *, query: str = "", lexical: dict[str, LeafTerms] | None = None,
) -> dict[str, NodeScores]:
    """SCORES with each node's rank score raised by its document's and its sections'
    evidence: ``rank + w_d * D(d) + w_a * ancestor_means`` (``params.doc_weight``,
    ``params.ancestor_weight``; `document_scores`, `ancestor_means`). Cosines are kept
    (the threshold and the margin cut on them). SCORES itself when both weights are 0."""
    if params.doc_weight <= 0 and params.ancestor_weight <= 0:
        return scores
    prior = (document_scores({d: t.vectors[: t.n] for d, t in trees.items()}, query_vec,
                             query=query, lexical=lexical,
                             lexical_weight=params.lexical_weight)
             if params.doc_weight > 0 else {})
    out = {}
    for d, tree in trees.items():
        rank = scores[d].rank + params.doc_weight * prior.get(d, 0.0)
        if params.ancestor_weight > 0:
            rank = rank + params.ancestor_weight * ancestor_means(tree, scores[d].rank)
        out[d] = NodeScores(scores[d].cosine, rank)
    return out


def best_first(
    candidates: Iterable[tuple[str, int, float]], diversity: float, taken: dict[str, int]
) -> Iterator[tuple[str, int, float]]:
    """CANDIDATES (doc_id, node, score) best first by ``score - diversity * taken[doc_id]``,
    TAKEN being the units the caller has taken from each document so far (it updates
    TAKEN between items; lazily re-ranked). Ties go to the smaller (doc_id, node).
    Diversity 0: plain order by score."""
    if diversity <= 0:  # a heap: callers mostly stop after a few (k units)
        best = [(-score, d, node) for d, node, score in candidates]
        heapq.heapify(best)
        while best:
            key, d, node = heapq.heappop(best)
            yield d, node, -key
        return
    heap = [(-score, d, node, 0, score) for d, node, score in candidates]
    heapq.heapify(heap)
    while heap:
        key, d, node, seen, score = heapq.heappop(heap)
        now = taken.get(d, 0)
        if now != seen:  # the document gave units since: it competes lower now
            heapq.heappush(heap, (-(score - diversity * now), d, node, now, score))
            continue
        yield d, node, score
