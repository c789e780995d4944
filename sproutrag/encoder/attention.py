"""Fast forward passes of a BERT-architecture encoder (all-MiniLM-L6-v2) for `Encoder`.

`window_forward` computes what the model's eager forward with attention hooks computes
(`reference_forward`, kept as the reference and for other architectures), faster:

* the attention core (scores, softmax, the weight-mixed fold of the heads, context)
  runs per window and per group of `head_group` heads on CPU, so each score matrix
  stays in cache instead of streaming [B, H, T, T] tensors through memory five times
  (the window pass was memory-bound: 2.5x faster on the same windows, bench figures
  in docs/decisions.md); on cuda one slice covers the whole batch;
* the pass stops at the deepest layer whose heads carry weight in the mix (all six for
  uniform or packaged weights; fewer for weights trained with `layers`), and that layer
  stops after its attention probabilities: relations need only its queries and keys,
  not its values, output projection or feed-forward (hidden states matter only to
  "context" embeddings, which then run every layer whole).

`embed_forward` is the plain forward (last hidden states) on
`torch.nn.functional.scaled_dot_product_attention`.

Both use the model's own modules (its weights, embeddings, layer norms, activation) and
agree with `net(...)` to float rounding (about 1e-7; tests/sproutrag/encoder/test_attention.py).
`supports` says whether a model has the layout they assume; other models take the
reference path. torch is imported inside functions only.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: Heads per slice of the CPU attention core: 2 x [512, 512] float32 scores (2 MB) stay
#: in cache (1, 2 and 4 measured: 2 best, 12 1.4x slower; out/prof figures in decisions).
HEAD_GROUP = 2


def supports(net: Any) -> bool:
    """True for a transformers `BertModel` encoder with absolute positions (the layout
    `window_forward` and `embed_forward` walk); False sends the caller to the reference
    forward."""
    cfg = getattr(net, "config", None)
    if type(net).__name__ != "BertModel" or cfg is None:
        return False
    if getattr(cfg, "is_decoder", False) or getattr(cfg, "add_cross_attention", False):
        return False
    if getattr(cfg, "position_embedding_type", "absolute") != "absolute":
        return False
    try:
        for layer in net.encoder.layer:
            sa = layer.attention.self
            _ = (sa.query, sa.key, sa.value, sa.scaling, sa.num_attention_heads,
                 sa.attention_head_size, layer.attention.output, layer.intermediate,
                 layer.output)
        _ = net.embeddings
    except AttributeError:
        return False
    return True


def block_attention(attn: torch.Tensor, seg: torch.Tensor) -> torch.Tensor:
    """Chunk-pair block means of token attention: [B, H, T, T] x [B, T, C] -> [B, H, C, C].

    out[b, h, i, j] = mean over chunk i's tokens s and chunk j's tokens t of
    attn[b, h, s, t], for a `seg` from `segment_matrix` (special/pad rows are zero).
    """
    seg = seg.to(attn.dtype).unsqueeze(1)
    return seg.transpose(-1, -2) @ attn @ seg


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """sentence-transformers' embedding: mask-weighted mean of token states, L2-normalised.

    [B, T, d] states and a [B, T] 0/1 mask -> [B, d] float32 (differentiable)."""
    import torch

    m = mask.unsqueeze(-1).float()
    vec = (hidden.float() * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(vec, dim=-1)


#: Model classes whose self-attention modules return their probabilities to a forward
#: hook without `output_attentions` (BERT's eager attention: True; MPNet's: False, so
#: its probabilities come from `output_attentions`, every layer's held at once).
_HOOKS: dict[str, bool] = {}


def reference_forward(
    net: Any,
    ids: torch.Tensor,
    valid: torch.Tensor,
    seg: torch.Tensor,
    mix: torch.Tensor,
    *,
    heads: bool = False,
    states: bool = False,
) -> dict[str, torch.Tensor]:
    """What `window_forward` returns, by the model's own eager forward (any architecture
    whose attention modules return their probabilities), heads folded in by forward
    hooks as each layer ends: the reference and the fallback."""
    import torch

    acc: dict[str, Any] = {"tok": None, "heads": []}

    def reduce(layer: int, attn: torch.Tensor | None) -> None:
        if attn is None:
            raise RuntimeError(
                "no attention weights: load the model with attn_implementation='eager'"
            )
        attn = attn.float()
        agg = torch.einsum("bhst,h->bst", attn, mix[layer])
        acc["tok"] = agg if acc["tok"] is None else acc["tok"].add_(agg)
        if heads:
            acc["heads"].append(block_attention(attn, seg))

    kind = type(net).__name__
    mods = [m for m in net.modules() if type(m).__name__.endswith("SelfAttention")]
    out = None
    if len(mods) == net.config.num_hidden_layers and _HOOKS.get(kind, True):
        out, _HOOKS[kind] = _hooked_forward(net, mods, ids, valid, reduce)
    if out is None or not _HOOKS[kind]:  # no hooks, or they saw no probabilities (MPNet)
        acc.update(tok=None, heads=[])
        out = net(input_ids=ids, attention_mask=valid.long(), output_attentions=True)
        for li, attn in enumerate(out.attentions or ()):
            reduce(li, attn)
    res = {"blocks": block_attention(acc["tok"].unsqueeze(1), seg)[:, 0]}
    if states:
        res["states"] = seg.transpose(1, 2) @ out.last_hidden_state.float()
    if heads:
        res["heads"] = torch.cat(acc["heads"], dim=1)
    return res


def _hooked_forward(net: Any, mods: list[Any], ids: torch.Tensor, valid: torch.Tensor,
                    reduce: Any) -> tuple[Any, bool]:
    """NET's forward with a hook on each layer's self-attention module (MODS) handing its
    probabilities to REDUCE(layer, probabilities) as the layer ends, so one layer's are
    held at a time: (the output, whether every layer's module returned them)."""
    seen: list[bool] = []

    def hooked(layer: int, _module: Any, _args: Any, out: Any) -> None:
        probs = out[1] if isinstance(out, tuple) and len(out) > 1 else None
        seen.append(probs is not None)
        if probs is not None:
            reduce(layer, probs)

    hooks = [m.register_forward_hook(functools.partial(hooked, li))
             for li, m in enumerate(mods)]
    try:
        out = net(input_ids=ids, attention_mask=valid.long(), output_attentions=False)
    finally:
        for h in hooks:
            h.remove()
    return out, len(seen) == len(mods) and all(seen)


def _slices(batch: int, heads: int, per_window: bool, group: int) -> Iterator[tuple]:
    if not per_window:
        yield slice(0, batch), slice(0, heads)
        return
    for b in range(batch):
        for h in range(0, heads, group):
            yield slice(b, b + 1), slice(h, min(h + group, heads))


def _project(linear: Any, h: torch.Tensor, n_heads: int, head_size: int) -> torch.Tensor:
    b, t = h.shape[:2]
    return linear(h).view(b, t, n_heads, head_size).transpose(1, 2)  # [B, H, T, dh]


def _finish_layer(layer: Any, ctx: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Attention output projection + residual + norm, then the feed-forward block."""
    b, t = h.shape[:2]
    h = layer.attention.output(ctx.reshape(b, t, -1), h)
    return layer.output(layer.intermediate(h), h)


def _core(
    sa: Any, h: torch.Tensor, add: torch.Tensor, seg: torch.Tensor, mix_l: torch.Tensor,
    acc: torch.Tensor, *, whole: bool, heads: bool, per_window: bool, head_group: int,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """One layer's attention core: folds mix_l-weighted probabilities into `acc`
    [B, T, T] in place; returns the context [B, T, H, dh] (with `whole`) and the
    per-head chunk blocks [B, H, C, C] (with `heads`)."""
    import torch

    n_batch, n_tok = h.shape[:2]
    n_heads, size = sa.num_attention_heads, sa.attention_head_size
    q = _project(sa.query, h, n_heads, size)
    kt = _project(sa.key, h, n_heads, size).transpose(-1, -2)  # [B, H, dh, T]
    v = _project(sa.value, h, n_heads, size) if whole else None
    ctx = h.new_empty(n_batch, n_tok, n_heads, size) if whole else None
    hb = acc.new_empty(n_batch, n_heads, seg.shape[-1], seg.shape[-1]) if heads else None
    for bs, hs in _slices(n_batch, n_heads, per_window, head_group):
        nb, nh = bs.stop - bs.start, hs.stop - hs.start
        mask = add[bs].unsqueeze(1).expand(nb, nh, 1, n_tok).reshape(nb * nh, 1, n_tok)
        s = torch.baddbmm(mask.to(q.dtype), q[bs, hs].reshape(nb * nh, n_tok, size),
                          kt[bs, hs].reshape(nb * nh, size, n_tok), alpha=sa.scaling)
        if s.dtype == torch.float32:
            p = torch.softmax(s, -1, out=s)
        else:  # autocast: probabilities in float32, as the eager forward has them
            p = torch.softmax(s.float(), -1)
        p = p.view(nb, nh, n_tok, n_tok)
        acc[bs] += torch.einsum("bhst,h->bst", p, mix_l[hs])
        if heads:
            hb[bs, hs] = block_attention(p, seg[bs])
        if whole:
            ctx[bs, :, hs] = torch.matmul(p.to(v.dtype), v[bs, hs]).transpose(1, 2)
    return ctx, hb


def window_forward(
    net: Any,
    ids: torch.Tensor,
    valid: torch.Tensor,
    seg: torch.Tensor,
    mix: torch.Tensor,
    *,
    heads: bool = False,
    states: bool = False,
    per_window: bool = True,
    head_group: int = HEAD_GROUP,
) -> dict[str, torch.Tensor]:
    """One batch of windows through a `supports` model.

    ids int64 [B, T] ([CLS] tokens [SEP] pad), valid bool [B, T], seg float32 [B, T, C]
    (`segment_matrix`), mix float32 [L, H]. Returns "blocks" float32 [B, C, C] (the
    mixed attention pooled into chunk blocks), with `heads` "heads" [B, L*H, C, C] (per
    layer and head), with `states` "states" [B, C, d] (summed-then-averaged chunk
    states of the last layer: seg^T h). Without `heads` or `states`, layers below the
    deepest one with weight in `mix` are not computed. Call under inference mode (and
    autocast).
    """
    import torch

    n_batch, n_tok = ids.shape
    layers = net.encoder.layer
    if not (heads or states):
        layers = layers[: used_depth(mix)]
    add = torch.zeros(n_batch, 1, n_tok, device=ids.device).masked_fill_(
        ~valid[:, None, :], torch.finfo(torch.float32).min)
    acc = torch.zeros(n_batch, n_tok, n_tok, device=ids.device)
    per_head: list[torch.Tensor] = []
    h = net.embeddings(input_ids=ids)
    for li, layer in enumerate(layers):
        whole = li < len(layers) - 1 or states  # the last layer: probabilities only
        ctx, hb = _core(layer.attention.self, h, add, seg, mix[li], acc, whole=whole,
                        heads=heads, per_window=per_window, head_group=head_group)
        if heads:
            per_head.append(hb)
        if not whole:
            break
        h = _finish_layer(layer, ctx, h)
    out = {"blocks": block_attention(acc.unsqueeze(1), seg)[:, 0]}
    if states:
        out["states"] = seg.transpose(1, 2) @ h.float()
    if heads:
        out["heads"] = torch.cat(per_head, dim=1)
    return out


def used_depth(mix: torch.Tensor) -> int:
    """1 + the deepest layer with a nonzero weight in MIX [L, H] (1 when all are zero)."""
    used = (mix != 0).any(dim=1).nonzero()
    return int(used.max()) + 1 if len(used) else 1


def embed_forward(net: Any, ids: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Last hidden states [B, T, d] of a `supports` model on SDPA attention (padding
    keys masked), as `net(input_ids=ids, attention_mask=valid).last_hidden_state`."""
    import torch

    mask = valid[:, None, None, :]
    h = net.embeddings(input_ids=ids)
    for layer in net.encoder.layer:
        sa = layer.attention.self
        n_heads, size = sa.num_attention_heads, sa.attention_head_size
        q, k, v = (_project(m, h, n_heads, size) for m in (sa.query, sa.key, sa.value))
        ctx = torch.nn.functional.scaled_dot_product_attention(
            q, k, v.to(q.dtype), attn_mask=mask, scale=sa.scaling)
        h = _finish_layer(layer, ctx.transpose(1, 2), h)
    return h
