"""search: read a batch of queries, run them, write JSONL and the `results` table."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sproutrag.schemas.settings import Settings, is_s3
from sproutrag.tasks.files import filesystem, read_parquet
from sproutrag.tasks.retries import IO_RETRIES

from sproutrag.encoder.factory import shared_encoder
from sproutrag.errors import DatasetError
from sproutrag.search.batch import (
    DEFAULT_K,
    Entry,
    parse_lines,
    query_texts,
    run_queries,
    write_jsonl,
)
from sproutrag.search.context import DEFAULT_MARGIN
from sproutrag.search.reader_settings import reader_settings, reader_weights
from sproutrag.search.retriever import Retriever
from sproutrag.storage.reader import Reader
from sproutrag.storage.rows import result_rows
from sproutrag.storage.store import Store


@task(name="read_queries", cache_policy=NO_CACHE, **IO_RETRIES)
def read_queries(path: str, settings: Settings | None = None) -> list[Entry]:
    """The batch's entries; a line that is not JSON is an entry with its error."""
    if path.endswith(".parquet"):
        rows = read_parquet(path, settings).to_pylist()
        return [Entry(n, row) for n, row in enumerate(rows, start=1)]
    fs, where = filesystem(path, settings)
    if not fs.isfile(where):  # the system's "[Errno 2] No such file" named no argument
        raise DatasetError(f"queries {path}: no such file (a JSONL file of query lines)")
    with fs.open(where, "rb") as fh:
        return parse_lines(fh)


@task(name="search", cache_policy=NO_CACHE)
def search_queries(
    queries: list[Entry], db: str, *, k: int | None, mode: str, beam: int,
    settings: Settings, budget_chars: int | None = None, budget_tokens: int | None = None,
    selection: str | None = None, tokenizer: str | None = None,
    cutoff: float | None = DEFAULT_MARGIN,
) -> list[dict[str, Any]]:
    reader = Reader.open(db, storage_options=settings.storage.lance_options(db))
    encoder = shared_encoder(reader_settings(reader, settings))  # the database's by default
    retriever = Retriever(reader, encoder=encoder, weights=reader_weights(settings),
                          beam_width=beam, **settings.search.retriever_options())
    return run_queries(retriever, queries, k=k, mode=mode, budget_chars=budget_chars,
                       budget_tokens=budget_tokens, selection=selection, tokenizer=tokenizer,
                       cutoff=cutoff)


@task(name="write_results", cache_policy=NO_CACHE, **IO_RETRIES)
def write_results(
    rows: list[dict[str, Any]], db: str, out: str, *, k: int | None, mode: str,
    settings: Settings, flow_run_id: str | None = None,
    queries: list[Entry] | None = None,
) -> str:
    """Write OUT (JSONL) and append to `results`; returns the query run's id. K: as the
    run was given (None: `DEFAULT_K` for a top-k query, no bound for a context); QUERIES:
    the batch ROWS answer, line by line (their questions go to the table)."""
    run_id = uuid.uuid4().hex[:12]
    table = result_rows(rows, run_id=run_id, k=k, default_k=DEFAULT_K, mode=mode,
                        flow_run_id=flow_run_id,
                        queries=query_texts(queries) if queries is not None else None)
    if is_s3(out):
        fs, where = filesystem(out, settings)
        write_jsonl(where, rows, fs=fs)
    else:
        write_jsonl(out, rows)
    Store.open_existing(db, storage_options=settings.storage.lance_options(db)).add_results(table)
    return run_id
