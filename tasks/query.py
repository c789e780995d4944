"""search: read a batch of queries, run them, write JSONL and the `results` table."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas import tables
from schemas.settings import Settings, is_s3
from sproutrag.retrieval import Retriever, run_queries
from tasks.common import encoder_for, filesystem, read_parquet


@task(name="read_queries", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def read_queries(path: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    if path.endswith(".parquet"):
        return read_parquet(path, settings).to_pylist()
    fs, where = filesystem(path, settings)
    with fs.open(where, "r", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@task(name="search", cache_policy=NO_CACHE)
def search_queries(
    queries: list[dict[str, Any]], db: str, *, k: int, mode: str, beam: int,
    settings: Settings | None = None,
) -> list[dict[str, Any]]:
    opts = settings.storage.lance_options(db) if settings is not None else None
    encoder = encoder_for(settings) if settings is not None else None
    retriever = Retriever(db, encoder=encoder, beam_width=beam, storage_options=opts)
    return run_queries(retriever, queries, k=k, mode=mode)


def result_rows(rows: list[dict[str, Any]], *, run_id: str, k: int, mode: str) -> pa.Table:
    now, out = datetime.now(UTC), []
    base = {"run_id": run_id, "mode": mode, "k": k, "created_at": now}
    for row in rows:
        if "error" in row:
            out.append({**base, "qid": row["qid"], "rank": 0, "error": row["error"]})
        for rank, hit in enumerate(row["results"], start=1):
            out.append({**base, "qid": row["qid"], "rank": rank, **hit})
    return pa.Table.from_pylist(out, schema=tables.RESULTS)


@task(name="write_results", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def write_results(
    rows: list[dict[str, Any]], db: str, out: str, *, k: int, mode: str,
    settings: Settings | None = None,
) -> str:
    import lancedb

    run_id = uuid.uuid4().hex[:12]
    fs, where = filesystem(out, settings)
    if not is_s3(out):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    with fs.open(where, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    opts = settings.storage.lance_options(db) if settings is not None else None
    conn = lancedb.connect(db, storage_options=opts)
    table = result_rows(rows, run_id=run_id, k=k, mode=mode)
    if "results" in conn.list_tables().tables:
        conn.open_table("results").add(table)
    else:
        conn.create_table("results", data=table, schema=tables.RESULTS)
    return run_id
