"""What competes for a context's budget (`sproutrag.search.context`): a document's units
(its leaves' character spans) and the *pieces* made of them, a leaf, a window of adjacent
leaves, or a tree node with all its leaves (`leaf_pieces`, `window_pieces`,
`node_pieces`), ranked best first by their score less ``length_penalty *
log2(characters)`` (`priority`), and the shipped selection's parameters.

Pure functions over arrays (no model, no database).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sproutrag.params import SELECTIONS
from sproutrag.trees.tree import Tree

#: The shipped selection and its parameters (fitted on the training splits, decided on
#: dev: docs/results.md, "A context under a budget").
DEFAULT_SELECTION = "leaves"
DEFAULT_LENGTH_PENALTY = 0.0
DEFAULT_WINDOW = 1
#: A unit scoring more than this below the query's best leaf (in the fused score's z units)
#: is no candidate: the budget is a limit, not a target (rule 2 of docs/results.md).
DEFAULT_MARGIN: float | None = 1.0


@dataclass(frozen=True)
class Units:
    """The units (leaves) of one document: spans (n, 2) in document order, and the text
    their offsets index."""

    spans: np.ndarray
    text: str


@dataclass(frozen=True)
class Piece:
    """A candidate for the budget: NODE of DOC_ID (a leaf, a window's centre leaf, or a
    tree node), its units LEAVES (sorted) and the score it is ranked by; LEAD, the unit
    it is cut to when it does not fit (`lead_unit`: its best, a window's centre leaf or
    a node's best-scoring leaf; -1, its first)."""

    doc_id: str
    node: int
    score: float
    leaves: np.ndarray
    priority: float = 0.0
    lead: int = -1

    def lead_unit(self, new: np.ndarray) -> int:
        """The unit of NEW (its units not yet taken, sorted) this piece is cut to: LEAD,
        or when LEAD is taken the new unit nearest it (the earlier of two)."""
        lead = self.lead if self.lead >= 0 else int(self.leaves[0])
        return int(new[int(np.argmin(np.abs(new - lead)))])


def priority(score: float, chars: int, length_penalty: float) -> float:
    """What a piece competes with: its score less ``length_penalty * log2(chars)``."""
    return float(score) - length_penalty * float(np.log2(max(int(chars), 1)))


def unit_chars(units: Units) -> np.ndarray:
    """Each unit's characters."""
    return (units.spans[:, 1] - units.spans[:, 0]).astype(np.int64)


class LazyPieces(Sequence[Piece]):
    """Pieces made as they are read (a context mostly reads a few of thousands), kept
    once made: a sequence that can be read again (several budgets) and indexed."""

    def __init__(self, count: int, make: Callable[[int], Piece]) -> None:
        self._count, self._make, self._made = count, make, []

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._count))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        while len(self._made) <= i:
            self._made.append(self._make(len(self._made)))
        return self._made[i]

    def __iter__(self) -> Iterator[Piece]:
        return (self[i] for i in range(self._count))


def leaf_pieces(scores: Mapping[str, np.ndarray], docs: Mapping[str, Units], *,
                length_penalty: float = 0.0, min_score: float | None = None) -> LazyPieces:
    """Every leaf of every document as a piece (SCORES: a score per leaf, in the order of
    the document's units), best priority first (ties to the smaller (doc_id, leaf)); with
    MIN_SCORE only the leaves scoring at least that."""
    ids = sorted(scores)
    if not ids:
        return LazyPieces(0, lambda i: Piece("", i, 0.0, np.zeros(0, np.int64)))
    score = np.concatenate([np.asarray(scores[d], np.float64) for d in ids])
    chars = np.concatenate([unit_chars(docs[d]) for d in ids])
    doc = np.concatenate([np.full(len(scores[d]), i) for i, d in enumerate(ids)])
    leaf = np.concatenate([np.arange(len(scores[d])) for d in ids])
    pr = score - length_penalty * np.log2(np.maximum(chars, 1))
    order = np.lexsort((leaf, doc, -pr))
    if min_score is not None:
        order = order[score[order] >= min_score]
    return LazyPieces(len(order), lambda i: Piece(
        ids[doc[order[i]]], int(leaf[order[i]]), float(score[order[i]]),
        np.array([leaf[order[i]]], np.int64), float(pr[order[i]])))


def window_pieces(scores: Mapping[str, np.ndarray], docs: Mapping[str, Units], *,
                  width: int = 1, length_penalty: float = 0.0) -> list[Piece]:
    """Every leaf with its WIDTH neighbours on each side (adjacent leaves merged into one
    span), scored by the leaf's own score, best priority first."""
    out = []
    for d, s in scores.items():
        sp = docs[d].spans
        n = len(sp)
        for u in range(n):
            a, b = max(0, u - width), min(n - 1, u + width)
            chars = int(sp[b, 1] - sp[a, 0])
            out.append(Piece(d, u, float(s[u]), np.arange(a, b + 1, dtype=np.int64),
                             priority(s[u], chars, length_penalty), lead=u))
    return _ordered(out)


def node_chars(tree: Tree, sizes: np.ndarray) -> np.ndarray:
    """Characters of every node of TREE given its leaves' SIZES: the sum of its leaves'
    (children come before their parent in the numbering)."""
    n = tree.n
    out = np.zeros(2 * n - 1 if n else 0, np.int64)
    out[:n] = sizes[:n]
    for x in range(n, 2 * n - 1):
        out[x] = out[tree.left[x]] + out[tree.right[x]]
    return out


def node_pieces(trees: Mapping[str, Tree], scores: Mapping[str, np.ndarray],
                docs: Mapping[str, Units], *, length_penalty: float = 0.0) -> list[Piece]:
    """Every node (leaf or internal) of every tree as a piece with all its leaves, scored
    by SCORES (a score per node) at its characters' cost, best priority first."""
    out = []
    for d, tree in trees.items():
        s = scores[d]
        chars = node_chars(tree, unit_chars(docs[d]))
        pr = s[: len(chars)] - length_penalty * np.log2(np.maximum(chars, 1))
        for x in range(len(chars)):
            leaves = np.sort(tree.leaves_of(x)).astype(np.int64)
            lead = int(leaves[int(np.argmax(s[leaves]))])  # its best leaf (the first of ties)
            out.append(Piece(d, x, float(s[x]), leaves, float(pr[x]), lead=lead))
    return _ordered(out)


def ranked_pieces(ranked: Iterable[tuple[str, int, float]]) -> list[Piece]:
    """Pieces of single units already in rank order ((doc_id, unit, score), best first):
    flat mode's leaves, a baseline's chunks."""
    return [Piece(d, int(u), float(s), np.array([int(u)], np.int64), -float(r))
            for r, (d, u, s) in enumerate(ranked)]


def _ordered(pieces: list[Piece]) -> list[Piece]:
    return sorted(pieces, key=lambda p: (-p.priority, p.doc_id, p.node))


def selection_pieces(
    selection: str, scores: Mapping[str, np.ndarray], docs: Mapping[str, Units], *,
    trees: Mapping[str, Tree] | None = None, length_penalty: float = DEFAULT_LENGTH_PENALTY,
    window: int = DEFAULT_WINDOW, margin: float | None = DEFAULT_MARGIN,
) -> tuple[Sequence[Piece], Literal["skip", "extend"]]:
    """(pieces best first, overlap rule) of SELECTION (`SELECTIONS`) given each document's
    node scores SCORES (leaves first: a leaf's score is scores[d][leaf]). With a MARGIN,
    a piece scoring more than MARGIN below the best leaf is no candidate (the budget is a
    limit, not a target)."""
    leaves = {d: s[: len(docs[d].spans)] for d, s in scores.items()}
    best = max((float(np.max(s)) for s in leaves.values() if len(s)), default=0.0)
    if selection == "leaves":  # made as read: the cutoff applies before
        return leaf_pieces(leaves, docs, length_penalty=length_penalty,
                           min_score=best - margin if margin is not None else None), "skip"
    if selection == "window":
        pieces, overlap = window_pieces(leaves, docs, width=window,
                                        length_penalty=length_penalty), "extend"
    elif selection == "tree":
        if trees is None:
            raise ValueError("selection 'tree' needs the trees")
        pieces, overlap = node_pieces(trees, scores, docs,
                                      length_penalty=length_penalty), "skip"
    else:
        raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}; got "
                         f"{selection!r}")
    if margin is not None:
        pieces = [p for p in pieces if p.score >= best - margin]
    return pieces, overlap


__all__ = ["DEFAULT_LENGTH_PENALTY", "DEFAULT_MARGIN", "DEFAULT_SELECTION", "DEFAULT_WINDOW",
           "LazyPieces", "Piece", "Units", "leaf_pieces", "node_chars", "node_pieces",
           "priority", "ranked_pieces", "selection_pieces", "unit_chars", "window_pieces"]
