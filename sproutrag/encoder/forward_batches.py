"""One batch through the network: padded token rows or windows in, numpy arrays out.

`Encoder` cuts its items (chunk texts' token rows, document windows) into token-budgeted
batches, longest first (`by_length`), and runs each batch here on the model thread:
`embed_batch` gives the mean-pooled embeddings of token rows, `window_batch` a window
batch's aggregated chunk-pair blocks, chunk states and per-head blocks. Both take the
fast passes of `sproutrag.encoder.attention` with FAST, else the model's own forward
(the reference), under autocast when mixed precision is on.

torch is imported inside the functions only: importing this module is instant.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from sproutrag.encoder import attention
from sproutrag.encoder.attention import mean_pool
from sproutrag.encoder.loading import autocast
from sproutrag.encoder.windows import Window, budget_batches, pad_rows, segment_matrix


def by_length(lengths: Sequence[int], budget: int,
              size: int | None = None) -> Iterator[np.ndarray]:
    """Indices of the items of LENGTHS (padded tokens each) batch by batch, longest first
    (a stable sort): `budget_batches` of BUDGET padded tokens, or of SIZE items."""
    order = np.argsort([-n for n in lengths], kind="stable")
    for rng in budget_batches([lengths[i] for i in order], budget, size):
        yield order[rng.start : rng.stop]


def embed_batch(model: tuple[Any, Any], rows: Sequence[Any], *, device: str,
                mixed_precision: bool, fast: bool) -> np.ndarray:
    """float32 (len(rows), dim) mean-pooled embeddings of token id ROWS (no special
    tokens: each runs as [CLS] row [SEP]) through MODEL (tokenizer, network)."""
    import torch

    tok, net = model
    rows = [np.asarray(r, dtype=np.int64) for r in rows]
    batch = pad_rows(rows, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    lens = torch.tensor([len(r) + 2 for r in rows])
    mask = (torch.arange(batch.shape[1])[None, :] < lens[:, None]).to(device)
    batch_ids = torch.from_numpy(batch).to(device)
    with torch.inference_mode(), autocast(device, mixed_precision):
        if fast:
            hidden = attention.embed_forward(net, batch_ids, mask)
        else:
            hidden = net(input_ids=batch_ids, attention_mask=mask.long())
            hidden = hidden.last_hidden_state
    return mean_pool(hidden, mask).cpu().numpy()


def window_batch(model: tuple[Any, Any], windows: list[Window], mix: np.ndarray, *,
                 device: str, mixed_precision: bool, heads: bool, states: bool,
                 fast: bool) -> dict[str, Any]:
    """One batch of WINDOWS through MODEL (tokenizer, network): blocks aggregated with
    MIX [B, C, C], with STATES the chunk states, with HEADS the per-head blocks (numpy
    float32)."""
    import torch

    tok, net = model
    ids = pad_rows([w.ids for w in windows], tok.cls_token_id, tok.sep_token_id,
                   tok.pad_token_id)
    n_cols = max(len(w.lens) for w in windows)
    seg = torch.from_numpy(segment_matrix([w.lens for w in windows], ids.shape[1], n_cols))
    seg = seg.to(device)
    lens = torch.tensor([len(w.ids) + 2 for w in windows])
    valid = (torch.arange(ids.shape[1])[None, :] < lens[:, None]).to(device)
    mix_t = torch.from_numpy(mix).to(device)
    ids_t = torch.from_numpy(ids).to(device)
    with torch.inference_mode(), autocast(device, mixed_precision):
        if fast:
            out = attention.window_forward(
                net, ids_t, valid, seg, mix_t, heads=heads, states=states,
                per_window=not device.startswith("cuda"))
        else:
            out = attention.reference_forward(
                net, ids_t, valid, seg, mix_t, heads=heads, states=states)
        return {k: v.float().cpu().numpy() for k, v in out.items()}
