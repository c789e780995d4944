"""Hierarchical beam search over one tree, reranking and the evidence budget.

Pure functions over arrays (no model, no database): `beam_search` finds candidate nodes,
a `Reranker` orders them, `select_evidence` spends the budget of k evidence units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sproutrag.tree import Tree


def cosine_scores(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of `vectors` with `query` (float32)."""
    q = np.asarray(query, dtype=np.float32).ravel()
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    norms = np.linalg.norm(vectors, axis=1)
    return (vectors @ q) / np.maximum(norms, 1e-12)


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
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    s = cosine_scores(tree.vectors, query_vec) if scores is None else scores
    left, right = tree.left, tree.right
    scored = [np.array([tree.root], dtype=np.int64)]
    beam = scored[0]
    while beam.size:
        internal = beam[left[beam] >= 0]
        if not internal.size:
            break
        children = np.concatenate([left[internal], right[internal]]).astype(np.int64)
        scored.append(children)
        if children.size > beam_width:
            top = np.argpartition(-s[children], beam_width - 1)[:beam_width]
            children = children[top]
        beam = children
    nodes = np.concatenate(scored)
    keep = s[nodes] >= threshold
    nodes = nodes[keep]
    return Candidates(nodes.astype(np.int32), s[nodes].astype(np.float32))


def tree_candidates(
    trees: dict[str, Tree],
    query_vec: np.ndarray,
    *,
    beam_width: int = 5,
    threshold: float = 0.0,
    margin: float | None = None,
) -> list[tuple[str, int, float]]:
    """Candidates (doc_id, node, cosine) of one query over several trees.

    Each tree is beam-searched with `threshold` (delta). With a `margin`, a candidate is
    kept only when its score and the score of each of its leaves are at least
    ``best - margin``, where ``best`` is the highest score of a scored leaf over all the
    trees: an internal node then enters only as a group of leaves that would each pass,
    and the answer shrinks when one unit clearly leads (see docs/decisions.md).
    """
    found: list[tuple[str, Tree, Candidates, np.ndarray]] = []
    for doc_id, tree in trees.items():
        s = cosine_scores(tree.vectors, query_vec)
        found.append((doc_id, tree, beam_search(
            tree, query_vec, beam_width=beam_width, threshold=threshold, scores=s), s))
    if margin is None:
        return [(d, int(n), float(x)) for d, _, c, _ in found
                for n, x in zip(c.nodes, c.scores)]
    leaf_scores = [c.scores[t.left[c.nodes] < 0] for _, t, c, _ in found]
    best = max((float(x.max()) for x in leaf_scores if x.size), default=None)
    if best is None:
        return []
    floor = best - float(margin)
    out = []
    for doc_id, tree, c, s in found:
        for n, x in zip(c.nodes.tolist(), c.scores.tolist()):
            if x >= floor and (tree.left[n] < 0 or s[tree.leaves_of(n)].min() >= floor):
                out.append((doc_id, n, float(x)))
    return out


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
    trees: dict[str, Tree], candidates: Sequence[tuple[str, int, float]], *, k: int
) -> list[Selected]:
    """Spend a budget of k evidence units on (doc_id, node, score) candidates, best first.

    An internal node is expanded into its leaves; every leaf counts toward k. A candidate
    that shares a leaf with one already taken adds nothing and is skipped; one that does
    not fit the remaining budget is passed over for the next. Ties go to the smaller
    (doc_id, node).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    taken = {doc_id: np.zeros(tree.n, dtype=bool) for doc_id, tree in trees.items()}
    out: list[Selected] = []
    budget = k
    for doc_id, node, score in sorted(candidates, key=lambda c: (-c[2], c[0], c[1])):
        tree = trees[doc_id]
        if int(tree.n_leaves[node]) > budget:
            continue
        leaves = tree.leaves_of(node)
        if taken[doc_id][leaves].any():
            continue
        taken[doc_id][leaves] = True
        out.append(Selected(doc_id, int(node), float(score), np.sort(leaves)))
        budget -= len(leaves)
        if budget == 0:
            break
    return out
