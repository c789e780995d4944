"""Helpers shared by the tasks: settings -> library objects, Parquet I/O."""

from __future__ import annotations

import errno
import functools
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.settings import EncodingSettings, Settings, fingerprint, is_s3


@functools.lru_cache(maxsize=4)
def _encoder(encoding_json: str):
    from sproutrag.encoding import Encoder
    from sproutrag.weights import load_default_weights

    enc = EncodingSettings.model_validate_json(encoding_json)
    if enc.threads:
        import torch

        torch.set_num_threads(enc.threads)  # process-wide: the encoder is the CPU user
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


_ENCODE_LOCK = threading.Lock()

#: OSErrors that another attempt cannot fix (missing, forbidden, read-only, disk full).
_PERMANENT_ERRNOS = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS,
                               errno.ENOSPC, errno.EDQUOT, errno.EISDIR, errno.ENOTDIR})


def retry_transient(task, task_run, state) -> bool:  # Prefect passes all three
    """Prefect `retry_condition_fn`: retry only errors that another attempt may pass
    (a dropped connection, a timeout), not a missing corpus, a bad setting, a read-only
    database or a full disk."""
    from sproutrag.errors import os_errno

    exc = state.data if isinstance(getattr(state, "data", None), BaseException) else None
    if exc is None:
        return True
    if isinstance(exc, ValueError | LookupError | TypeError | FileNotFoundError
                  | PermissionError | IsADirectoryError | NotADirectoryError):
        return False  # a missing corpus, bad input or settings: the same next time
    code = os_errno(exc)
    return code is None or code not in _PERMANENT_ERRNOS


def encode_lock() -> threading.Lock:
    """One encode at a time per process.

    The cached encoder (tokenizer and model) is shared by the thread runner's tasks and
    is not thread-safe: concurrent batches garbled each other's token windows. Torch
    already uses every core for one batch. (A function, not a module constant, so the
    tasks pickle for Dask workers.)
    """
    return _ENCODE_LOCK


def encoder_for(settings: Settings):
    """One cached encoder per distinct encoding settings in this process."""
    return _encoder(settings.encoding.model_dump_json())


def index_fields(settings: Settings) -> dict:
    """Everything that changes the stored trees and vectors (no storage settings)."""
    return {**encoder_for(settings).fingerprint_fields(), **settings.tree_fields()}


def index_fingerprint(settings: Settings) -> str:
    return fingerprint(index_fields(settings))


def filesystem(url: str | Path, settings: Settings | None = None):
    """(fsspec filesystem, path) for a local path or an s3:// URL, with the storage options."""
    import fsspec.core

    opts = settings.storage.fsspec_options(url) if settings is not None else {}
    return fsspec.core.url_to_fs(str(url), **opts)


def write_parquet(table: pa.Table, path: str | Path, settings: Settings | None = None) -> str:
    """Write TABLE to a local path or an s3:// URL; returns PATH as given."""
    if not is_s3(path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, str(path))
        return str(path)
    fs, where = filesystem(path, settings)
    pq.write_table(table, where, filesystem=fs)
    return str(path)


def read_parquet(path: str | Path, settings: Settings | None = None) -> pa.Table:
    if not is_s3(path):
        return pq.read_table(str(path))
    fs, where = filesystem(path, settings)
    return pq.read_table(where, filesystem=fs)


def open_store(db: str, settings: Settings):
    from sproutrag.store import Store

    enc = encoder_for(settings)
    return Store(
        db, encoder_id=enc.model_id, dim=enc.dim,
        storage_options=settings.storage.lance_options(db),
    )


#: Retries of the I/O tasks: two, after 2 s and 10 s, only for errors that may pass.
IO_RETRIES = {"retries": 2, "retry_delay_seconds": [2, 10], "retry_condition_fn": retry_transient}
