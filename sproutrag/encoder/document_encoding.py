"""What `Encoder.encode_documents` returns, and how the window batches add up to it.

A document's relations are its windows' chunk pairs merged over the windows
(`WindowTotals`); its chunk embeddings are either its chunks' texts embedded alone or,
in context mode, each chunk's states averaged over the windows that hold it
(`window_embeddings`), with the chunks no window holds embedded alone (`chunks_alone`
says which, and their token rows). Pure numpy: the model runs in `Encoder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sproutrag.encoder.windows import Plan, Window, merge_pairs, normalise_rows, window_pairs


@dataclass
class DocumentEncoding:
    """One document: chunk embeddings and sparse symmetric relations (i < j, sorted)."""

    embeddings: np.ndarray  # float32 (n, dim), L2-normalised
    rel_i: np.ndarray  # int32 (E,)
    rel_j: np.ndarray  # int32 (E,)
    rel_m: np.ndarray  # float32 (E,)
    n_windows: int
    n_tokens: int


@dataclass
class WindowBlocks:
    """Per-(layer, head) block means of one window: chunks [start, stop)."""

    start: int
    stop: int
    blocks: np.ndarray  # float32 (n_layers * n_heads, stop - start, stop - start)


def checked_spans(spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """SPANS as an (n, 2) int64 array; ValueError unless sorted and non-overlapping."""
    sp = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    if len(sp) and (np.any(sp[:, 1] < sp[:, 0]) or np.any(sp[1:, 0] < sp[:-1, 1])):
        raise ValueError("chunk spans must be sorted, non-overlapping (start, end) pairs")
    return sp


class WindowTotals:
    """What the windows of PLANS add up to per document: each window's chunk pairs and,
    with STATES (context embeddings), the sums of the chunks' states (DIM wide) and how
    many windows hold each chunk with tokens."""

    def __init__(self, plans: list[Plan], dim: int, *, states: bool) -> None:
        self.plans, self.states = plans, states
        self.parts: list[list[tuple]] = [[] for _ in plans]
        self.sums = [
            np.zeros((len(p.chunk_ids), dim), np.float64) if states else None for p in plans
        ]
        self.counts = [np.zeros(len(p.chunk_ids), np.int64) for p in plans]

    def add(self, w: Window, b: int, res: dict[str, Any]) -> None:
        """Window W, row B of its batch's results RES (`forward_batches.window_batch`)."""
        c = len(w.lens)
        self.parts[w.doc].append(window_pairs(res["blocks"][b], w.lens, w.start))
        if self.states:
            self.sums[w.doc][w.start : w.start + c] += res["states"][b, :c]
            self.counts[w.doc][w.start : w.start + c] += w.lens > 0

    def encodings(self, embeddings: list[np.ndarray]) -> list[DocumentEncoding]:
        """Each document's EMBEDDINGS with its relations, averaged over its windows."""
        return [
            DocumentEncoding(
                emb,
                *merge_pairs(pp, max(len(p.chunk_ids), 1)),
                n_windows=len(p.windows),
                n_tokens=p.n_tokens,
            )
            for emb, pp, p in zip(embeddings, self.parts, self.plans, strict=True)
        ]


def window_embeddings(plans: Sequence[Plan], sums: Sequence[Any], counts: Sequence[Any],
                      dim: int, *, context: bool) -> list[np.ndarray]:
    """float32 (n, DIM) per document: with CONTEXT each chunk's summed states over the
    windows counted (`WindowTotals`), L2-normalised; zeros for the chunks no window holds
    with tokens, and for every chunk without CONTEXT."""
    out = []
    for d, plan in enumerate(plans):
        n = len(plan.chunk_ids)
        emb = np.zeros((n, dim), np.float32)
        if context and n:
            ok = counts[d] > 0
            emb[ok] = normalise_rows(sums[d][ok] / counts[d][ok, None])
        out.append(emb)
    return out


def chunks_alone(docs: Sequence[tuple[str, Sequence[tuple[int, int]]]], plans: Sequence[Plan],
                 counts: Sequence[Any], *, context: bool,
                 limit: int) -> tuple[list[tuple[int, int]], list[Any], dict[int, str]]:
    """The chunks of DOCS to embed alone: every chunk, or with CONTEXT those no window
    holds with tokens (COUNTS 0). Returns their (document, chunk) positions, their token
    id rows (at most LIMIT; a chunk whose tokens in the document are its text's own,
    `Plan.own_tokens`, takes those) and, by row, the texts still to tokenize (their rows
    are None)."""
    where: list[tuple[int, int]] = []
    rows: list[Any] = []
    texts: dict[int, str] = {}
    for d, ((text, spans), plan) in enumerate(zip(docs, plans, strict=True)):
        for k in range(len(plan.chunk_ids)):
            if not context or counts[d][k] == 0:
                where.append((d, k))
                if plan.own_tokens is not None and plan.own_tokens[k]:
                    rows.append(plan.chunk_ids[k][:limit])
                    continue
                s, e = spans[k]
                texts[len(rows)] = text[s:e]
                rows.append(None)
    return where, rows, texts
