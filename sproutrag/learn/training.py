"""train: learn the aggregation logits alpha and the search parameters offline.

The paper's joint loss is L = L_ret + lambda * L_attn (tau = 0.05, lambda = 0.1):

* L_attn = mean over gold pairs (i, j) of -log((A_ij + A_ji) / 2), A the alpha-mixed
  chunk-block attention. Gold pairs: chunks that both overlap the evidence of one
  training query and share an encoder window (pairs that never share a window have no
  attention). (A_ij + A_ji) / 2 averaged over the windows holding the pair is the
  stored relation M_ij = heads_ij . softmax(alpha) (see `sproutrag.learn.features`).
* L_ret = InfoNCE between a query and its positive passage (the normalised mean of its
  gold chunks' embeddings) against negatives: every other chunk of the same document
  (hard) and the other queries' positives in the batch (in-batch).

With a frozen encoder, L_ret does not depend on alpha at all (embeddings do not move),
so alpha is trained by L_attn alone; L_ret is computed and reported as a constant.
(`train_corpus(finetune=...)` fine-tunes the encoder, where L_ret matters:
`sproutrag.learn.finetune`.)

`attn_loss="row"` is a variant kept for comparison: -log(M_ij / sum_r M_ir), the share
of chunk i's relation mass that goes to its gold partner j (invariant to how much
attention a head spends on chunk pairs overall).

Training takes one or more labelled sets, pooled (`load_sets`). After alpha, the
query-time search parameters (lexical weight, size calibration, seeds, delta, margin)
are chosen on a grid by `sproutrag.learn.calibration.learn_search`, maximising the paper's IE
averaged over the sets.

The losses and gold pairs are in `sproutrag.learn.losses`, the per-head features and their
cache in `sproutrag.learn.features`; this module and `sproutrag.learn.finetune` build on both.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.ingest.index_identity import encoder_fields
from sproutrag.learn.calibration import learn_search
from sproutrag.learn.datasets import file_sha256, read_labelled, usable_queries
from sproutrag.learn.features import DocFeatures, attach_terms, featurize_corpus
from sproutrag.learn.finetune import finetune_encoder, warmup_adamw
from sproutrag.learn.losses import (
    LAMBDA,
    TAU,
    GoldPairs,
    attn_loss,
    collect_gold_pairs,
    info_nce,
    retrieval_examples,
)
from sproutrag.learn.variants import Variant


def train_alpha(
    pairs: GoldPairs,
    *,
    n_layers: int,
    n_heads: int,
    layers: int | None = None,
    l_ret: float = 0.0,
    epochs: int = 100,
    batch_queries: int = 32,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    warmup: float = 0.1,
    lam: float = LAMBDA,
    kind: str = "paper",
    seed: int = 0,
) -> tuple[np.ndarray, list[dict[str, float]]]:
    """AdamW on alpha over mini-batches of queries' gold pairs (linear warm-up, then
    constant). Returns alpha and the full-data loss per epoch (L = l_ret + lam * L_attn).
    With `layers`, only the heads of the first `layers` layers are trained and weighed
    (the rows of deeper layers come back 0: `TrainedWeights(alpha, layers=layers)`)."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    used = (layers or n_layers) * n_heads
    heads = torch.from_numpy(pairs.heads[:, :used].astype(np.float32))
    rows = torch.from_numpy(pairs.row_heads[:, :used].astype(np.float32))
    alpha = torch.zeros(used, requires_grad=True)
    qids = np.unique(pairs.query)
    per_epoch = max(1, math.ceil(len(qids) / batch_queries))
    opt, sched = warmup_adamw([alpha], lr=lr, weight_decay=weight_decay, warmup=warmup,
                              total=epochs * per_epoch)
    history = []

    def full() -> float:
        with torch.no_grad():
            return float(attn_loss(alpha, heads, rows, kind))

    history.append({"epoch": 0, "l_attn": full(), "loss": l_ret + lam * full()})
    for epoch in range(1, epochs + 1):
        _alpha_epoch(alpha, heads, rows, pairs.query, rng.permutation(qids), opt, sched,
                     batch_queries=batch_queries, per_epoch=per_epoch, lam=lam, kind=kind)
        la = full()
        history.append({"epoch": epoch, "l_attn": la, "loss": l_ret + lam * la})
    out = np.zeros(n_layers * n_heads, np.float32)
    out[:used] = alpha.detach().numpy()
    return out.reshape(n_layers, n_heads), history


def _alpha_epoch(
    alpha: Any, heads: Any, rows: Any, query: np.ndarray, order: np.ndarray, opt: Any,
    sched: Any, *, batch_queries: int, per_epoch: int, lam: float, kind: str,
) -> None:
    """One epoch of `train_alpha`: PER_EPOCH steps of OPT and SCHED, each on the gold pairs
    (HEADS, ROWS; QUERY: each pair's query) of the next BATCH_QUERIES queries of ORDER, by
    lam * L_attn (L_ret is constant in alpha)."""
    import torch

    for b in range(per_epoch):
        sel = np.isin(query, order[b * batch_queries:(b + 1) * batch_queries])
        idx = torch.from_numpy(np.flatnonzero(sel))
        loss = lam * attn_loss(alpha, heads[idx], rows[idx], kind)  # + l_ret (constant)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()


def timed(seconds: dict[str, float], name: str, t0: float) -> float:
    now = time.perf_counter()
    seconds[name] = round(now - t0, 2)
    return now


def load_sets(
    sets: Sequence[tuple[str, str]], encoder: Any, *, chunking: dict[str, Any],
    cache_dir: str | None, log: Any,
) -> tuple[dict[str, DocFeatures], list[dict[str, Any]], dict[str, str]]:
    """Featurize (cached) and pool several labelled sets: (features, queries, texts).

    With more than one set, doc ids become "SET/doc_id" (SET = the set's position) so two
    sets cannot collide; every query gets "set" (its set's position) for the objective.
    """
    feats: dict[str, DocFeatures] = {}
    queries: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    labelled = [read_labelled(d, q, log=log) for d, q in sets]  # all checked first
    for n, ((docs_path, _), (docs, set_queries)) in enumerate(zip(sets, labelled, strict=True)):
        f = featurize_corpus(docs, encoder, chunking=chunking, cache_dir=cache_dir, log=log)
        attach_terms(f, docs)
        qs = usable_queries(set_queries, f)
        prefix = f"{n}/" if len(sets) > 1 else ""

        def name(d: str, prefix: str = prefix) -> str:
            return prefix + str(d)

        for d, x in f.items():
            feats[name(d)] = replace(x, doc_id=name(d))
        texts.update({name(str(d["doc_id"])): d["text"] for d in docs})
        for q in qs:
            queries.append({**q, "set": n, "doc_ids": [name(d) for d in q["doc_ids"]],
                            "gold": [{**g, "doc_id": name(str(g["doc_id"]))}
                                     for g in q["gold"]]})
        log(f"set {n}: {docs_path}: {len(f)} documents, {len(qs)} queries")
    return feats, queries, texts


def _alpha_on(
    encoder: Any, feats: dict[str, DocFeatures], queries: list[dict[str, Any]], *,
    attn_kind: str, epochs: int, lr: float, lam: float, log: Any, layers: int | None = None,
) -> dict[str, Any]:
    """Compute L_ret (frozen encoder) and train alpha on the pooled gold pairs."""
    import torch

    qvecs = encoder.encode_texts([q["query"] for q in queries])
    pairs = collect_gold_pairs(feats, queries)
    qs, pos, hard = retrieval_examples(feats, queries, qvecs)
    with torch.no_grad():
        l_ret = float(info_nce(torch.from_numpy(qs), torch.from_numpy(pos),
                               [torch.from_numpy(h) for h in hard]))
    log(f"{len(queries)} queries, {len(pairs.heads)} gold pairs; L_ret (frozen) = {l_ret:.4f}")
    alpha, history = train_alpha(pairs, n_layers=encoder.n_layers, n_heads=encoder.n_heads,
                                 layers=layers, l_ret=l_ret, epochs=epochs, lr=lr, lam=lam,
                                 kind=attn_kind)
    log(f"L_attn {history[0]['l_attn']:.4f} -> {history[-1]['l_attn']:.4f}")
    return {"qvecs": qvecs, "pairs": pairs, "l_ret": l_ret, "alpha": alpha,
            "history": history}


def train_corpus(
    sets: Sequence[tuple[str, str]],
    out: str,
    *,
    encoder: Any,
    chunking: dict[str, Any],
    parent_embedding: str = "size_weighted",
    attn_kind: str = "paper",
    epochs: int = 100,
    lr: float = 1e-3,
    lam: float = LAMBDA,
    learn_margin: bool = False,
    search_grid: dict[str, Any] | None = None,
    finetune: dict[str, Any] | None = None,
    layers: int | None = None,
    search: Any = None,
    cache_dir: str | None = None,
    log: Any = print,
) -> tuple[Any, dict[str, Any]]:
    """Train on one or more labelled sets ((docs.jsonl, queries.jsonl) pairs): alpha, then
    the search parameters; write OUT/weights.json and OUT/config.json.

    With `finetune` (keyword arguments of `finetune_encoder`, e.g. {"epochs": 1}), the
    encoder is then fine-tuned with the joint loss into OUT/encoder, and alpha and the
    search parameters are learned again on it. `search_grid` overrides the grids of
    `sproutrag.learn.calibration.learn_search`. With `layers`, alpha weighs only the
    heads of the first `layers` layers (cheaper trees: the window pass stops there).
    With `search` (a `SearchParams`), the search parameters are kept as given (no grid):
    only the trees change. Returns (TrainedWeights, config dict).
    """
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    kw = dict(attn_kind=attn_kind, epochs=epochs, lr=lr, lam=lam, log=log, layers=layers)
    encoder, feats, queries, r, tuned, t = _alpha_stages(
        sets, out, encoder, finetune, seconds, t0, chunking=chunking, cache_dir=cache_dir, **kw)
    params, grid = _search_params(feats, queries, r, search, layers=layers, log=log,
                                  parent_embedding=parent_embedding, learn_margin=learn_margin,
                                  search_grid=search_grid)
    t = timed(seconds, "learn_search", t)
    seconds["total"] = round(time.perf_counter() - t0, 2)
    weights = TrainedWeights(r["alpha"], params, encoder=encoder.model_id,
                             trained_on=", ".join(Path(d).name for d, _ in sets),
                             layers=layers)
    config = _config(weights, sets, feats, queries, r, attn_kind=attn_kind, lam=lam, lr=lr,
                     epochs=epochs, parent_embedding=parent_embedding, chunking=chunking,
                     encoder=encoder, grid=grid, seconds=seconds, tuned=tuned)
    _write(out, weights, config)
    return weights, config


class _AlphaStages(NamedTuple):
    """What `_alpha_stages` leaves for the search parameters and the config."""

    encoder: Any  # the fine-tuned one when fine-tuning ran
    feats: dict[str, DocFeatures]
    queries: list[dict[str, Any]]
    alpha: dict[str, Any]  # `_alpha_on`'s result
    tuned: dict[str, Any] | None  # `finetune_encoder`'s result, or None
    ended: float  # when the last stage ended (`time.perf_counter`)


def _alpha_stages(
    sets: Sequence[tuple[str, str]], out: str, encoder: Any, finetune: dict[str, Any] | None,
    seconds: dict[str, float], t: float, *, chunking: dict[str, Any], cache_dir: str | None,
    **kw: Any,
) -> _AlphaStages:
    """`train_corpus`' alpha: the SETS featurized (`load_sets`) and alpha trained on them
    (`_alpha_on` with KW); with FINETUNE, ENCODER is then fine-tuned into OUT/encoder
    (`_finetune`) and both are done again with the fine-tuned model. Each stage's seconds
    since the one before (from T) go to SECONDS (`timed`)."""
    feats, queries, texts = load_sets(sets, encoder, chunking=chunking, cache_dir=cache_dir,
                                      log=kw["log"])
    r = _alpha_on(encoder, feats, queries, **kw)
    t = timed(seconds, "featurize_and_train_alpha", t)
    tuned = None
    if finetune is not None:
        tuned = _finetune(encoder, feats, texts, queries, out, r["alpha"], finetune, **kw)
        t = timed(seconds, "finetune_encoder", t)
        encoder = encoder.with_model(str(Path(out) / "encoder"))
        feats, queries, _ = load_sets(sets, encoder, chunking=chunking, cache_dir=cache_dir,
                                      log=kw["log"])
        r = _alpha_on(encoder, feats, queries, **kw)
        t = timed(seconds, "featurize_and_train_alpha_finetuned", t)
    return _AlphaStages(encoder, feats, queries, r, tuned, t)


def _search_params(
    feats: dict[str, DocFeatures], queries: list[dict[str, Any]], r: dict[str, Any],
    search: Any, *, layers: int | None, parent_embedding: str, learn_margin: bool,
    search_grid: dict[str, Any] | None, log: Any,
) -> tuple[Any, list[dict[str, Any]] | dict[str, Any]]:
    """(search parameters, grid record) for the trees of alpha (R: `_alpha_on`'s result):
    SEARCH (a `SearchParams`) kept as given, else learned on the grids
    (`learn_search`, SEARCH_GRID overriding them)."""
    variant = Variant("train", mix=TrainedWeights(r["alpha"], layers=layers).mix(),
                      parent_embedding=parent_embedding)
    if search is None:
        return learn_search(feats, queries, r["qvecs"], variant,
                            learn_margin=learn_margin, log=log, **(search_grid or {}))
    return search, {"kept": search.learned()}


def _write(out: str, weights: Any, config: dict[str, Any]) -> None:
    """OUT/weights.json (WEIGHTS) and OUT/config.json (CONFIG), OUT made if missing."""
    Path(out).mkdir(parents=True, exist_ok=True)
    weights.save(Path(out) / "weights.json")
    (Path(out) / "config.json").write_text(json.dumps(config, indent=1) + "\n", "utf-8")


def _finetune(
    encoder: Any, feats: dict[str, DocFeatures], texts: dict[str, str],
    queries: list[dict[str, Any]], out: str, alpha: np.ndarray, finetune: dict[str, Any], *,
    attn_kind: str, lam: float, log: Any, layers: int | None = None, **_: Any,
) -> dict[str, Any]:
    """Fine-tune ENCODER's model with the joint loss (alpha fixed) into OUT/encoder."""
    return finetune_encoder(
        encoder.model_path, {d: {"text": texts[d], "features": f} for d, f in feats.items()},
        queries, Path(out) / "encoder", mix=TrainedWeights(alpha, layers=layers).mix(),
        lam=lam, attn_kind=attn_kind, chunk_max_tokens=encoder.chunk_max_tokens,
        window_tokens=encoder.window_tokens, device=encoder.device, log=log, **finetune,
    )


def _config(weights: Any, sets: Sequence[tuple[str, str]], feats: dict, queries: list,
            r: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """What config.json records: data hashes, losses, optimiser, grid, timings."""
    return {
        "weights_fingerprint": weights.fingerprint(),
        "tree_fingerprint": weights.tree_fingerprint(),
        "search": weights.search.learned(),
        "data": {"sets": [{"docs": str(d), "docs_sha256": file_sha256(d), "queries": str(q),
                           "queries_sha256": file_sha256(q),
                           "n_queries": sum(x.get("set") == n for x in queries)}
                          for n, (d, q) in enumerate(sets)],
                 "n_docs": len(feats), "n_queries": len(queries),
                 "n_gold_pairs": int(len(r["pairs"].heads))},
        "loss": {"tau": TAU, "lambda": kw["lam"], "attn_loss": kw["attn_kind"],
                 "l_ret_frozen": r["l_ret"],
                 "note": "frozen encoder: L_ret is constant in alpha; alpha is trained by "
                         "L_attn; the search parameters by grid search of mean IE (the "
                         "paper's P@k and span recall), averaged over the training sets"},
        "optimizer": {"name": "AdamW", "lr_alpha": kw["lr"], "weight_decay": 0.01,
                      "warmup": 0.1, "epochs": kw["epochs"], "batch_queries": 32,
                      "layers": weights.layers},
        "parent_embedding": kw["parent_embedding"], "chunking": kw["chunking"],
        "encoder": encoder_fields(kw["encoder"]),
        "history": r["history"], "search_grid": kw["grid"], "seconds": kw["seconds"],
        "finetune_encoder": kw["tuned"],
    }
