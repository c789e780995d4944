"""store: write trees and documents to LanceDB; delete removed documents; record the run;
migrate an old database; remove what interrupted runs left; compact and prune."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run
from sproutrag.schemas.paths import is_s3
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.database import index_fields, open_store
from sproutrag.tasks.retries import IO_RETRIES

from sproutrag.documents import SourceDocument
from sproutrag.encoder.factory import shared_encoder
from sproutrag.ingest.index_identity import setting_changes
from sproutrag.storage.check import damaged_documents, move_aside
from sproutrag.storage.garbage import tree_damage
from sproutrag.storage.index_info import (
    IndexInfo,
    built_text_index,
    read_index_infos,
    record_index_info,
    remove_unused_infos,
    update_text_index,
)
from sproutrag.storage.indexes import drop_damaged
from sproutrag.storage.local_files import remove_temp_files, share_modes
from sproutrag.storage.migrate import migrate
from sproutrag.storage.rows import source_rows
from sproutrag.storage.run_check import check_files
from sproutrag.storage.store import IndexedDocument


@task(name="store", cache_policy=NO_CACHE, **IO_RETRIES)
def store_batch(items: list[IndexedDocument], db: str, settings: Settings, fingerprint: str,
                stored: Collection[str], run_id: str) -> int:
    """Store a batch (STORED: its documents that the database holds, from the plan), then
    tidy the tables if their small fragments piled up; returns the nodes rows written.
    A retry looks the stored documents up again (the failed attempt may have stored
    some of them)."""
    store = open_store(db, settings)
    first = (task_run.run_count or 1) <= 1
    n = store.write(items, fingerprint, stored=stored if first else None)
    store.tidy(run_id=run_id, keep_versions_days=settings.pipeline.keep_versions_days,
               min_small=settings.pipeline.compact_fragments)
    return n


@task(name="read_stored_state", cache_policy=NO_CACHE, **IO_RETRIES)
def read_stored_state(db: str, settings: Settings) -> pa.Table:
    """The stored documents' small columns (`Store.stored_state`: no text)."""
    return open_store(db, settings).stored_state()


@task(name="inspect_trees", cache_policy=NO_CACHE, **IO_RETRIES)
def inspect_trees(db: str, settings: Settings, stored: pa.Table, verify: bool = False
                  ) -> tuple[int, dict[str, str]]:
    """Remove the trees no document names (an interrupted run left them) and name the
    damaged documents (tree missing or incomplete; with VERIFY every tree's rows are
    counted and every document `sproutrag check` names is too: its text, tree, leaf
    texts, vectors or name): (nodes rows removed, doc_id -> why)."""
    store = open_store(db, settings)
    damage = tree_damage(store.table("nodes"), stored, force=verify)
    damaged = dict(damage.damaged)
    if verify:
        options = settings.storage.lance_options(db)
        for d, why in damaged_documents(db, storage_options=options).items():
            damaged.setdefault(d, why)  # a missing tree's reason first
    return store.collect_garbage(damage), damaged


@task(name="update_sources", cache_policy=NO_CACHE, **IO_RETRIES)
def update_sources(docs: Sequence[SourceDocument], db: str, settings: Settings) -> int:
    """Record what the listing now says of unchanged documents (their rows' listing
    columns only; the trees stay)."""
    return open_store(db, settings).update_sources(source_rows(docs))


@task(name="protect_versions", cache_policy=NO_CACHE, **IO_RETRIES)
def protect_versions(db: str, settings: Settings, run_id: str) -> None:
    """Tag the table versions this run starts from (kept when the run prunes versions)."""
    open_store(db, settings).protect_versions(run_id)


@task(name="delete", cache_policy=NO_CACHE, **IO_RETRIES)
def delete_documents(doc_ids: list[str], db: str, settings: Settings) -> None:
    open_store(db, settings).delete(doc_ids)


@task(name="start_run", cache_policy=NO_CACHE, **IO_RETRIES)
def start_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).start_run(row)


@task(name="drop_damaged_indexes", cache_policy=NO_CACHE)
def drop_damaged_indexes(db: str, settings: Settings) -> dict[str, str]:
    """Drop the indexes of `documents` and `nodes` that cannot be read or answer wrongly
    ("table.index" -> why: `drop_damaged`); the run's maintenance builds its own again
    (indexes are derived data)."""
    store = open_store(db, settings)
    return {f"{name}.{index}": why for name, tbl in store.written_tables().items()
            for index, why in drop_damaged(tbl).items()}


@task(name="mark_killed_runs", cache_policy=NO_CACHE, **IO_RETRIES)
def mark_killed_runs(db: str, settings: Settings, run_id: str) -> int:
    """Mark the `runs` rows of runs that were killed (still "running" while this run
    holds the lock) as "killed"; returns how many."""
    return open_store(db, settings).mark_killed(run_id)


@task(name="record_index_settings", cache_policy=NO_CACHE, **IO_RETRIES)
def record_index_settings(db: str, settings: Settings, fingerprint: str, run_id: str) -> bool:
    """Record how this run indexes (encoder, alpha, query-time defaults) in
    `index_settings`, before any document is written; returns whether a row changed."""
    store = open_store(db, settings)
    info = IndexInfo.build(fingerprint=fingerprint, encoder=shared_encoder(settings),
                           fields=index_fields(settings), run_id=run_id,
                           text_index=built_text_index(store))
    return record_index_info(store, info)


@task(name="settings_changes", cache_policy=NO_CACHE, **IO_RETRIES)
def settings_changes(db: str, settings: Settings, fingerprints: list[str]) -> list[str]:
    """What this run indexes differently from the documents stored under FINGERPRINTS
    (`index_identity.setting_changes` against their `index_settings` rows; a fingerprint
    without a row adds nothing)."""
    now = index_fields(settings)
    changes: list[str] = []
    for info in read_index_infos(open_store(db, settings), fingerprints).values():
        changes += [c for c in setting_changes(info.encoding(), now) if c not in changes]
    return changes


@task(name="record_run", cache_policy=NO_CACHE, **IO_RETRIES)
def record_run(row: dict[str, Any], db: str, settings: Settings) -> None:
    open_store(db, settings).finish_run(row)


@task(name="migrate", cache_policy=NO_CACHE)
def migrate_database(db: str, settings: Settings) -> dict[str, str]:
    """Bring an older schema version up to date in place; returns table -> the version
    it had."""
    return migrate(db, storage_options=settings.storage.lance_options(db))


@task(name="check_tables", cache_policy=NO_CACHE)
def check_tables(db: str, settings: Settings) -> dict[str, str]:
    """The start-of-run check: tables whose files are missing or truncated (name -> why),
    from the manifests (no retries: a damaged file stays damaged)."""
    return check_files(db, storage_options=settings.storage.lance_options(db))


@task(name="move_damaged_tables", cache_policy=NO_CACHE)
def move_damaged_tables(db: str, names: list[str]) -> dict[str, str]:
    """Move the folders of unreadable tables aside (a --full run re-creates them)."""
    return move_aside(db, names)


@task(name="collect_garbage", cache_policy=NO_CACHE, **IO_RETRIES)
def collect_garbage(db: str, settings: Settings) -> int:
    """Remove the nodes no documents row names (left by an interrupted run)."""
    return open_store(db, settings).collect_garbage()


@task(name="tidy_local_files", cache_policy=NO_CACHE)
def tidy_local_files(db: str) -> tuple[int, int]:
    """A local database's temporary files that killed writers left, removed, and every
    file made readable as the umask allows (`storage.local_files`): (files, bytes)
    removed. Nothing to do on S3."""
    if is_s3(db):
        return 0, 0
    removed = remove_temp_files(db)
    share_modes(db)
    return removed


@task(name="maintain", cache_policy=NO_CACHE, **IO_RETRIES)
def maintain_tables(db: str, settings: Settings, run_id: str, fingerprint: str
                    ) -> dict[str, int]:
    """Build the indexes that are missing, compact the tables that need it, fold new rows
    into the indexes and prune the versions (`Store.maintain`); then record the
    full-text index that exists in the run's `index_settings` row and remove the rows
    no document carries any more."""
    pipeline = settings.pipeline
    store = open_store(db, settings)
    removed = store.maintain(
        run_id=run_id, keep_versions_days=pipeline.keep_versions_days,
        min_fragments=pipeline.optimize_fragments,
        min_old_versions=pipeline.prune_versions,
    )
    update_text_index(store, fingerprint)
    remove_unused_infos(store, fingerprint)  # the fingerprints this run re-indexed away
    return removed
