"""chunk: sentences -> chunks with exact character spans -> chunks.parquet."""

from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.files import write_parquet
from sproutrag.tasks.outputs import Chunked

from sproutrag.documents import SourceDocument
from sproutrag.ingest.stages import chunk_documents
from sproutrag.interrupt import check_stop


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_batch(docs: list[SourceDocument], settings: Settings, out_dir: str) -> Chunked:
    check_stop("chunk")
    t0 = time.perf_counter()
    chunks, failures = chunk_documents(
        docs,
        sentences_per_chunk=settings.chunking.sentences_per_chunk,
        max_chunk_chars=settings.chunking.max_chunk_chars,
        within_paragraphs=settings.chunking.within_paragraphs,
        respect_structure=settings.chunking.respect_structure,
        join_max_chars=settings.chunking.join_max_chars,
        lists=settings.chunking.lists,
        sentence_rules=settings.chunking.sentence_rules,
    )
    path = write_parquet(chunks, f"{out_dir}/chunks.parquet", settings)
    return Chunked(path, failures, time.perf_counter() - t0)
