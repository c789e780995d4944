"""Hierarchical beam search over one tree, reranking and the evidence budget.

Pure functions over arrays (no model, no database): `node_scores` scores every node
(cosine, optionally fused with BM25; `sproutrag.search.node_scores`), raised by the
document's and the sections' evidence (`sproutrag.search.hierarchy`); `beam_search` finds
candidate nodes, `tree_candidates` adds the seeds and cutoffs, a `Reranker` orders them and
`select_evidence` spends the budget of k evidence units. `search_trees` is the whole of
tree mode, shared by `Retriever`, the evaluation and training. Leaves held in memory are
ranked without a tree by `sproutrag.search.leaf_search` (`search_leaves`, `leaves_mode`;
importable from here too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Protocol

import numpy as np

from sproutrag.params import SearchParams
from sproutrag.search.hierarchy import best_first, hierarchical_scores
from sproutrag.search.leaf_search import leaves_mode, search_leaves
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.links import Links
from sproutrag.search.node_scores import NodeScores, cosine_scores, fuse, node_scores
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
    if p.margin is not None:
        return _within_margin(found, scores, margin=p.margin, size_penalty=p.size_penalty)
    out: list[tuple[str, int, float]] = []
    for doc_id, tree, nodes in found:  # the same scores as `_within_margin`'s, by arrays
        internal = tree.left[nodes] >= 0
        penalty = np.where(internal, p.size_penalty * np.log2(
            np.maximum(tree.n_leaves[nodes], 1)), 0.0)
        values = (scores[doc_id].rank[nodes] - penalty).tolist()
        out.extend(zip(repeat(doc_id, len(values)), nodes.tolist(), values))
    return out


def _within_margin(
    found: list[tuple[str, Tree, np.ndarray]], scores: dict[str, NodeScores], *,
    margin: float, size_penalty: float,
) -> list[tuple[str, int, float]]:
    """The candidates (doc_id, node, score) of FOUND (doc_id, tree, nodes) whose cosine and
    the cosine of each of their leaves reach ``best - margin``, ``best`` being the highest
    cosine of a candidate leaf over all the trees (none when no candidate is a leaf); the
    score is the rank score, less ``size_penalty * log2(leaves)`` for internal nodes
    (`tree_candidates`)."""
    best = max((float(scores[d].cosine[x[t.left[x] < 0]].max()) for d, t, x in found
                if (t.left[x] < 0).any()), default=None)
    out: list[tuple[str, int, float]] = []
    for doc_id, tree, nodes in found:
        sc = scores[doc_id]
        for x in nodes.tolist():
            if best is None or sc.cosine[x] < best - margin or (
                tree.left[x] >= 0 and sc.cosine[tree.leaves_of(x)].min() < best - margin
            ):
                continue
            penalty = size_penalty * np.log2(tree.n_leaves[x]) if tree.left[x] >= 0 else 0.0
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
    doc_vectors: Mapping[str, np.ndarray] | None = None,
    doc_questions: Mapping[str, str] | None = None,
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
    DOC_VECTORS: the vectors that replace QUERY_VEC for some documents' cosines
    (`node_scores`; rule 62); DOC_QUESTIONS: the texts that replace QUERY for their BM25
    (rule 80).
    """
    scores = rank_scores(trees, query_vec, params=params, query=query, lexical=lexical,
                         scores=scores, anchor=anchor, links=links, doc_vectors=doc_vectors,
                         doc_questions=doc_questions)
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
    doc_vectors: Mapping[str, np.ndarray] | None = None,
    doc_questions: Mapping[str, str] | None = None,
) -> dict[str, NodeScores]:
    """The scores tree mode searches by: `node_scores` (or SCORES, computed with the same
    lexical weight; ANCHOR: where their statistics come from; DOC_VECTORS and
    DOC_QUESTIONS: per document in place of QUERY_VEC and QUERY), the linked documents'
    points added (LINKS), then the document's and the sections' evidence
    (`hierarchical_scores`). Tree mode and contexts share it."""
    if scores is None:
        scores = node_scores(trees, query_vec, query=query, lexical=lexical,
                             lexical_weight=params.lexical_weight, anchor=anchor,
                             doc_vectors=doc_vectors, doc_questions=doc_questions)
    if links is not None:
        scores = links.apply(scores, {d: t.n for d, t in trees.items()})
    return hierarchical_scores(trees, scores, params, query_vec, query=query, lexical=lexical)


__all__ = ["Candidates", "NodeScores", "Reranker", "Selected", "beam_search", "cosine_rerank",
           "cosine_scores", "fill_to_k", "forest_beam_search", "fuse", "leaves_mode",
           "node_scores", "rank_scores", "search_leaves", "search_trees", "select_evidence",
           "tree_candidates"]
