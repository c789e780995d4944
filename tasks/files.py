"""Files of the tasks: fsspec filesystems and Parquet intermediates, local or s3://."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from sproutrag.schemas.settings import Settings, is_s3


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
