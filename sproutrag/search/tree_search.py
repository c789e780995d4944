"""Hierarchical beam search over one tree, reranking and the evidence budget.

Pure functions over arrays (no model, no database): `node_scores` scores every node
(cosine, optionally fused with BM25; `sproutrag.search.node_scores`), raised by the
document's and the sections' evidence (`sproutrag.search.hierarchy`); `beam_search` finds
candidate nodes, `tree_candidates` adds the seeds and cutoffs, a `Reranker` orders them and
`select_evidence` spends the budget of k evidence units. `search_trees` is the whole of
tree mode, shared by `Retriever`, the evaluation and training; `search_leaves` ranks
leaves held in memory: leaves mode (`leaves_mode`: tree mode's own fused score and
cutoffs, no tree, the baseline that measures what the tree adds) and the evaluation's
flat mode (`Retriever` runs flat mode as a LanceDB vector search over the stored
leaves).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Protocol

import numpy as np

from sproutrag.params import SearchParams
from sproutrag.search.hierarchy import best_first, document_scores, hierarchical_scores
from sproutrag.search.lexical import LeafTerms, bm25_leaves
from sproutrag.search.links import Links
from sproutrag.search.node_scores import (
    NodeScores,
    anchor_collection,
    cosine_scores,
    fuse,
    node_scores,
)
from sproutrag.trees.tree import Tree


@dataclass(frozen=True)
class Candidates:
    """Scored nodes of one tree: node ids and their cosine scores."""

    nodes: np.ndarray  # int32
    scores: np.ndarray  # float32


def beam_search(
    tree: Tree,
    query_vec: np.ndarray,
    *,
    beam_width: int = 5,
    threshold: float = 0.0,
    scores: np.ndarray | None = None,
) -> Candidates:
    """The paper's beam search: B0 = {root}; B_{t+1} = top-b children of B_t by cosine.

    Every scored node (the root and every child looked at) with score >= `threshold`
    is a candidate. Iterative: a chain of 100k leaves costs one step per level.
    `scores` may hold precomputed cosine scores of all nodes.
    """
    s = cosine_scores(tree.vectors, query_vec, tree.norms) if scores is None else scores
    nodes = forest_beam_search([tree], [s], beam_width=beam_width)[0]
    nodes = nodes[s[nodes] >= threshold]
    return Candidates(nodes.astype(np.int32), s[nodes].astype(np.float32))


def forest_beam_search(
    trees: Sequence[Tree], scores: Sequence[np.ndarray], *, beam_width: int = 5,
) -> list[np.ndarray]:
    """`beam_search` of several trees at once (each tree with its own beam of
    BEAM_WIDTH, by SCORES, one array of node scores per tree): every node scored, per
    tree (int64 node ids). One pass of array operations per level for all the trees,
    where a loop over trees costs one per level and tree. The top-b children of a beam
    are the b best scores, ties to the earlier child (the left children of the beam,
    best first, then the right ones)."""
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    if not trees:
        return []
    sizes = np.array([len(t.left) for t in trees])
    offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    left = np.concatenate([np.where(t.left >= 0, t.left + o, -1)
                           for t, o in zip(trees, offset)]).astype(np.int64)
    right = np.concatenate([np.where(t.right >= 0, t.right + o, -1)
                            for t, o in zip(trees, offset)]).astype(np.int64)
    s = np.concatenate([np.asarray(x, np.float64) for x in scores])
    group = np.repeat(np.arange(len(trees)), sizes)
    beam = np.array([t.root for t in trees], dtype=np.int64) + offset
    scored = [beam]
    while beam.size:
        internal = beam[left[beam] >= 0]
        if not internal.size:
            break
        children = np.concatenate([left[internal], right[internal]])
        scored.append(children)
        order = np.lexsort((-s[children], group[children]))  # by tree, best first
        children = children[order]
        g = group[children]
        rank = np.arange(len(g)) - np.searchsorted(g, g)  # place within its tree
        beam = children[rank < beam_width]
    nodes = np.concatenate(scored)
    nodes = nodes[np.argsort(group[nodes], kind="stable")]
    bounds = np.searchsorted(group[nodes], np.arange(len(trees) + 1))
    return [nodes[bounds[i] : bounds[i + 1]] - offset[i] for i in range(len(trees))]


def tree_candidates(
    trees: dict[str, Tree],
    query_vec: np.ndarray,
    *,
    beam_width: int = 5,
    threshold: float = 0.0,
    margin: float | None = None,
    params: SearchParams | None = None,
    scores: dict[str, NodeScores] | None = None,
    k: int = 0,
) -> list[tuple[str, int, float]]:
    """Candidates (doc_id, node, score) of one query over several trees.

    Each tree is beam-searched by its rank scores (`node_scores`; cosine by default); a
    scored node whose cosine reaches `threshold` (delta) is a candidate, and with
    ``params.seed_leaves`` so are the k best leaves. With a `margin`, a candidate is
    kept only when its cosine and the cosine of each of its leaves are at least
    ``best - margin``, ``best`` being the highest cosine of a candidate leaf over all
    the trees: an internal node then enters only as a group of leaves that would each
    pass. The score of a candidate is its rank score, less ``size_penalty *
    log2(leaves)`` for internal nodes.
    """
    p = params or SearchParams(beam_width=beam_width, threshold=threshold, margin=margin)
    scores = scores if scores is not None else node_scores(trees, query_vec)
    searched = forest_beam_search(list(trees.values()), [scores[d].rank for d in trees],
                                  beam_width=p.beam_width)
    found = [(d, tree, nodes[scores[d].cosine[nodes] >= p.threshold])
             for (d, tree), nodes in zip(trees.items(), searched)]
    if p.seed_leaves and k > 0:
        found = _with_seeds(found, scores, p.threshold, k)
    out: list[tuple[str, int, float]] = []
    if p.margin is None:  # the same scores as the loop below, computed by arrays
        for doc_id, tree, nodes in found:
            internal = tree.left[nodes] >= 0
            penalty = np.where(internal, p.size_penalty * np.log2(
                np.maximum(tree.n_leaves[nodes], 1)), 0.0)
            values = (scores[doc_id].rank[nodes] - penalty).tolist()
            out.extend(zip(repeat(doc_id, len(values)), nodes.tolist(), values))
        return out
    best = max((float(scores[d].cosine[x[t.left[x] < 0]].max()) for d, t, x in found
                if (t.left[x] < 0).any()), default=None)
    for doc_id, tree, nodes in found:
        sc = scores[doc_id]
        for x in nodes.tolist():
            if best is None or sc.cosine[x] < best - p.margin or (
                tree.left[x] >= 0 and sc.cosine[tree.leaves_of(x)].min() < best - p.margin
            ):
                continue
            penalty = p.size_penalty * np.log2(tree.n_leaves[x]) if tree.left[x] >= 0 else 0.0
            out.append((doc_id, int(x), float(sc.rank[x] - penalty)))
    return out


def _with_seeds(
    found: list[tuple[str, Tree, np.ndarray]], scores: dict[str, NodeScores],
    threshold: float, k: int,
) -> list[tuple[str, Tree, np.ndarray]]:
    """Add the k best leaves (by rank score, cosine >= threshold) over all trees; ties go
    to the smaller (doc_id, leaf)."""
    order = {d: r for r, d in enumerate(sorted(d for d, _, _ in found))}
    rank, doc, leaf = [], [], []
    for d, t, _ in found:
        keep = np.flatnonzero(scores[d].cosine[: t.n] >= threshold)
        rank.append(scores[d].rank[keep])
        doc.append(np.full(len(keep), order[d]))
        leaf.append(keep)
    if not rank:
        return found
    rank, doc, leaf = (np.concatenate(x) for x in (rank, doc, leaf))
    best = np.lexsort((leaf, doc, -rank))[:k]
    return [(d, t, np.union1d(x, leaf[best][doc[best] == order[d]]).astype(np.int64))
            for d, t, x in found]


class Reranker(Protocol):
    """Orders candidate nodes of one query; returns a score per candidate (higher first)."""

    def __call__(self, query: str, texts: Sequence[str], scores: np.ndarray) -> np.ndarray: ...


def cosine_rerank(query: str, texts: Sequence[str], scores: np.ndarray) -> np.ndarray:
    """The default reranker: keep the cosine scores (no cross-encoder ships offline)."""
    return scores


@dataclass(frozen=True)
class Selected:
    doc_id: str
    node: int
    score: float
    leaves: np.ndarray  # leaf ids in document order


def select_evidence(
    trees: dict[str, Tree], candidates: Sequence[tuple[str, int, float]], *, k: int,
    diversity: float = 0.0,
) -> list[Selected]:
    """Spend a budget of k evidence units on (doc_id, node, score) candidates, best first.

    An internal node is expanded into its leaves; every leaf counts toward k. A candidate
    that shares a leaf with one already taken adds nothing and is skipped; one that does
    not fit the remaining budget is passed over for the next. With DIVERSITY (lambda) a
    candidate competes at its score less lambda times the units already taken from its
    document (`best_first`). Ties go to the smaller (doc_id, node).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    taken = {doc_id: np.zeros(tree.n, dtype=bool) for doc_id, tree in trees.items()}
    units: dict[str, int] = {}
    out: list[Selected] = []
    budget = k
    for doc_id, node, score in best_first(candidates, diversity, units):
        tree = trees[doc_id]
        if int(tree.n_leaves[node]) > budget:
            continue
        leaves = tree.leaves_of(node)
        if taken[doc_id][leaves].any():
            continue
        taken[doc_id][leaves] = True
        units[doc_id] = units.get(doc_id, 0) + len(leaves)
        out.append(Selected(doc_id, int(node), float(score), np.sort(leaves)))
        budget -= len(leaves)
        if budget == 0:
            break
    return out


def fill_to_k(trees: dict[str, Tree], scores: dict[str, NodeScores],
              chosen: list[Selected], *, k: int) -> list[Selected]:
    """CHOSEN, then the best leaves it does not hold, by rank score (ties to the smaller
    (doc_id, leaf)), until k units or every leaf is taken: the threshold and the margin
    order the evidence (what passes them comes first), they never leave k unfilled."""
    used = sum(len(s.leaves) for s in chosen)
    if used >= k:
        return chosen
    taken = {(s.doc_id, int(u)) for s in chosen for u in s.leaves}
    rest = [(-float(scores[d].rank[u]), d, u) for d, t in trees.items() for u in range(t.n)
            if (d, u) not in taken]
    rest.sort()
    extra = [Selected(d, u, -r, np.array([u], dtype=np.int64)) for r, d, u in rest[:k - used]]
    return chosen + extra


def search_trees(
    trees: dict[str, Tree],
    query_vec: np.ndarray,
    *,
    k: int,
    params: SearchParams,
    query: str = "",
    lexical: dict[str, LeafTerms] | None = None,
    reranker: Reranker | None = None,
    node_text: Callable[[str, int], str] | None = None,
    scores: dict[str, NodeScores] | None = None,
    fill: bool = True,
    anchor: Sequence[str] | None = None,
    links: Links | None = None,
) -> list[Selected]:
    """Tree mode, whole: score nodes (with the document's and the sections' evidence,
    `hierarchical_scores`), beam search (plus seeds), rerank, spend k units.

    The one composition that `Retriever` (tree mode), the evaluation and training all
    call. `reranker` (default: keep the rank scores) gets each candidate's text from
    `node_text(doc_id, node)`. `scores` may hold this query's `node_scores` (computed
    with the same lexical weight) to share them between budgets. FILL: when the
    candidates hold fewer than k units, the best other leaves follow (`fill_to_k`).
    ANCHOR: the documents the scores' statistics come from (`node_scores`). LINKS: the
    documents named by the query or the leading document gain its weight (`links`).
    """
    scores = rank_scores(trees, query_vec, params=params, query=query, lexical=lexical,
                         scores=scores, anchor=anchor, links=links)
    found = tree_candidates(trees, query_vec, params=params, scores=scores, k=k)
    if reranker is not None and reranker is not cosine_rerank and found:
        if node_text is None:
            raise ValueError("a custom reranker needs node_text(doc_id, node)")
        ranked = reranker(query, [node_text(d, n) for d, n, _ in found],
                          np.asarray([x for _, _, x in found], np.float32))
        found = [(d, n, float(x)) for (d, n, _), x in zip(found, ranked)]
    chosen = select_evidence(trees, found, k=k, diversity=params.doc_diversity)
    return fill_to_k(trees, scores, chosen, k=k) if fill else chosen


def rank_scores(
    trees: dict[str, Tree],
    query_vec: np.ndarray,
    *,
    params: SearchParams,
    query: str = "",
    lexical: dict[str, LeafTerms] | None = None,
    scores: dict[str, NodeScores] | None = None,
    anchor: Sequence[str] | None = None,
    links: Links | None = None,
) -> dict[str, NodeScores]:
    """The scores tree mode searches by: `node_scores` (or SCORES, computed with the same
    lexical weight; ANCHOR: where their statistics come from), the linked documents'
    points added (LINKS), then the document's and the sections' evidence
    (`hierarchical_scores`). Tree mode and contexts share it."""
    if scores is None:
        scores = node_scores(trees, query_vec, query=query, lexical=lexical,
                             lexical_weight=params.lexical_weight, anchor=anchor)
    if links is not None:
        scores = links.apply(scores, {d: t.n for d, t in trees.items()})
    return hierarchical_scores(trees, scores, params, query_vec, query=query, lexical=lexical)


def search_leaves(
    leaf_vectors: dict[str, np.ndarray],
    query_vec: np.ndarray,
    *,
    k: int,
    threshold: float | None = None,
    margin: float | None = None,
    query: str = "",
    lexical: dict[str, LeafTerms] | None = None,
    lexical_weight: float = 0.0,
    fill: bool = False,
    doc_prior: dict[str, float] | None = None,
    diversity: float = 0.0,
    anchor: Sequence[str] | None = None,
    links: Links | None = None,
) -> list[tuple[str, int, float]]:
    """Flat mode, whole: the k best leaves (doc_id, leaf, rank score) by cosine.

    Only leaves whose cosine reaches `threshold`, and with a `margin` only those within
    margin of the best such leaf; with `lexical_weight` w > 0 (and each document's
    `LeafTerms`) leaves are ranked by z(cosine) + w z(BM25). DOC_PRIOR adds a score per
    document to its leaves; DIVERSITY takes lambda per unit already taken from a leaf's
    document (`best_first`). Ties go to the smaller (doc_id, leaf). FILL: the leaves the
    cutoffs drop follow, in the same order, up to k. ANCHOR: the documents BM25's
    collection and the z-scores come from (`node_scores`; default all). LINKS: the
    documents named by the query or the leading document gain its weight (`links`).
    """
    ids = list(leaf_vectors)
    cos = {d: cosine_scores(leaf_vectors[d], query_vec) for d in ids}
    rank = dict(cos)
    if lexical_weight > 0:
        if lexical is None or any(d not in lexical for d in ids):
            raise ValueError("lexical_weight > 0 needs the LeafTerms of every searched document")
        among, collection = anchor_collection(ids, anchor, lexical)
        lex = bm25_leaves(query, [lexical[d] for d in ids], collection=collection)
        rank = dict(zip(ids, fuse([cos[d] for d in ids], lex, [len(cos[d]) for d in ids],
                                  lexical_weight, among=among)))
    if links is not None:
        boosts = links.boosts(rank)
        rank = {d: rank[d] + boosts.get(d, 0.0) for d in ids}
    if doc_prior:
        rank = {d: rank[d] + doc_prior.get(d, 0.0) for d in ids}
    every = sorted((-float(rank[d][u]), d, u) for d in ids for u in range(len(cos[d])))
    rows = [r for r in every if threshold is None or cos[r[1]][r[2]] >= threshold]
    if margin is not None and rows:
        best = max(float(cos[d][u]) for _, d, u in rows)
        rows = [r for r in rows if cos[r[1]][r[2]] >= best - margin]
    if diversity > 0:
        rows = _diverse(rows, k, diversity)
    if fill and len(rows) < k:
        kept = set(rows)
        rows += [r for r in every if r not in kept][: k - len(rows)]
    return [(d, u, -score) for score, d, u in rows[:k]]


def _diverse(rows: list[tuple[float, str, int]], k: int, diversity: float
             ) -> list[tuple[float, str, int]]:
    """The first K of ROWS (-score, doc_id, leaf) in `best_first` order."""
    taken: dict[str, int] = {}
    out = []
    for d, u, score in best_first([(d, u, -r) for r, d, u in rows], diversity, taken):
        out.append((-score, d, u))
        taken[d] = taken.get(d, 0) + 1
        if len(out) == k:
            break
    return out


def leaves_mode(
    leaf_vectors: dict[str, np.ndarray],
    query_vec: np.ndarray,
    *,
    k: int,
    params: SearchParams,
    query: str = "",
    lexical: dict[str, LeafTerms] | None = None,
    fill: bool = True,
    anchor: Sequence[str] | None = None,
    links: Links | None = None,
) -> list[tuple[str, int, float]]:
    """Leaves mode: the k best leaves by tree mode's own score, no tree.

    The leaves of the documents tree mode searches, ranked by the same fused score
    (``z(cosine) + w z(BM25)``, w = ``params.lexical_weight``) with the same cutoffs
    (cosine >= ``params.threshold``, ``params.margin``), the same document prior and
    diversity (``params.doc_weight``, ``params.doc_diversity``), filled to k as tree mode
    is (FILL); beam width, size penalty, seeds and the ancestors' weight have nothing to
    act on. Tree mode minus
    leaves mode is the tree's own contribution. Returns (doc_id, leaf, rank score), best
    first.
    """
    prior = None
    if params.doc_weight > 0:
        found = document_scores(leaf_vectors, query_vec, query=query, lexical=lexical,
                                lexical_weight=params.lexical_weight)
        prior = {d: params.doc_weight * v for d, v in found.items()}
    return search_leaves(leaf_vectors, query_vec, k=k, threshold=params.threshold,
                         margin=params.margin, query=query, lexical=lexical,
                         lexical_weight=params.lexical_weight, fill=fill, doc_prior=prior,
                         diversity=params.doc_diversity, anchor=anchor, links=links)


__all__ = ["Candidates", "NodeScores", "Reranker", "Selected", "beam_search", "cosine_rerank",
           "cosine_scores", "fill_to_k", "forest_beam_search", "fuse", "leaves_mode",
           "node_scores", "rank_scores", "search_leaves", "search_trees", "select_evidence",
           "tree_candidates"]
