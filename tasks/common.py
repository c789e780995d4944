"""Helpers shared by the tasks: settings -> library objects, Parquet I/O."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.settings import EncodingSettings, Settings, fingerprint


@functools.lru_cache(maxsize=4)
def _encoder(encoding_json: str):
    from sproutrag.encoding import Encoder
    from sproutrag.weights import load_default_weights

    enc = EncodingSettings.model_validate_json(encoding_json)
    return Encoder(
        enc.model,
        device=enc.device,
        tokens_per_batch=enc.tokens_per_batch,
        window_tokens=enc.window_tokens,
        window_stride=enc.window_stride,
        chunk_max_tokens=enc.chunk_max_tokens,
        embedding_mode=enc.embedding_mode,
        weights=load_default_weights(enc.weights),
    )


def encoder_for(settings: Settings):
    """One cached encoder per distinct encoding settings in this process."""
    return _encoder(settings.encoding.model_dump_json())


def index_fingerprint(settings: Settings) -> str:
    return fingerprint({**encoder_for(settings).fingerprint_fields(), **settings.tree_fields()})


def write_parquet(table: pa.Table, path: str | Path, fs: Any = None) -> str:
    if fs is None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path), filesystem=fs)
    return str(path)


def read_parquet(path: str | Path, fs: Any = None) -> pa.Table:
    return pq.read_table(str(path), filesystem=fs)


def open_store(db: str, settings: Settings, storage_options: dict[str, str] | None = None):
    from sproutrag.store import Store

    enc = encoder_for(settings)
    return Store(db, encoder_id=enc.model_id, dim=enc.dim, storage_options=storage_options)
