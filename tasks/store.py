"""store: write trees and documents to LanceDB; delete removed documents; record the run;
migrate an old database; remove what interrupted runs left; compact and prune."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.encoder.factory import shared_encoder
from sproutrag.storage.check import Health, check_for_run, move_aside
from sproutrag.storage.index_info import IndexInfo, record_index_info
from sproutrag.storage.migrate import migrate
from sproutrag.storage.store import IndexedDocument
from tasks.database import index_fields, open_store
from tasks.retries import IO_RETRIES


@task(name="store", cache_policy=NO_CACHE, **IO_RETRIES)
def store_batch(items: list[IndexedDocument], db: str, settings: Settings, fingerprint: str) -> int:
    return open_store(db, settings).write(items, fingerprint)


@task(name="delete", cache_policy=NO_CACHE, **IO_RETRIES)
def delete_documents(doc_ids: list[str], db: str, settings: Settings) -> None:
    open_store(db, settings).delete(doc_ids)


@task(name="start_run", cache_policy=NO_CACHE, **IO_RETRIES)
def start_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).start_run(row)


@task(name="record_index_settings", cache_policy=NO_CACHE, **IO_RETRIES)
def record_index_settings(db: str, settings: Settings, fingerprint: str, run_id: str) -> bool:
    """Record how this run indexes (encoder, alpha, query-time defaults) in
    `index_settings`, before any document is written; returns whether a row changed."""
    info = IndexInfo.build(fingerprint=fingerprint, encoder=shared_encoder(settings),
                           fields=index_fields(settings), run_id=run_id)
    return record_index_info(open_store(db, settings), info)


@task(name="record_run", cache_policy=NO_CACHE, **IO_RETRIES)
def record_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).finish_run(row)


@task(name="migrate", cache_policy=NO_CACHE)
def migrate_database(db: str, settings: Settings) -> list[str]:
    """Bring an older schema version up to date in place; returns the tables migrated."""
    return migrate(db, storage_options=settings.storage.lance_options(db))


@task(name="check_tables", cache_policy=NO_CACHE)
def check_tables(db: str, settings: Settings) -> Health:
    """The start-of-run check: unreadable tables, documents whose tree or text is
    damaged (no retries: a damaged file stays damaged)."""
    return check_for_run(db, storage_options=settings.storage.lance_options(db))


@task(name="move_damaged_tables", cache_policy=NO_CACHE)
def move_damaged_tables(db: str, names: list[str]) -> dict[str, str]:
    """Move the folders of unreadable tables aside (a --full run re-creates them)."""
    return move_aside(db, names)


@task(name="collect_garbage", cache_policy=NO_CACHE, **IO_RETRIES)
def collect_garbage(db: str, settings: Settings) -> int:
    """Remove the nodes no documents row names (left by an interrupted run)."""
    return open_store(db, settings).collect_garbage()


@task(name="maintain", cache_policy=NO_CACHE, **IO_RETRIES)
def maintain_tables(db: str, settings: Settings) -> dict[str, int]:
    """Compact the tables that need it and drop versions past the retention period."""
    pipeline = settings.pipeline
    return open_store(db, settings).maintain(
        keep_versions_days=pipeline.keep_versions_days,
        min_fragments=pipeline.optimize_fragments,
        min_old_versions=pipeline.prune_versions,
    )
