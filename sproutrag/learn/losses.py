"""The training losses and their gold pairs (the paper's joint loss, section 6 of DESIGN).

* L_attn = mean over gold pairs (i, j) of -log((A_ij + A_ji) / 2), A the alpha-mixed
  chunk-block attention. Gold pairs: chunks that both overlap the evidence of one
  training query and share an encoder window (pairs that never share a window have no
  attention). (A_ij + A_ji) / 2 averaged over the windows holding the pair is the
  stored relation M_ij = heads_ij . softmax(alpha) (`sproutrag.learn.features`).
  `kind="row"`: -log(M_ij / sum_r M_ir), the share of chunk i's relation mass that goes
  to its gold partner j.
* L_ret = InfoNCE (tau 0.05) between a query and its positive passage (the normalised
  mean of its gold chunks' embeddings) against negatives: every other chunk of the same
  document (hard) and the other queries' positives in the batch (in-batch).

Used by `sproutrag.learn.training` (alpha, frozen encoder) and `sproutrag.learn.finetune` (the
encoder itself). torch is imported inside the loss functions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sproutrag.errors import TrainingDataError
from sproutrag.learn.features import DocFeatures

TAU = 0.05
LAMBDA = 0.1


@dataclass
class GoldPairs:
    """Gold pairs as rows into one stacked (P, LH) matrix, plus each pair's row group."""

    heads: np.ndarray  # float32 (G, LH): relation per head of each gold pair
    query: np.ndarray  # int64 (G,): training query of each pair
    row_heads: np.ndarray  # float32 (G, LH): sum over r of chunk i's relations (row mass)


def gold_leaves(f: DocFeatures, gold: Sequence[tuple[int, int]]) -> np.ndarray:
    """Chunks of `f` that overlap any gold span (start, end)."""
    s, e = f.spans[:, 0], f.spans[:, 1]
    hit = np.zeros(f.n, bool)
    for gs, ge in gold:
        hit |= (np.maximum(s, gs) < np.minimum(e, ge))
    return np.flatnonzero(hit)


def collect_gold_pairs(
    feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]]
) -> GoldPairs:
    """Every (query, i < j) with i, j gold chunks of the query that share a window."""
    heads, qids, rows = [], [], []
    row_mass: dict[str, np.ndarray] = {}
    for qn, q in enumerate(queries):
        for d in q["doc_ids"]:
            f = feats[d]
            leaves = gold_leaves(f, [(g["start"], g["end"]) for g in q["gold"]
                                     if str(g["doc_id"]) == d])
            if len(leaves) < 2 or not len(f.pair_i):
                continue
            mask = np.isin(f.pair_i, leaves) & np.isin(f.pair_j, leaves)
            if not mask.any():
                continue
            if d not in row_mass:  # sum over partners r of M_ir, per head, per chunk i
                rm = np.zeros((f.n, f.heads.shape[1]), np.float64)
                np.add.at(rm, f.pair_i, f.heads)
                np.add.at(rm, f.pair_j, f.heads)
                row_mass[d] = rm.astype(np.float32)
            idx = np.flatnonzero(mask)
            heads.append(f.heads[idx])
            rows.append((row_mass[d][f.pair_i[idx]] + row_mass[d][f.pair_j[idx]]) / 2)
            qids.append(np.full(len(idx), qn))
    if not heads:
        raise TrainingDataError(
            f"no gold pairs to learn the attention weights from: none of the {len(queries)} "
            "training queries has two gold chunks within one window of the encoder "
            "(encoding.window_tokens) of its document; give more labelled queries, with "
            "evidence that spans two or more nearby sentences")
    return GoldPairs(np.concatenate(heads), np.concatenate(qids), np.concatenate(rows))


def attn_loss(alpha: Any, heads: Any, row_heads: Any | None = None, kind: str = "paper") -> Any:
    """L_attn on torch tensors: mean of -log(M) (paper) or -log(M / row mass) (row)."""
    import torch

    w = torch.softmax(alpha.reshape(-1), dim=0)
    m = heads @ w
    if kind == "paper":
        return -torch.log(m.clamp_min(1e-12)).mean()
    if kind == "row":
        return -torch.log((m / (row_heads @ w).clamp_min(1e-12)).clamp_min(1e-12)).mean()
    raise ValueError(f"attn loss must be 'paper' or 'row', got {kind!r}")


def info_nce(q: Any, pos: Any, hard: Sequence[Any], tau: float = TAU) -> Any:
    """InfoNCE: q (B, d), pos (B, d), hard[b] (n_b, d); all L2-normalised torch tensors.

    Logits of query b: its positive, the other queries' positives (in-batch) and its own
    hard negatives, divided by tau; the loss is the mean cross-entropy of the positive.
    """
    import torch

    inbatch = q @ pos.T / tau  # (B, B): diagonal = positives
    losses = []
    for b in range(q.shape[0]):
        logits = inbatch[b]
        if len(hard[b]):
            logits = torch.cat([logits, hard[b] @ q[b] / tau])
        losses.append(torch.logsumexp(logits, 0) - inbatch[b, b])
    return torch.stack(losses).mean()


def retrieval_examples(
    feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]], qvecs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(query vectors, positive passages, hard negatives) for queries with gold chunks."""
    qs, pos, hard = [], [], []
    for q, v in zip(queries, qvecs, strict=True):
        d = q["doc_ids"][0]
        f = feats[d]
        leaves = gold_leaves(f, [(g["start"], g["end"]) for g in q["gold"]
                                 if str(g["doc_id"]) == d])
        if not len(leaves):
            continue
        p = f.emb[leaves].mean(0)
        qs.append(v)
        pos.append(p / max(np.linalg.norm(p), 1e-12))
        hard.append(np.delete(f.emb, leaves, axis=0))
    return np.asarray(qs, np.float32), np.asarray(pos, np.float32), hard
