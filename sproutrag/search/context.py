"""A context for a reader: the best evidence that fits a budget of characters (or of
tokens), as non-overlapping spans, adjacent evidence merged into one span, grouped by
document (documents in order of relevance) and in document order inside each.

Pure functions over arrays and texts (no model, no database), shared by `Retriever.context`
and the evaluation (`sproutrag evaluate --budgets`). A document's *units* are its leaves'
character spans, in document order. A `Piece` is what competes for the budget: a leaf, a
window of adjacent leaves, or a tree node with all its leaves (`leaf_pieces`,
`window_pieces`, `node_pieces`). Pieces compete by their score less ``length_penalty *
log2(characters)`` (`priority`): the budget is paid in characters, so a long piece must
score higher to be worth its room. `fill_budget` takes pieces in that order and keeps each
that fits what is left; a piece sharing a unit with what is taken is skipped (a chosen tree
node excludes its ancestors and descendants), or with ``overlap="extend"`` adds only its
new units. Its cost is what it adds to the context: adjacent units merge into one span,
whose characters (the gap between them included) or tokens are counted once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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

#: Counts the tokens of a text (a budget in tokens); None counts characters.
Measure = Callable[[str], int]


@dataclass(frozen=True)
class Units:
    """The units (leaves) of one document: spans (n, 2) in document order, and the text
    their offsets index."""

    spans: np.ndarray
    text: str


@dataclass(frozen=True)
class Piece:
    """A candidate for the budget: NODE of DOC_ID (a leaf, a window's centre leaf, or a
    tree node), its units LEAVES (sorted) and the score it is ranked by."""

    doc_id: str
    node: int
    score: float
    leaves: np.ndarray
    priority: float = 0.0


@dataclass(frozen=True)
class ContextSpan:
    """One span of a context: DOC_ID's characters [START, END), the best SCORE of the
    pieces it holds, their NODES, and its TEXT (the document's text at its offsets)."""

    doc_id: str
    start: int
    end: int
    score: float
    nodes: tuple[int, ...]
    text: str

    def to_dict(self) -> dict[str, Any]:
        """The output line's form of a result (`sproutrag query --budget-chars`)."""
        best = self.nodes[0] if self.nodes else -1
        return {"doc_id": self.doc_id, "node_id": f"{self.doc_id}:{best}",
                "node_ids": [f"{self.doc_id}:{n}" for n in self.nodes],
                "score": round(self.score, 6), "spans": [[self.start, self.end]],
                "text": self.text}


@dataclass(frozen=True)
class Context:
    """The spans of a context (documents by relevance, document order inside each), the
    characters they hold, their tokens (a budget in tokens; else None) and units."""

    spans: list[ContextSpan]
    used_chars: int
    used_tokens: int | None = None
    units: int = 0
    budget_chars: int | None = None
    budget_tokens: int | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"results": [s.to_dict() for s in self.spans],
                               "used_chars": self.used_chars}
        if self.used_tokens is not None:
            out["used_tokens"] = self.used_tokens
        return out

    def doc_spans(self) -> list[tuple[str, int, int]]:
        """(doc_id, start, end) of every span, in context order."""
        return [(s.doc_id, s.start, s.end) for s in self.spans]


def priority(score: float, chars: int, length_penalty: float) -> float:
    """What a piece competes with: its score less ``length_penalty * log2(chars)``."""
    return float(score) - length_penalty * float(np.log2(max(int(chars), 1)))


def _unit_chars(units: Units) -> np.ndarray:
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
    chars = np.concatenate([_unit_chars(docs[d]) for d in ids])
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
                             priority(s[u], chars, length_penalty)))
    return _ordered(out)


def node_chars(tree: Tree, unit_chars: np.ndarray) -> np.ndarray:
    """Characters of every node of TREE: the sum of its leaves' (children come before
    their parent in the numbering)."""
    n = tree.n
    out = np.zeros(2 * n - 1 if n else 0, np.int64)
    out[:n] = unit_chars[:n]
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
        chars = node_chars(tree, _unit_chars(docs[d]))
        pr = s[: len(chars)] - length_penalty * np.log2(np.maximum(chars, 1))
        for x in range(len(chars)):
            leaves = np.sort(tree.leaves_of(x)).astype(np.int64)
            out.append(Piece(d, x, float(s[x]), leaves, float(pr[x])))
    return _ordered(out)


def ranked_pieces(ranked: Iterable[tuple[str, int, float]]) -> list[Piece]:
    """Pieces of single units already in rank order ((doc_id, unit, score), best first):
    flat mode's leaves, a baseline's chunks."""
    return [Piece(d, int(u), float(s), np.array([int(u)], np.int64), -float(r))
            for r, (d, u, s) in enumerate(ranked)]


def _ordered(pieces: list[Piece]) -> list[Piece]:
    return sorted(pieces, key=lambda p: (-p.priority, p.doc_id, p.node))


class _Document:
    """What is taken of one document, and the cost of its merged spans in characters
    and, with a MEASURE, in tokens."""

    def __init__(self, units: Units, measure: Measure | None) -> None:
        self.units, self.measure = units, measure
        self.taken = np.zeros(len(units.spans), bool)
        self._tokens: dict[tuple[int, int], int] = {}

    def chars(self, a: int, b: int) -> int:
        """Characters of one span of units a..b (inclusive), the gaps between them too."""
        return int(self.units.spans[b, 1] - self.units.spans[a, 0])

    def tokens(self, a: int, b: int) -> int:
        """Tokens of one span of units a..b (inclusive), counted by the measure."""
        key = (a, b)
        if key not in self._tokens:
            sp = self.units.spans
            self._tokens[key] = int(self.measure(self.units.text[sp[a, 0] : sp[b, 1]]))
        return self._tokens[key]

    def added(self, new: np.ndarray) -> tuple[int, int]:
        """(characters, tokens) that adding the units NEW (none of them taken) adds to the
        context: the spans they join or make, less the spans already taken inside them
        (tokens 0 without a measure)."""
        taken, n = self.taken, len(self.taken)
        after = taken.copy()
        after[new] = True
        runs, inner = set(), set()
        for u in new.tolist():
            a = b = u
            while a > 0 and after[a - 1]:
                a -= 1
            while b + 1 < n and after[b + 1]:
                b += 1
            if (a, b) in runs:
                continue
            runs.add((a, b))
            x = a
            while x <= b:  # the spans already taken inside the new one
                if taken[x]:
                    y = x
                    while y + 1 <= b and taken[y + 1]:
                        y += 1
                    inner.add((x, y))
                    x = y + 1
                else:
                    x += 1
        chars = sum(self.chars(a, b) for a, b in runs) - sum(self.chars(a, b) for a, b in inner)
        if self.measure is None:
            return chars, 0
        tokens = (sum(self.tokens(a, b) for a, b in runs)
                  - sum(self.tokens(a, b) for a, b in inner))
        return chars, tokens

    def runs(self) -> list[tuple[int, int]]:
        """The merged spans taken: runs a..b of adjacent units."""
        out, idx = [], np.flatnonzero(self.taken)
        for u in idx.tolist():
            if out and out[-1][1] == u - 1:
                out[-1][1] = u
            else:
                out.append([u, u])
        return [(a, b) for a, b in out]


def fill_budget(
    pieces: Iterable[Piece], docs: Mapping[str, Units], *, budget_chars: int | None = None,
    budget_tokens: int | None = None, measure: Measure | None = None, k: int | None = None,
    overlap: Literal["skip", "extend"] = "skip",
) -> tuple[list[Piece], dict[str, _Document]]:
    """The PIECES (best first) that fit BUDGET_CHARS and BUDGET_TOKENS (counted by
    MEASURE; None: no limit), and at most K units when given: each piece is kept when
    what it adds fits what is left of both (a piece that does not fit is passed over for
    the next); a piece sharing a unit with what is taken is skipped (OVERLAP "skip") or
    adds its other units ("extend")."""
    for name, b in (("budget_chars", budget_chars), ("budget_tokens", budget_tokens)):
        if b is not None and b < 1:
            raise ValueError(f"{name} must be >= 1, got {b}")
    if budget_tokens is not None and measure is None:
        raise ValueError("a budget in tokens needs a token counter (measure)")
    state = {d: _Document(u, measure if budget_tokens is not None else None)
             for d, u in docs.items()}
    unit_chars = {d: _unit_chars(u) for d, u in docs.items()}
    inf = float("inf")
    smallest = min((int(c.min()) for c in unit_chars.values() if len(c)), default=0)
    chars_left = budget_chars if budget_chars is not None else inf
    tokens_left = budget_tokens if budget_tokens is not None else inf
    units, chosen = 0, []
    for p in pieces:
        doc = state[p.doc_id]
        new = p.leaves[~doc.taken[p.leaves]]
        if not len(new) or (overlap == "skip" and len(new) < len(p.leaves)):
            continue
        if k is not None and units + len(new) > k:
            continue
        if int(unit_chars[p.doc_id][new].sum()) > chars_left:
            continue  # a lower bound of its cost already does not fit
        chars, tokens = doc.added(new)
        if chars > chars_left or tokens > tokens_left:
            continue
        doc.taken[new] = True
        chars_left -= chars
        tokens_left -= tokens
        units += len(new)
        chosen.append(p)
        if chars_left < smallest or tokens_left == 0 or (k is not None and units >= k):
            break  # nothing more can fit
    return chosen, state


def build_context(
    pieces: Iterable[Piece], docs: Mapping[str, Units], *, budget_chars: int | None = None,
    budget_tokens: int | None = None, measure: Measure | None = None, k: int | None = None,
    overlap: Literal["skip", "extend"] = "skip",
) -> Context:
    """The `Context` of PIECES (best first) within BUDGET_CHARS and BUDGET_TOKENS (counted
    by MEASURE; at least one budget), and K units when given: every limit holds. Each
    document's taken units become merged spans in document order; documents come by
    their best piece's score (ties to the smaller doc_id); a span's score is the best of
    the pieces it holds, its nodes theirs, best first."""
    if budget_chars is None and budget_tokens is None:
        raise ValueError("give budget_chars or budget_tokens")
    chosen, state = fill_budget(pieces, docs, budget_chars=budget_chars,
                                budget_tokens=budget_tokens, measure=measure, k=k,
                                overlap=overlap)
    by_doc: dict[str, list[Piece]] = {}
    for p in chosen:
        by_doc.setdefault(p.doc_id, []).append(p)
    order = sorted(by_doc, key=lambda d: (-max(p.score for p in by_doc[d]), d))
    spans, tokens, units = [], 0, 0
    for d in order:
        doc = state[d]
        text = doc.units.text
        for a, b in doc.runs():
            inside = sorted((p for p in by_doc[d] if np.any((p.leaves >= a) & (p.leaves <= b))),
                            key=lambda p: -p.score)
            s, e = int(doc.units.spans[a, 0]), int(doc.units.spans[b, 1])
            spans.append(ContextSpan(d, s, e, inside[0].score,
                                     tuple(int(p.node) for p in inside), text[s:e]))
            units += b - a + 1
            if budget_tokens is not None:
                tokens += doc.tokens(a, b)
    return Context(spans, sum(s.end - s.start for s in spans),
                   tokens if budget_tokens is not None else None, units, budget_chars,
                   budget_tokens)


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
           "SELECTIONS", "Context", "ContextSpan", "LazyPieces", "Measure", "Piece", "Units",
           "build_context", "fill_budget", "leaf_pieces", "node_chars", "node_pieces",
           "priority", "ranked_pieces", "selection_pieces", "window_pieces"]
