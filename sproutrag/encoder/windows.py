"""Window and block arithmetic of the encoder: pure numpy, no model.

A document's chunks are packed into windows of whole consecutive chunks
(`plan_windows`); items (windows or chunk texts) run through the model in
token-budgeted batches (`budget_batches`, `pad_rows`); a window's chunk-pair block
becomes sparse (i, j, m) pairs (`window_pairs`), averaged over the windows holding
each pair (`merge_pairs`). `segment_matrix` maps a window's tokens to its chunks. `plan_document`
assigns a tokenized document's tokens to its chunks and plans its windows;
`cut_windows` cuts the planned windows of several documents into model inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

#: A batch ends before an item shorter than this share of the batch's longest item, so
#: padding stays under half of a batch whatever the token budget (see `budget_batches`).
MIN_FILL = 0.5


def plan_windows(lengths: Sequence[int], budget: int, stride: int) -> list[tuple[int, int]]:
    """Windows [a, b) of whole consecutive chunks whose tokens fit in `budget`.

    A new window starts about every `stride` tokens but never after the previous
    window's last chunk, so every adjacent pair that fits together shares a window.
    A chunk longer than the budget gets a window of its own.
    """
    n = len(lengths)
    if n == 0:
        return []
    pos = np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))])
    out, a = [], 0
    while True:
        b = max(int(np.searchsorted(pos, pos[a] + budget, "right")) - 1, a + 1)
        out.append((a, b))
        if b >= n:
            return out
        step = int(np.searchsorted(pos, pos[a] + stride, "right")) - 1
        a = min(max(step, a + 1), b - 1) if b - 1 > a else a + 1


def segment_matrix(lens: Sequence[np.ndarray], length: int, n_cols: int) -> np.ndarray:
    """[B, length, n_cols]: column k holds 1/|chunk k| on chunk k's tokens (after [CLS])."""
    seg = np.zeros((len(lens), length, n_cols), dtype=np.float32)
    for b, ln in enumerate(lens):
        cols = np.repeat(np.arange(len(ln)), ln)
        seg[b, 1 + np.arange(len(cols)), cols] = 1.0 / ln[cols]
    return seg


def budget_batches(
    lengths: Sequence[int], budget: int, size: int | None = None, *,
    min_fill: float = MIN_FILL,
) -> Iterator[range]:
    """Consecutive ranges over items sorted by decreasing length.

    With `size`, fixed-size batches. Otherwise a batch holds as many items as fit in
    `budget` padded tokens (rows x its longest item), and ends early before an item
    shorter than `min_fill` x its longest: without that rule one batch of a wide length
    range (a 256-token chunk with 60 of 20 tokens) computes mostly padding.
    """
    i, n = 0, len(lengths)
    while i < n:
        if size:
            k = size
        else:
            longest = max(int(lengths[i]), 1)
            k = max(1, budget // longest)
            floor = min_fill * longest
            j = i + 1
            while j < min(n, i + k) and lengths[j] >= floor:
                j += 1
            k = j - i
        yield range(i, min(n, i + k))
        i += k


def pad_rows(rows: Sequence[np.ndarray], cls_id: int, sep_id: int, pad_id: int) -> np.ndarray:
    """int64 [B, longest + 2]: [CLS] row [SEP] then padding."""
    ids = np.full((len(rows), max(len(r) for r in rows) + 2), pad_id, dtype=np.int64)
    for b, r in enumerate(rows):
        ids[b, 0], ids[b, 1 : len(r) + 1], ids[b, len(r) + 1] = cls_id, r, sep_id
    return ids


def window_pairs(block: np.ndarray, lens: np.ndarray, start: int) -> tuple[np.ndarray, ...]:
    """Global (i, j, m) with i < j from one window's block (chunks without tokens skipped)."""
    c = len(lens)
    sym = (block[:c, :c] + block[:c, :c].T) / 2
    iu, ju = np.triu_indices(c, 1)
    keep = (lens[iu] > 0) & (lens[ju] > 0)
    iu, ju = iu[keep], ju[keep]
    return iu + start, ju + start, sym[iu, ju]


def merge_pairs(parts: list[tuple[np.ndarray, ...]], n: int) -> tuple[np.ndarray, ...]:
    """Average each pair over the windows holding it; sorted by (i, j)."""
    if not parts:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32)
    i = np.concatenate([p[0] for p in parts]).astype(np.int64)
    j = np.concatenate([p[1] for p in parts]).astype(np.int64)
    m = np.concatenate([p[2] for p in parts]).astype(np.float64)
    keys, inv = np.unique(i * n + j, return_inverse=True)
    mean = np.bincount(inv, weights=m) / np.bincount(inv)
    return (keys // n).astype(np.int32), (keys % n).astype(np.int32), mean.astype(np.float32)


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (float32); zero rows stay zero."""
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norm, 1e-12)).astype(np.float32)


@dataclass
class Plan:
    """A tokenized document: token ids per chunk (capped at the window budget), its
    windows [a, b) of chunks, the number of tokens inside chunks, and which chunks'
    tokens are the tokens of their text alone (`own_tokens`; None: not known)."""

    chunk_ids: list[np.ndarray]
    windows: list[tuple[int, int]]
    n_tokens: int
    own_tokens: np.ndarray | None = None


@dataclass
class Window:
    """Model input of one window: document index, first chunk, content token ids (no
    special tokens) and tokens per chunk."""

    doc: int
    start: int
    ids: np.ndarray
    lens: np.ndarray


def plan_document(
    ids: np.ndarray, starts: np.ndarray, spans: np.ndarray, budget: int, stride: int,
    *, ends: np.ndarray | None = None, continues: np.ndarray | None = None,
) -> Plan:
    """Tokens (IDS, character STARTS) to the chunks whose SPANS (sorted, disjoint (start,
    end) pairs) hold their first character; tokens outside every chunk are dropped; each
    chunk keeps its first BUDGET tokens; windows by `plan_windows`. With the tokens'
    character ENDS and CONTINUES (per vocabulary id: a piece that continues a word,
    WordPiece's "##"), `Plan.own_tokens` says which chunks' tokens are exactly what their
    text tokenizes to alone (`own_tokens`)."""
    k = np.searchsorted(spans[:, 0], starts, "right") - 1
    inside = k >= 0
    inside[inside] &= starts[inside] < spans[k[inside], 1]
    counts = np.bincount(k[inside], minlength=len(spans))
    chunk_ids = [c[:budget] for c in np.split(ids[inside], np.cumsum(counts)[:-1])]
    windows = plan_windows([len(c) for c in chunk_ids], budget, stride)
    own = None
    if ends is not None and continues is not None:
        own = own_tokens(ids, starts, ends, np.flatnonzero(inside), counts, spans,
                         continues) & (counts <= budget)
    return Plan(chunk_ids, windows, int(inside.sum()), own)


def own_tokens(ids: np.ndarray, starts: np.ndarray, ends: np.ndarray, where: np.ndarray,
               counts: np.ndarray, spans: np.ndarray, continues: np.ndarray) -> np.ndarray:
    """Per chunk: whether its tokens (WHERE: the document's tokens inside chunks, in
    order, COUNTS per chunk) are what its text alone tokenizes to with a WordPiece
    tokenizer. They are when the chunk's first token starts at its first character and
    does not continue a word (CONTINUES, per id), and its last token ends at its last
    character and the document's next token does not continue a word: the chunk then
    holds whole words, which WordPiece splits the same way whatever surrounds them.
    Otherwise (a word cut by the chunk's edge, a character the normaliser drops at an
    edge, no tokens) False: its text is tokenized alone."""
    out = np.zeros(len(spans), bool)
    has = counts > 0
    if not has.any():
        return out
    last = np.cumsum(counts) - 1
    first = last - counts + 1
    f, g = where[first[has]], where[last[has]]  # the document's token indices
    after = ids[np.minimum(g + 1, len(ids) - 1)]
    whole_end = (g + 1 == len(ids)) | ~continues[after]
    out[has] = ((starts[f] == spans[has, 0]) & ~continues[ids[f]]
                & (ends[g] == spans[has, 1]) & whole_end)
    return out


def cut_windows(plans: Sequence[Plan]) -> list[Window]:
    """Every planned window of PLANS (documents in order) as a `Window`."""
    out = []
    for d, plan in enumerate(plans):
        for a, b in plan.windows:
            rows = plan.chunk_ids[a:b]
            lens = np.asarray([len(r) for r in rows], dtype=np.int64)
            out.append(Window(d, a, np.concatenate(rows), lens))
    return out
