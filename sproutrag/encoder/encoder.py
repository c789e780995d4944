"""Chunk embeddings and attention relations from the SLLM (all-MiniLM-L6-v2 by default).

A document is tokenized once; its chunks are packed into overlapping windows of whole
chunks (window_tokens positions, a new window about every window_stride tokens: by
default just before the previous one ends, so windows share one chunk), and
each window's token attention, aggregated over layers and heads with the weights' mix,
is pooled into chunk-pair blocks. A pair's relation is the mean of its symmetrised
block over the windows that hold both chunks; pairs that never share a window have
none. Windows stream through the model in token-budgeted batches, so memory stays
linear in the document's length. The window arithmetic is in `sproutrag.encoder.windows`; the
fast forward passes of BERT-architecture models (the default) in `sproutrag.encoder.attention`,
with the model's own eager forward and attention hooks as the reference and fallback; one
batch's pass in `sproutrag.encoder.forward_batches`; what the windows add up to per document
(`DocumentEncoding`) in `sproutrag.encoder.document_encoding`.

torch and transformers are imported inside functions only: importing this module is
instant.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from sproutrag.encoder import attention, numpy_bert
from sproutrag.encoder.attention import block_attention, mean_pool
from sproutrag.encoder.document_encoding import (
    DocumentEncoding,
    WindowBlocks,
    WindowTotals,
    checked_spans,
    chunks_alone,
    window_embeddings,
)
from sproutrag.encoder.forward_batches import by_length, embed_batch, window_batch
from sproutrag.encoder.loading import (
    DEFAULT_MODEL,
    PACKAGED_MODEL_ID,
    continuation_ids,
    load_config,
    load_model,
    model_loaded,
    precision,
    resolve_device,
    resolve_model,
    window_problem,
)
from sproutrag.encoder.model_thread import on_model_thread, on_model_thread_now
from sproutrag.encoder.weights import TrainedWeights, for_model
from sproutrag.encoder.windows import (
    Plan,
    Window,
    cut_windows,
    plan_document,
    plan_windows,
    segment_matrix,
)

__all__ = [
    "DEFAULT_MODEL", "PACKAGED_MODEL_ID", "DocumentEncoding", "Encoder", "WindowBlocks",
    "block_attention", "load_model", "mean_pool", "plan_windows", "resolve_device",
    "segment_matrix",
]

EMBEDDING_MODES = ("alone", "context")
#: Padded tokens per forward batch when `tokens_per_batch` is not set: a GPU wants big
#: batches; on CPU 2,048 runs as fast as 16,384 (window pass 1.84 vs 1.88 s CPU on one
#: ContractNLI document, docs/decisions.md) and peak memory follows the budget.
TOKENS_PER_BATCH = {"cuda": 16384, "cpu": 2048}


#: Questions `Encoder.encode_queries` embeds with numpy at most (one forward; torch
#: takes larger batches: 32 questions 0.25 s in numpy, 0.08 s in torch on 2 cores).
NUMPY_QUERIES = 8

#: The lock of `Encoder.lock` (see there).
_MODEL_LOCK = threading.RLock()


def _serialised(method):
    """Run METHOD holding `Encoder.lock` (on the model thread, its caller holds it)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if on_model_thread_now():
            return method(self, *args, **kwargs)
        with self.lock:
            return method(self, *args, **kwargs)

    return run


def _model_thread(method):
    """Run METHOD on the process's one model thread (`sproutrag.encoder.model_thread`:
    torch's kernels ran 1.2-1.3x slower when each task thread had its own OpenMP team)."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        return on_model_thread(method, self, *args, **kwargs)

    return run


class Encoder:
    """The SLLM: chunk/query embeddings and chunk-pair attention relations."""

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str | None = None,
        tokens_per_batch: int | None = None,
        window_tokens: int = 512,
        window_stride: int | None = None,
        chunk_max_tokens: int = 256,
        embedding_mode: str = "alone",
        weights: TrainedWeights | None = None,
        fast_path: bool = True,
        mixed_precision: bool = False,
    ) -> None:
        """`tokens_per_batch`: padded tokens per forward batch (None: `TOKENS_PER_BATCH`
        of the device). `window_stride`: tokens between window starts (None: window_tokens
        - 2, windows that overlap by one chunk, see docs/decisions.md). `fast_path`: the
        forward passes of `sproutrag.encoder.attention` where the model supports them (the same
        results); False: the model's own forward with attention hooks (the reference).
        `mixed_precision`: on cuda, run under bf16 (or fp16) autocast instead of float32
        (the trees then differ from the CPU's where merges nearly tie; no faster for
        MiniLM, docs/decisions.md)."""
        if embedding_mode not in EMBEDDING_MODES:
            raise ValueError(
                f"embedding_mode must be one of {EMBEDDING_MODES}, got {embedding_mode!r}"
            )
        if window_tokens < 3 or chunk_max_tokens < 3:
            raise ValueError(
                f"window_tokens and chunk_max_tokens must be >= 3, got "
                f"{window_tokens} and {chunk_max_tokens}"
            )
        if window_stride is None:
            window_stride = window_tokens - 2
        if not 1 <= window_stride <= window_tokens - 2:
            raise ValueError(
                f"window_stride must be in [1, window_tokens - 2], got {window_stride}"
            )
        if tokens_per_batch is not None and tokens_per_batch < 1:
            raise ValueError(f"tokens_per_batch must be >= 1, got {tokens_per_batch}")
        self._path, self._model_id = resolve_model(model)
        self._device = device
        self.tokens_per_batch = tokens_per_batch
        self.window_tokens, self.window_stride = window_tokens, window_stride
        self.chunk_max_tokens, self.embedding_mode = chunk_max_tokens, embedding_mode
        self._weights = weights
        self.fast_path = fast_path
        self.mixed_precision = mixed_precision

    def with_model(self, model: str) -> Encoder:
        """The same settings (and weights) with another model (e.g. a fine-tuned copy)."""
        return Encoder(
            model, device=self._device, tokens_per_batch=self.tokens_per_batch,
            window_tokens=self.window_tokens, window_stride=self.window_stride,
            chunk_max_tokens=self.chunk_max_tokens, embedding_mode=self.embedding_mode,
            weights=self._weights, fast_path=self.fast_path,
            mixed_precision=self.mixed_precision,
        )

    # -- model facts -------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def model_sha256(self) -> str | None:
        """The model's content identity (`sproutrag.encoder.identity`): a hash of its config,
        tokenizer and weight files, so a folder fine-tuned again is another model."""
        from sproutrag.encoder.identity import model_sha256

        return model_sha256(self._path)

    @property
    def model_path(self) -> str:
        """What is loaded: a local folder (the packaged weights by default) or a hub name."""
        return self._path

    @property
    def device(self) -> str:
        if self._device in (None, "", "auto"):
            self._device = resolve_device(None)
        return self._device

    @property
    def precision(self) -> str:
        """float32; bfloat16 (or float16) under autocast on cuda with `mixed_precision`."""
        return precision(self.device, self.mixed_precision)

    @property
    def batch_tokens(self) -> int:
        """Padded tokens per forward batch: `tokens_per_batch` or the device's default."""
        if self.tokens_per_batch is not None:
            return self.tokens_per_batch
        return TOKENS_PER_BATCH["cuda" if self.device.startswith("cuda") else "cpu"]

    @property
    def dim(self) -> int:
        return int(load_config(self._path).hidden_size)

    @property
    def n_layers(self) -> int:
        return int(load_config(self._path).num_hidden_layers)

    @property
    def n_heads(self) -> int:
        return int(load_config(self._path).num_attention_heads)

    @property
    def weights(self) -> TrainedWeights:
        """The aggregation weights and search parameters this encoder indexes with.
        The packaged weights were learned for all-MiniLM-L6-v2 (6 layers x 12 heads):
        with a model of another shape their alpha cannot apply, so its trees use uniform
        attention weights over the same layers (the untrained aggregation) and the
        packaged search parameters, and a warning says how to train weights for it
        (`for_model`). A weights file the user named that does not fit the model raises
        WeightsMismatchError (a WeightsFileError) naming both."""
        if self._weights is None:
            self._weights = TrainedWeights.uniform(self.n_layers, self.n_heads)
        self._weights = for_model(self._weights, self.model_id, self.n_layers, self.n_heads)
        return self._weights

    @property
    def lock(self) -> threading.RLock:
        """Held while the model runs (`encode_texts`, `encode_documents`, `window_blocks`
        take it): concurrent callers (the thread runner's encode tasks, a query thread)
        garbled each other's token windows. One per process, since Encoders of the same
        model share its tokenizer and network (`load_model`'s cache); re-entrant, so a
        caller may hold it across several calls (the encode task does)."""
        return _MODEL_LOCK

    @_model_thread
    def _load(self) -> tuple[Any, Any]:
        tok, net = load_model(self._path, self.device, self.model_sha256)
        problem = window_problem(self.model_id, int(net.config.max_position_embeddings),
                                 self.window_tokens, self.chunk_max_tokens)
        if problem:
            raise ValueError(problem)
        return tok, net

    # -- embeddings --------------------------------------------------------------------
    @_serialised
    def encode_texts(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        """float32 (n, dim) L2-normalised mean-pooled embeddings (sentence-transformers')."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tok, _ = self._load()
        return self._embed_rows(self._text_rows(tok, texts), batch_size)

    def _text_rows(self, tok: Any, texts: list[str]) -> list[list[int]]:
        """TEXTS' token ids as `encode_texts` embeds them (no special tokens, at most
        chunk_max_tokens - 2)."""
        return tok(texts, add_special_tokens=False, truncation=True,
                   max_length=self.chunk_max_tokens - 2)["input_ids"]

    @_serialised
    @_model_thread
    def _embed_rows(self, ids: Sequence[Any], batch_size: int | None = None) -> np.ndarray:
        """float32 (n, dim) embeddings of token id rows (`_text_rows`), batched by length."""
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        if not len(ids):
            return out
        model = self._load()
        fast = self._fast(model[1])
        for idx in by_length([len(x) + 2 for x in ids], self.batch_tokens, batch_size):
            out[idx] = embed_batch(model, [ids[i] for i in idx], device=self.device,
                                   mixed_precision=self.mixed_precision, fast=fast)
        return out

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions' embeddings, as `encode_texts` computes them: up to
        `NUMPY_QUERIES` at a time by `sproutrag.encoder.numpy_bert` where the model
        allows (no torch or transformers import: a query process answers seconds
        sooner; the same vectors to about 1e-7), more by `encode_texts` (torch is
        faster on batches). Once this process has loaded the model into torch, torch
        encodes every question: as fast for one, and numpy's BLAS threads, which keep
        spinning after a product, would slow torch's next forward (a batch) on a small
        machine."""
        texts = list(texts)
        if model_loaded(self._path):
            return self.encode_texts(texts)
        if 0 < len(texts) <= NUMPY_QUERIES and numpy_bert.supported(self._path):
            return numpy_bert.load(self._path, self.model_sha256).encode(
                texts, self.chunk_max_tokens - 2)
        return self.encode_texts(texts)

    def _fast(self, net: Any) -> bool:
        """Whether NET runs on `sproutrag.encoder.attention`'s passes (else the reference)."""
        return self.fast_path and attention.supports(net)

    # -- documents ---------------------------------------------------------------------
    def _plans(self, docs: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> list[Plan]:
        """Each document's chunks' tokens and windows. The model is looked up once and the
        texts are tokenized in one batch call (per document, the model folder's content
        hash and the tokenizer's call cost a third of the time on a GPU for short
        documents; bench/gpu.py)."""
        checked = [checked_spans(spans) for _, spans in docs]
        todo = [d for d, sp in enumerate(checked) if len(sp)]
        plans = [Plan([], [], 0) for _ in docs]
        if not todo:
            return plans
        tok, _ = self._load()
        continues = continuation_ids(tok) if self.embedding_mode == "alone" else None
        enc = tok([docs[d][0] for d in todo], add_special_tokens=False,
                  return_offsets_mapping=True, verbose=False)
        for d, ids, offsets in zip(todo, enc["input_ids"], enc["offset_mapping"], strict=True):
            offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
            plans[d] = plan_document(
                np.asarray(ids, dtype=np.int64), offsets[:, 0], checked[d],
                self.window_tokens - 2, self.window_stride, ends=offsets[:, 1],
                continues=continues,
            )
        return plans

    @_model_thread
    def _forward(self, model: tuple[Any, Any], windows: list[Window], *, heads: bool,
                 fast: bool) -> dict[str, Any]:
        """One batch of windows through MODEL (tokenizer, network): aggregated blocks
        [B, C, C], chunk states, head blocks (numpy float32), by the fast path with FAST,
        else the reference forward (`forward_batches.window_batch`)."""
        return window_batch(model, windows, self.weights.mix(), device=self.device,
                            mixed_precision=self.mixed_precision, heads=heads,
                            states=self.embedding_mode == "context", fast=fast)

    def _run_windows(self, windows: list[Window], *, heads: bool = False) -> Iterator[tuple]:
        """(window, result index, batch result) for every window, in token-budgeted batches."""
        model = self._load()
        fast = self._fast(model[1])
        for idx in by_length([len(w.ids) + 2 for w in windows], self.batch_tokens):
            batch = [windows[i] for i in idx]
            res = self._forward(model, batch, heads=heads, fast=fast)
            for b, w in enumerate(batch):
                yield w, b, res

    def encode_document(self, text: str, spans: Sequence[tuple[int, int]]) -> DocumentEncoding:
        """Embeddings and windowed attention relations of one document's chunks."""
        return self.encode_documents([(text, spans)])[0]

    @_serialised
    def encode_documents(
        self, docs: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> list[DocumentEncoding]:
        """`encode_document` for many documents, windows batched across documents."""
        plans = self._plans(docs)
        totals = WindowTotals(plans, self.dim, states=self.embedding_mode == "context")
        for w, b, res in self._run_windows(cut_windows(plans)):
            totals.add(w, b, res)
        return totals.encodings(self._embeddings(docs, plans, totals.sums, totals.counts))

    def _embeddings(self, docs, plans, sums, counts) -> list[np.ndarray]:
        """Alone: chunk texts embedded alone (`_embed_rows`; a chunk whose tokens in the
        document are its text's own, `Plan.own_tokens`, is not tokenized again); context:
        window-averaged chunk states (chunks without tokens fall back to being encoded
        alone)."""
        context = self.embedding_mode == "context"
        out = window_embeddings(plans, sums, counts, self.dim, context=context)
        where, rows, texts = chunks_alone(docs, plans, counts, context=context,
                                          limit=self.chunk_max_tokens - 2)
        if texts:
            tokenized = self._text_rows(self._load()[0], list(texts.values()))
            for r, ids in zip(texts, tokenized, strict=True):
                rows[r] = ids
        for (d, k), vec in zip(where, self._embed_rows(rows), strict=True):
            out[d][k] = vec
        return out

    @_serialised
    def window_blocks(self, text: str, spans: Sequence[tuple[int, int]]) -> list[WindowBlocks]:
        """Per-(layer, head) chunk-pair block means of every window (training features).

        Relations are linear in them: the aggregated block of a window equals
        sum over (l, h) of mix[l, h] * blocks[l * n_heads + h].
        """
        plan = self._plans([(text, spans)])[0]
        out = []
        for w, b, res in self._run_windows(cut_windows([plan]), heads=True):
            c = len(w.lens)
            out.append(WindowBlocks(w.start, w.start + c, res["heads"][b, :, :c, :c].copy()))
        return sorted(out, key=lambda x: x.start)
