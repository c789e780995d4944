"""build_trees: embeddings + relations -> one attention tree per document."""

from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.files import read_parquet
from sproutrag.tasks.outputs import Built, Encoded

from sproutrag.documents import SourceDocument
from sproutrag.ingest.stages import build_trees


@task(name="build_trees", cache_policy=NO_CACHE)
def build_trees_batch(docs: list[SourceDocument], encoded: Encoded, settings: Settings) -> Built:
    t0 = time.perf_counter()
    items, failures = build_trees(
        docs,
        read_parquet(encoded.chunks_path, settings),
        read_parquet(encoded.embeddings_path, settings),
        read_parquet(encoded.relations_path, settings),
        parent_embedding=settings.tree.parent_embedding,
    )
    return Built(items, failures, time.perf_counter() - t0)
