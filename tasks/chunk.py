"""chunk: sentences -> chunks with exact character spans -> chunks.parquet."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.corpus import Failure, SourceDocument
from sproutrag.indexing import chunk_documents
from tasks.common import write_parquet


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_batch(
    docs: list[SourceDocument], settings: Settings, out_dir: str
) -> tuple[str, list[Failure]]:
    chunks, failures = chunk_documents(
        docs,
        sentences_per_chunk=settings.chunking.sentences_per_chunk,
        max_chunk_chars=settings.chunking.max_chunk_chars,
    )
    return write_parquet(chunks, f"{out_dir}/chunks.parquet"), failures
