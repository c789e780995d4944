"""store: write trees and documents to LanceDB; delete removed documents; record the run."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.store import IndexedDocument
from tasks.common import open_store


@task(name="store", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def store_batch(items: list[IndexedDocument], db: str, settings: Settings, fingerprint: str) -> int:
    return open_store(db, settings).write(items, fingerprint)


@task(name="delete", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def delete_documents(doc_ids: list[str], db: str, settings: Settings) -> None:
    open_store(db, settings).delete(doc_ids)


@task(name="record_run", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def record_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).add_run(row)


@task(name="maintain", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def maintain_tables(db: str, settings: Settings) -> dict[str, int]:
    """Compact the tables and drop versions past the retention period."""
    return open_store(db, settings).maintain(
        keep_versions_days=settings.pipeline.keep_versions_days
    )
