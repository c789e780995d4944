"""train --finetune-encoder: fine-tune the SLLM itself with the paper's joint loss.

L = L_ret + lambda * L_attn, now with gradients into the encoder (AdamW, lr 2e-5, linear
warm-up), one optimiser step per training document with the queries on it:

* L_ret: InfoNCE (tau 0.05) between each query's embedding and its positive passage (the
  L2-normalised mean of its gold chunks' embeddings), against the document's other
  chunks (hard negatives: all of them in a short document, a random `max_chunks_per_step`
  minus the gold ones in a long one, since backpropagating through all 600 chunks of a
  joined 55,000-character document took 24 GB) and the other queries' positives
  (in-batch). Embeddings are computed exactly as `Encoder.encode_texts` does (mean pool,
  L2 norm), with gradients.
* L_attn: for each pair (i, j) of consecutive gold chunks of a query (document order,
  at most `max_pairs_per_step` per step), chunks i-1..j+1 are run as one window (i..j
  if that does not fit; the pair is skipped if neither does); the alpha-mixed token
  attention is pooled into chunk blocks, symmetrised, and the loss is -log(M_ij)
  ("paper") or -log(M_ij / sum_r M_ir) ("row", r over the window's chunks), alpha fixed
  (trained before on the frozen encoder). The window is the pair's own span of chunks,
  not the index's planned windows: an approximation of the stored relation
  that keeps the step small.

The result is a model folder (`save_pretrained`: weights + tokenizer) that
`encoding.model` can point at; alpha and delta are then re-learned on it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.encoder.encoder import block_attention, mean_pool, segment_matrix
from sproutrag.learn.losses import TAU, gold_leaves, info_nce


def _embed(tok: Any, net: Any, texts: Sequence[str], max_tokens: int) -> Any:
    """`Encoder.encode_texts`' embeddings, with gradients ([CLS] text [SEP], mean pool)."""
    enc = tok(list(texts), truncation=True, max_length=max_tokens, padding=True,
              return_tensors="pt").to(net.device)
    hidden = net(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    return mean_pool(hidden.last_hidden_state, enc["attention_mask"])


def _pair_attention(
    tok: Any, net: Any, chunks: Sequence[str], i: int, j: int, mix: Any, window: int,
    kind: str,
) -> Any | None:
    """L_attn term of chunks i < j, with `chunks` run as one window (None: too long)."""
    import torch

    ids = [tok(c, add_special_tokens=False)["input_ids"] or [tok.unk_token_id] for c in chunks]
    lens = np.asarray([len(x) for x in ids])
    if lens.sum() + 2 > window:
        return None
    flat = [tok.cls_token_id, *[t for x in ids for t in x], tok.sep_token_id]
    out = net(input_ids=torch.tensor([flat], device=net.device), output_attentions=True)
    seg = torch.from_numpy(segment_matrix([lens], len(flat), len(chunks))).to(net.device)
    agg = sum(torch.einsum("bhst,h->bst", a, mix[li]) for li, a in enumerate(out.attentions))
    b = block_attention(agg.unsqueeze(1), seg)[0, 0]
    m = (b + b.T) / 2
    if kind == "row":
        row = m[i].sum() - m[i, i]
        return -torch.log((m[i, j] / row.clamp_min(1e-12)).clamp_min(1e-12))
    return -torch.log(m[i, j].clamp_min(1e-12))


def _pair_window(
    tok: Any, net: Any, chunks: Sequence[str], a: int, b: int, mix: Any, window: int,
    kind: str,
) -> Any | None:
    """The pair (a, b) in the window of chunks a-1 .. b+1 (a..b alone if that is too long)."""
    lo, hi = max(0, a - 1), min(len(chunks) - 1, b + 1)
    term = _pair_attention(tok, net, chunks[lo:hi + 1], a - lo, b - lo, mix, window, kind)
    if term is None and (lo, hi) != (a, b):
        term = _pair_attention(tok, net, chunks[a:b + 1], 0, b - a, mix, window, kind)
    return term


def _document_steps(docs: dict[str, dict[str, Any]], queries: Sequence[dict[str, Any]]):
    """(doc_id, [(query text, gold chunk ids)]) for every document with usable queries."""
    by_doc: dict[str, list] = {}
    for q in queries:
        d = str(q["doc_ids"][0])
        if d not in docs:
            continue
        gold = [(g["start"], g["end"]) for g in q.get("gold", []) if str(g["doc_id"]) == d]
        leaves = gold_leaves(docs[d]["features"], gold)
        if len(leaves):
            by_doc.setdefault(d, []).append((q["query"], leaves))
    return list(by_doc.items())


def _trainable(model_path: str, device: str) -> tuple[Any, Any]:
    """(tokenizer, model in training mode with eager attention) from `model_path`."""
    from transformers import AutoModel, AutoTokenizer

    local = Path(model_path).is_dir()
    tok = AutoTokenizer.from_pretrained(model_path, local_files_only=local)
    net = AutoModel.from_pretrained(model_path, attn_implementation="eager",
                                    local_files_only=local).to(device)
    net.train()
    return tok, net


def _losses(
    tok: Any, net: Any, chunks: list[str], items: list, w: Any, rng: np.random.Generator, *,
    chunk_max_tokens: int, window_tokens: int, max_pairs: int, attn_kind: str,
    max_chunks: int = 64,
) -> tuple[Any, Any, list]:
    """(L_ret, L_attn, the L_attn terms) of one document's step; ITEMS: its queries as
    (text, gold chunk ids). The step embeds every gold chunk and random other chunks up
    to MAX_CHUNKS in all (every chunk of a shorter document)."""
    import torch

    gold = np.unique(np.concatenate([g for _, g in items]))
    others = rng.permutation(np.setdiff1d(np.arange(len(chunks)), gold))
    keep = np.sort(np.concatenate([gold, others[: max(0, max_chunks - len(gold))]]))
    row = {int(c): k for k, c in enumerate(keep)}
    emb = _embed(tok, net, [chunks[c] for c in keep], chunk_max_tokens)
    qv = _embed(tok, net, [t for t, _ in items], chunk_max_tokens)
    pos = torch.stack([torch.nn.functional.normalize(emb[[row[int(c)] for c in g]].mean(0),
                                                     dim=0) for _, g in items])
    hard = [emb[[row[int(c)] for c in np.setdiff1d(keep, g)]] for _, g in items]
    l_ret = info_nce(qv, pos, hard, TAU)
    pairs = [(int(a), int(b)) for _, g in items for a, b in zip(g[:-1], g[1:])]
    pairs = [pairs[i] for i in rng.permutation(len(pairs))[:max_pairs]]
    terms = [x for a, b in pairs if (x := _pair_window(
        tok, net, chunks, a, b, w, window_tokens, attn_kind)) is not None]
    l_attn = torch.stack(terms).mean() if terms else torch.zeros(())
    return l_ret, l_attn, terms


def _optimiser_step(net: Any, opt: Any, sched: Any, loss: Any) -> None:
    import torch

    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
    sched.step()


def _save(tok: Any, net: Any, out: Path) -> None:
    """The model folder (`save_pretrained`: weights + tokenizer) `encoding.model` names."""
    out.mkdir(parents=True, exist_ok=True)
    net.eval().cpu().save_pretrained(out)
    tok.save_pretrained(out)


def warmup_adamw(params: Any, *, lr: float, weight_decay: float, warmup: float,
                 total: int) -> tuple[Any, Any]:
    """(AdamW over PARAMS at LR with WEIGHT_DECAY; its schedule: linear warm-up over the
    first WARMUP share of TOTAL steps, then constant): the optimiser of the encoder's
    fine-tuning and of alpha's training (`sproutrag.learn.training`)."""
    import torch

    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, int(warmup * total))))
    return opt, sched


def _epoch_means(epoch: int, sums: dict[str, float], n_steps: int) -> dict[str, float]:
    """The history row of EPOCH: `_run_epoch`'s loss SUMS as means (L_ret per document of
    the N_STEPS, L_attn per pair term) and the number of pair terms."""
    return {
        "epoch": epoch, "l_ret": sums["l_ret"] / n_steps,
        "l_attn": sums["l_attn"] / max(sums["n_attn"], 1), "attn_pairs": sums["n_attn"],
    }


def _run_epoch(tok: Any, net: Any, opt: Any, sched: Any, docs: dict[str, dict[str, Any]],
               steps: list, w: Any, rng: np.random.Generator, *, lam: float, t0: float,
               log: Any, prefix: str, **loss_kw: Any) -> dict[str, float]:
    """One pass over the documents in random order, a step per document; loss sums."""
    sums = {"l_ret": 0.0, "l_attn": 0.0, "n_attn": 0}
    for n, k in enumerate(rng.permutation(len(steps)), start=1):
        doc_id, items = steps[k]
        text, f = docs[doc_id]["text"], docs[doc_id]["features"]
        l_ret, l_attn, terms = _losses(
            tok, net, [text[s:e] for s, e in f.spans], items, w, rng, **loss_kw)
        _optimiser_step(net, opt, sched, l_ret + lam * l_attn)
        sums["l_ret"] += l_ret.item()
        sums["l_attn"] += l_attn.item() * len(terms)
        sums["n_attn"] += len(terms)
        if n % 10 == 0 or n == len(steps):
            log(f"{prefix}: {n}/{len(steps)} documents, "
                f"L_ret {sums['l_ret'] / n:.4f}, {time.perf_counter() - t0:.0f} s")
    return sums


def finetune_encoder(
    model_path: str,
    docs: dict[str, dict[str, Any]],
    queries: Sequence[dict[str, Any]],
    out_dir: str | Path,
    *,
    mix: np.ndarray,
    epochs: int = 1,
    lr: float = 2e-5,
    warmup: float = 0.1,
    lam: float = 0.1,
    attn_kind: str = "row",
    chunk_max_tokens: int = 256,
    window_tokens: int = 512,
    max_pairs_per_step: int = 8,
    max_chunks_per_step: int = 64,
    device: str = "cpu",
    seed: int = 0,
    log: Any = print,
) -> dict[str, Any]:
    """Fine-tune the model at `model_path`; save it to `out_dir`. Returns a history dict.

    `docs[doc_id]` = {"text": str, "features": DocFeatures} (spans of the chunking used
    for training); `mix`: (L, H) alpha softmax weights; `device`: "cpu" or "cuda" (full
    precision either way).
    """
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    tok, net = _trainable(model_path, device)
    steps = _document_steps(docs, queries)
    if not steps:
        raise ValueError("no training query has a gold chunk in the given documents")
    opt, sched = warmup_adamw(net.parameters(), lr=lr, weight_decay=0.01, warmup=warmup,
                              total=epochs * len(steps))
    w = torch.from_numpy(np.asarray(mix, np.float32)).to(device)
    history, t0 = [], time.perf_counter()
    for epoch in range(1, epochs + 1):
        sums = _run_epoch(tok, net, opt, sched, docs, steps, w, rng, lam=lam, t0=t0, log=log,
                          prefix=f"fine-tune epoch {epoch}", chunk_max_tokens=chunk_max_tokens,
                          window_tokens=window_tokens, max_pairs=max_pairs_per_step,
                          attn_kind=attn_kind, max_chunks=max_chunks_per_step)
        history.append(_epoch_means(epoch, sums, len(steps)))
    _save(tok, net, Path(out_dir))
    return {"history": history, "steps_per_epoch": len(steps), "lr": lr, "epochs": epochs,
            "warmup": warmup, "lambda": lam, "attn_loss": attn_kind,
            "max_chunks_per_step": max_chunks_per_step,
            "seconds": round(time.perf_counter() - t0, 1),
            "note": "L_attn on each gold pair's own chunk span as one window"}
