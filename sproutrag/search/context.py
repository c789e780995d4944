"""A context for a reader: the best evidence that fits a budget of characters (or of
tokens), as non-overlapping spans, adjacent evidence merged into one span, grouped by
document (documents in order of relevance) and in document order inside each.

Pure functions over arrays and texts (no model, no database), shared by `Retriever.context`
and the evaluation (`sproutrag evaluate --budgets`). A document's *units* are its leaves'
character spans, in document order. A `Piece` is what competes for the budget: a leaf, a
window of adjacent leaves, or a tree node with all its leaves, ranked by their score less
``length_penalty * log2(characters)`` (`sproutrag.search.pieces`, whose names this module
exports too): the budget is paid in characters, so a long piece must score higher to be
worth its room. `fill_budget` takes pieces in that order and keeps each that fits what is
left; the first that does not fit is cut to what is left (its best unit: a window's
centre leaf, a tree node's best-scoring leaf), at a word's end, and ends the context
(rule 3 of docs/results.md). A piece sharing a unit with what is taken is skipped
(a chosen tree node excludes its ancestors and descendants), or with
``overlap="extend"`` adds only its new units. Its cost is what it adds to the context:
adjacent units merge into one span, whose characters (the gap between them included) or
tokens are counted once.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from sproutrag.graphemes import splits_character
from sproutrag.params import SELECTIONS
from sproutrag.search.pieces import (
    DEFAULT_LENGTH_PENALTY,
    DEFAULT_MARGIN,
    DEFAULT_SELECTION,
    DEFAULT_WINDOW,
    LazyPieces,
    Piece,
    Units,
    leaf_pieces,
    node_chars,
    node_pieces,
    priority,
    ranked_pieces,
    selection_pieces,
    unit_chars,
    window_pieces,
)

#: Counts the tokens of a text (a budget in tokens); None counts characters.
Measure = Callable[[str], int]
#: Where a word ends: a whitespace after a non-whitespace character (a cut ends there).
_WORD_END = re.compile(r"(?<=\S)\s")


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
    cut: bool = False  # whether it ends inside a unit cut to the budget (rule 3)

    def to_dict(self) -> dict[str, Any]:
        """The output line's form of a result (`sproutrag query --budget-chars`; "cut":
        true on a span that ends inside a unit cut to the budget)."""
        best = self.nodes[0] if self.nodes else -1
        out = {"doc_id": self.doc_id, "node_id": f"{self.doc_id}:{best}",
               "node_ids": [f"{self.doc_id}:{n}" for n in self.nodes],
               "score": round(self.score, 6), "spans": [[self.start, self.end]],
               "text": self.text}
        return out | {"cut": True} if self.cut else out


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
        """The output line's form: results, used_chars (used_tokens under a budget in
        tokens) and the budgets it was filled to."""
        out: dict[str, Any] = {"results": [s.to_dict() for s in self.spans],
                               "used_chars": self.used_chars}
        if self.used_tokens is not None:
            out["used_tokens"] = self.used_tokens
        for name in ("budget_chars", "budget_tokens"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def doc_spans(self) -> list[tuple[str, int, int]]:
        """(doc_id, start, end) of every span, in context order."""
        return [(s.doc_id, s.start, s.end) for s in self.spans]


class _Document:
    """What is taken of one document (whole units, and at most one unit cut to the
    budget: CUT, its index and where its text ends), and the cost of its merged spans in
    characters and, with a MEASURE, in tokens."""

    def __init__(self, units: Units, measure: Measure | None) -> None:
        self.units, self.measure = units, measure
        self.taken = np.zeros(len(units.spans), bool)
        self.cut: tuple[int, int] | None = None
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
        """The merged spans of the whole units taken: runs a..b of adjacent units."""
        out, idx = [], np.flatnonzero(self.taken)
        for u in idx.tolist():
            if out and out[-1][1] == u - 1:
                out[-1][1] = u
            else:
                out.append([u, u])
        return [(a, b) for a, b in out]

    def spans(self) -> list[tuple[int, int, int]]:
        """The context's spans of this document, in document order: (first unit, last
        unit, end character); the cut unit ends the run just before it, or its own."""
        ends = self.units.spans[:, 1]
        out = [[a, b, int(ends[b])] for a, b in self.runs()]
        if self.cut is not None:
            u, end = self.cut
            before = next((r for r in out if r[1] == u - 1), None)
            if before is not None:
                before[1:] = [u, end]
            else:
                out = sorted(out + [[u, u, end]])
        return [(a, b, e) for a, b, e in out]

    def span_tokens(self, a: int, b: int, end: int) -> int:
        """Tokens of the span of units a..b ending at character END."""
        if end == int(self.units.spans[b, 1]):
            return self.tokens(a, b)
        return int(self.measure(self.units.text[int(self.units.spans[a, 0]) : end]))

    def cut_to(self, u: int, chars_left: float, tokens_left: float) -> bool:
        """Takes as much of unit U's text, from its start, as fits CHARS_LEFT and
        TOKENS_LEFT: the whole unit when what it adds fits (`added`: the gaps to taken
        units on both sides paid), else a cut one (`cut_end`); False when not a word fits."""
        chars, tokens = self.added(np.array([u]))
        if chars <= chars_left and tokens <= tokens_left:
            self.taken[u] = True
            return True
        end = self.cut_end(u, chars_left, tokens_left)
        if end is not None:
            self.cut = (u, end)
        return end is not None

    def cut_end(self, u: int, chars_left: float, tokens_left: float) -> int | None:
        """Where unit U's text, taken from its start and ended inside it (a cut span joins
        no unit after it), ends to fit CHARS_LEFT and TOKENS_LEFT with the gap to a taken
        unit just before it (a span it joins): at the last word's end that fits (text
        written without spaces at any character: `_cut_points`); None when not one word
        fits."""
        sp, text = self.units.spans, self.units.text
        start, full = int(sp[u, 0]), int(sp[u, 1])
        joins = u > 0 and bool(self.taken[u - 1])
        gap = start - int(sp[u - 1, 1]) if joins else 0
        limit = int(min(full - 1, start + chars_left - gap))
        if limit <= start:
            return None
        ends = _cut_points(text, start, limit)
        if not ends:
            return None
        if self.measure is None:
            return ends[-1]
        first = u
        while joins and first > 0 and self.taken[first - 1]:
            first -= 1
        head, before = int(sp[first, 0]), (self.tokens(first, u - 1) if joins else 0)
        lo, hi, best = 0, len(ends) - 1, None
        while lo <= hi:  # the longest that fits (tokens grow with the text)
            mid = (lo + hi) // 2
            if int(self.measure(text[head : ends[mid]])) - before <= tokens_left:
                best, lo = ends[mid], mid + 1
            else:
                hi = mid - 1
        return best


#: A run this long without a space, half of it letters, is text written without spaces
#: (Thai, a URL), not a word: a cut may end inside it (a form's "______" line is none).
UNSPACED_RUN = 24


#: Scripts written without spaces between words besides the wide (CJK) ones: Thai and
#: Lao, Myanmar, Khmer. A space there ends a phrase, not a word.
_UNSPACED_SCRIPTS = (range(0x0E00, 0x0F00), range(0x1000, 0x10A0), range(0x1780, 0x1800))


def _unspaced_script(ch: str) -> bool:
    """Whether CH belongs to a script written without spaces between words."""
    return (unicodedata.east_asian_width(ch) in "WF"
            or any(ord(ch) in r for r in _UNSPACED_SCRIPTS))


def _cut_points(text: str, start: int, limit: int) -> list[int]:
    """Where a cut of TEXT from START may end, up to LIMIT, in order: after each word
    that fits; after each character of a script written without spaces between words
    (Chinese, Japanese, Thai, Lao, Myanmar, Khmer: a space there ends a phrase); and,
    when no word ends before LIMIT, anywhere in a run of `UNSPACED_RUN` characters, half
    of them letters or their marks (a URL). Never where a character would be split
    (`sproutrag.graphemes`: an accent stays on its letter, an emoji sequence, a Korean
    syllable, a Thai, Devanagari or Khmer cluster whole). Japanese after "第1条 " is cut
    inside its clause, not at that one space; a token budget can end such text anywhere."""
    window = text[start:limit]
    words = [start + m.start() for m in _WORD_END.finditer(text[start : limit + 1])]
    inside = [] if window.isascii() else [
        p for p in range(start + 1, limit + 1)
        if _unspaced_script(text[p - 1]) and not splits_character(text, p)]
    if not words:
        run_start = next((i + 1 for i in range(limit - 1, start - 1, -1)
                          if text[i].isspace()), start)
        run = text[run_start:limit]
        letters = sum(1 for ch in run if ch.isalpha() or unicodedata.category(ch)[0] == "M")
        if len(run) >= UNSPACED_RUN and 2 * letters >= len(run):
            inside += [p for p in range(run_start + 1, limit + 1)
                       if not splits_character(text, p)]
    return sorted({*words, *inside})


def fill_budget(
    pieces: Iterable[Piece], docs: Mapping[str, Units], *, budget_chars: int | None = None,
    budget_tokens: int | None = None, measure: Measure | None = None, k: int | None = None,
    overlap: Literal["skip", "extend"] = "skip",
) -> tuple[list[Piece], dict[str, _Document]]:
    """The PIECES (best first) that fit BUDGET_CHARS and BUDGET_TOKENS (counted by
    MEASURE; None: no limit), and at most K units when given: each piece is kept when
    what it adds fits what is left of both; the first that does not fit is cut to what
    is left (its lead unit, `Piece.lead_unit`: a window's centre leaf, a node's best
    leaf; at a word's end: `_Document.cut_end`) and the context ends there (rule 3 of
    docs/results.md); a piece sharing a unit with what is taken is
    skipped (OVERLAP "skip") or adds its other units ("extend")."""
    for name, b in (("budget_chars", budget_chars), ("budget_tokens", budget_tokens)):
        if b is not None and b < 1:
            raise ValueError(f"{name} must be >= 1, got {b}")
    if budget_tokens is not None and measure is None:
        raise ValueError("a budget in tokens needs a token counter (measure)")
    state = {d: _Document(u, measure if budget_tokens is not None else None)
             for d, u in docs.items()}
    sizes = {d: unit_chars(u) for d, u in docs.items()}
    inf = float("inf")
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
        fits = int(sizes[p.doc_id][new].sum()) <= chars_left  # a lower bound of its cost
        chars, tokens = doc.added(new) if fits else (inf, inf)
        if chars > chars_left or tokens > tokens_left:  # cut to what is left, and end
            if doc.cut_to(p.lead_unit(new), chars_left, tokens_left):
                chosen.append(p)
            break
        doc.taken[new] = True
        chars_left -= chars
        tokens_left -= tokens
        units += len(new)
        chosen.append(p)
        if chars_left <= 0 or tokens_left <= 0 or (k is not None and units >= k):
            break  # nothing more can fit
    return chosen, state


def build_context(
    pieces: Iterable[Piece], docs: Mapping[str, Units], *, budget_chars: int | None = None,
    budget_tokens: int | None = None, measure: Measure | None = None, k: int | None = None,
    overlap: Literal["skip", "extend"] = "skip",
) -> Context:
    """The `Context` of PIECES (best first) within BUDGET_CHARS and BUDGET_TOKENS (counted
    by MEASURE; at least one budget), and K units when given: every limit holds. Each
    document's taken units (and the cut one) become merged spans in document order;
    documents come by their best piece's score (ties to the smaller doc_id); a span's
    score is the best of the pieces it holds, its nodes theirs, best first."""
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
        for a, b, end in doc.spans():
            inside = sorted((p for p in by_doc[d] if np.any((p.leaves >= a) & (p.leaves <= b))),
                            key=lambda p: -p.score)
            s = int(doc.units.spans[a, 0])
            spans.append(ContextSpan(d, s, end, inside[0].score,
                                     tuple(int(p.node) for p in inside),
                                     doc.units.text[s:end], cut=doc.cut is not None
                                     and doc.cut[0] == b))
            units += b - a + 1
            if budget_tokens is not None:
                tokens += doc.span_tokens(a, b, end)
    return Context(spans, sum(s.end - s.start for s in spans),
                   tokens if budget_tokens is not None else None, units, budget_chars,
                   budget_tokens)


__all__ = ["DEFAULT_LENGTH_PENALTY", "DEFAULT_MARGIN", "DEFAULT_SELECTION", "DEFAULT_WINDOW",
           "SELECTIONS", "Context", "ContextSpan", "LazyPieces", "Measure", "Piece", "Units",
           "build_context", "fill_budget", "leaf_pieces", "node_chars", "node_pieces",
           "priority", "ranked_pieces", "selection_pieces", "window_pieces"]
