"""encode: chunks.parquet -> embeddings.parquet + relations.parquet."""

from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.files import read_parquet, write_parquet
from sproutrag.tasks.outputs import Chunked, Encoded

from sproutrag.documents import SourceDocument
from sproutrag.encoder.factory import shared_encoder
from sproutrag.ingest.stages import encode_chunks
from sproutrag.interrupt import check_stop


@task(name="encode", cache_policy=NO_CACHE)
def encode_batch(
    docs: list[SourceDocument], chunked: Chunked, settings: Settings, out_dir: str
) -> Encoded:
    t0 = time.perf_counter()
    chunks = read_parquet(chunked.chunks_path, settings)
    encoder = shared_encoder(settings)
    waiting = time.perf_counter()
    with encoder.lock:  # time spent waiting for another batch is not encode time
        waited = time.perf_counter() - waiting
        check_stop("encode")  # a stop requested while this batch waited for the model
        emb, rel, failures = encode_chunks(docs, chunks, encoder)
    emb_path = write_parquet(emb, f"{out_dir}/embeddings.parquet", settings)
    rel_path = write_parquet(rel, f"{out_dir}/relations.parquet", settings)
    return Encoded(chunked.chunks_path, emb_path, rel_path, failures,
                   time.perf_counter() - t0 - waited)
