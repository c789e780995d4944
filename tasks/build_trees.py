"""build_trees: embeddings + relations -> one attention tree per document."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.corpus import Failure, SourceDocument
from sproutrag.indexing import build_trees
from sproutrag.store import IndexedDocument
from tasks.common import read_parquet


@task(name="build_trees", cache_policy=NO_CACHE)
def build_trees_batch(
    docs: list[SourceDocument],
    chunks_path: str,
    embeddings_path: str,
    relations_path: str,
    settings: Settings,
) -> tuple[list[IndexedDocument], list[Failure]]:
    return build_trees(
        docs,
        read_parquet(chunks_path),
        read_parquet(embeddings_path),
        read_parquet(relations_path),
        parent_embedding=settings.tree.parent_embedding,
    )
