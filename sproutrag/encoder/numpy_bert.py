"""Questions embedded without torch: a numpy forward of a BERT-architecture encoder.

A query process (`sproutrag query`, a service's first request) spent about 3 of its
first 6 seconds importing torch and transformers to embed one short question. This
module computes the same embedding (the model's own tokenizer file, its safetensors
weights, mean pooling and L2 normalisation as sentence-transformers does) with numpy,
`tokenizers` and `safetensors` alone; it agrees with the torch forward to float rounding
(about 1e-6, tests/sproutrag/encoder/test_numpy_bert.py). Documents are still embedded
by torch (`Encoder`: windows, attention relations, a GPU when there is one).

`supported(path)` says whether a model folder has the layout this forward assumes
(`BertModel`, absolute positions, exact GELU, `model.safetensors`, `tokenizer.json`);
`Encoder.encode_queries` falls back to torch for anything else.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.encoder.blas_threads import blas_on_one_thread

__all__ = ["NumpyBert", "load", "supported"]

#: Questions per forward batch (short texts: the cost is in the matrix products).
BATCH = 64


def _config(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def supported(model_path: str) -> bool:
    """Whether MODEL_PATH is a local BERT-architecture folder this forward can run."""
    path = Path(model_path)
    cfg = _config(path) if path.is_dir() else None
    if cfg is None:
        return False
    return (cfg.get("model_type") == "bert"
            and cfg.get("architectures") in (None, ["BertModel"])
            and cfg.get("hidden_act") == "gelu"
            and cfg.get("position_embedding_type", "absolute") == "absolute"
            and not cfg.get("is_decoder", False)
            and (path / "model.safetensors").is_file()
            and (path / "tokenizer.json").is_file())


def _erf(x: np.ndarray) -> np.ndarray:
    """erf within 1.5e-7 (Abramowitz and Stegun 7.1.26), vectorised, float64 inside:
    below float32's rounding of the activations it feeds."""
    x = x.astype(np.float64)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x * Phi(x), as BERT's "gelu" activation."""
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class NumpyBert:
    """A BERT encoder's last hidden states and sentence embeddings, in numpy."""

    def __init__(self, model_path: str) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(model_path)
        cfg = _config(path) or {}
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        raw = load_file(str(path / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32, copy=False)
                  for k, v in raw.items() if v.dtype.kind == "f"}
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        special = _special_tokens(path)
        self.cls, self.sep, self.pad = (self.tokenizer.token_to_id(special[k])
                                        for k in ("cls_token", "sep_token", "pad_token"))

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def hidden(self, ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Last hidden states [B, T, d] of int ids [B, T] ([CLS] ... [SEP] then padding;
        VALID: bool [B, T], the real tokens)."""
        w, (b, t) = self.w, ids.shape
        h = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:t][None]
             + w["embeddings.token_type_embeddings.weight"][0])
        h = _layer_norm(h, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"],
                        self.eps)
        d = h.shape[-1]
        size = d // self.heads
        bias = np.where(valid, 0.0, np.finfo(np.float32).min).astype(np.float32)
        for n in range(self.layers):
            p = f"encoder.layer.{n}"

            def split(x: np.ndarray) -> np.ndarray:
                return x.reshape(b, t, self.heads, size).transpose(0, 2, 1, 3)

            q, k, v = (split(self._linear(h, f"{p}.attention.self.{m}"))
                       for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(size))
            scores = scores + bias[:, None, None, :]
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
            h = _layer_norm(self._linear(ctx, f"{p}.attention.output.dense") + h,
                            w[f"{p}.attention.output.LayerNorm.weight"],
                            w[f"{p}.attention.output.LayerNorm.bias"], self.eps)
            mid = _gelu(self._linear(h, f"{p}.intermediate.dense"))
            h = _layer_norm(self._linear(mid, f"{p}.output.dense") + h,
                            w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"],
                            self.eps)
        return h.astype(np.float32)

    def encode(self, texts: Sequence[str], max_tokens: int) -> np.ndarray:
        """float32 (n, d) L2-normalised mean-pooled embeddings of TEXTS, each cut to
        MAX_TOKENS tokens before [CLS] and [SEP] are added (as `Encoder.encode_texts`)."""
        texts = list(texts)
        d = self.w["embeddings.word_embeddings.weight"].shape[1]
        out = np.zeros((len(texts), d), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids[:max_tokens] for e in
               self.tokenizer.encode_batch(texts, add_special_tokens=False)]
        order = np.argsort([-len(x) for x in ids], kind="stable")
        # A question's products are small: on 2 busy cores OpenBLAS's threads, which spin
        # waiting for each other, took a question 31 ms (p95 697 ms) against 11 ms (p95
        # 14 ms) on one thread (docs/results.md, "A question's forward on one BLAS thread").
        with blas_on_one_thread():
            self._forward_batches(ids, order, out)
        return out

    def _forward_batches(self, ids: list[list[int]], order: np.ndarray, out: np.ndarray
                         ) -> None:
        """Embed the token IDS, BATCH at a time in ORDER (longest first), into OUT."""
        for at in range(0, len(order), BATCH):
            idx = order[at: at + BATCH]
            longest = max(len(ids[i]) for i in idx) + 2
            batch = np.full((len(idx), longest), self.pad, dtype=np.int64)
            valid = np.zeros((len(idx), longest), dtype=bool)
            for row, i in enumerate(idx):
                n = len(ids[i])
                batch[row, 0], batch[row, 1: n + 1], batch[row, n + 1] = self.cls, ids[i], self.sep
                valid[row, : n + 2] = True
            h = self.hidden(batch, valid)
            m = valid[..., None].astype(np.float32)
            vec = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            out[idx] = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)


def _special_tokens(path: Path) -> dict[str, str]:
    """cls, sep and pad tokens from the folder's special_tokens_map.json (BERT's own
    names when absent)."""
    names = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"}
    try:
        found = json.loads((path / "special_tokens_map.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return names
    for key in names:
        value = found.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            names[key] = value
    return names


@functools.lru_cache(maxsize=2)
def load(model_path: str, content: str | None = None) -> NumpyBert:
    """The numpy encoder of MODEL_PATH, loaded once per (path, content hash)."""
    return NumpyBert(model_path)
