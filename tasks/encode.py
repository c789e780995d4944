"""encode: chunks.parquet -> embeddings.parquet + relations.parquet."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.corpus import Failure, SourceDocument
from sproutrag.indexing import encode_chunks
from tasks.common import encoder_for, read_parquet, write_parquet


@task(name="encode", cache_policy=NO_CACHE)
def encode_batch(
    docs: list[SourceDocument], chunks_path: str, settings: Settings, out_dir: str
) -> tuple[str, str, list[Failure]]:
    emb, rel, failures = encode_chunks(docs, read_parquet(chunks_path), encoder_for(settings))
    return (
        write_parquet(emb, f"{out_dir}/embeddings.parquet"),
        write_parquet(rel, f"{out_dir}/relations.parquet"),
        failures,
    )
