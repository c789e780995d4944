"""store: write trees and documents to LanceDB; delete removed documents; record the run;
migrate an old database; remove what interrupted runs left; compact and prune."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.migrate import migrate
from sproutrag.store import IndexedDocument
from tasks.common import open_store


@task(name="store", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def store_batch(items: list[IndexedDocument], db: str, settings: Settings, fingerprint: str) -> int:
    return open_store(db, settings).write(items, fingerprint)


@task(name="delete", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def delete_documents(doc_ids: list[str], db: str, settings: Settings) -> None:
    open_store(db, settings).delete(doc_ids)


@task(name="start_run", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def start_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).start_run(row)


@task(name="record_run", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def record_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).finish_run(row)


@task(name="migrate", cache_policy=NO_CACHE)
def migrate_database(db: str, settings: Settings) -> list[str]:
    """Bring an older schema version up to date in place; returns the tables migrated."""
    return migrate(db, storage_options=settings.storage.lance_options(db))


@task(name="collect_garbage", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def collect_garbage(db: str, settings: Settings) -> int:
    """Remove the nodes no documents row names (left by an interrupted run)."""
    return open_store(db, settings).collect_garbage()


@task(name="maintain", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def maintain_tables(db: str, settings: Settings) -> dict[str, int]:
    """Compact the tables that need it and drop versions past the retention period."""
    pipeline = settings.pipeline
    return open_store(db, settings).maintain(
        keep_versions_days=pipeline.keep_versions_days,
        min_fragments=pipeline.optimize_fragments,
        min_old_versions=pipeline.prune_versions,
    )
