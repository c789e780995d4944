"""Prefect flow `index-corpus`: discover -> diff -> chunk -> encode -> build_trees -> store.

The CLI (`sproutrag index`) runs this same flow. Under the database's run lock a run
checks each table's files against its manifest (a damaged table fails the run, or with
--full is moved aside: `sproutrag.storage.run_check`), migrates an older schema, writes
its `runs` row ("running"), tags the table versions it starts from, reads the stored
documents' small columns, removes what interrupted runs left and names documents whose
tree is damaged (re-indexed), lists the corpus (no text read) and diffs it with the
stored state (refusing mass deletions), then reads the documents the plan needs one at a
time and indexes the new and changed ones in batches sized by characters
(`pipeline.batch_chars`; the batch loop: `sproutrag.flows.index_batches`); each
batch's Parquet intermediates live in the run's own folder below the work dir until the
batch is stored. It deletes what left the corpus, records the listing of documents found
unchanged after reading, maintains the tables and completes its row. SIGTERM / SIGINT
stop it between batches ("interrupted"). The flow run ends Failed when more documents
failed than `pipeline.max_failed_share` tolerates (the data: `DocumentsFailedError` with
the run's row), Cancelled when interrupted.

Large task parameters (a batch's documents and trees, the listing, the settings of the
per-batch tasks) go in Prefect's `quote`: Prefect would otherwise walk every element
twice per task looking for futures (about 0.15 s per task of 1,000 documents). The task
receives the value itself; futures are never quoted, nor what the Dask runner pickles.
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from prefect.states import Cancelled, Failed
from prefect.utilities.annotations import quote
from sproutrag.flows.index_batches import IndexRun, index_all, timed_stage
from sproutrag.flows.parameters import flow_settings
from sproutrag.flows.preflight_s3 import check_s3_paths
from sproutrag.schemas.settings import Settings, is_s3
from sproutrag.schemas.tables import ROWS_COMPATIBLE_VERSIONS
from sproutrag.tasks.database import index_fingerprint
from sproutrag.tasks.discover import (
    check_corpus_exists,
    diff_corpus,
    discover_corpus,
    read_documents,
)
from sproutrag.tasks.store import (
    check_tables,
    delete_documents,
    drop_damaged_indexes,
    inspect_trees,
    maintain_tables,
    mark_killed_runs,
    migrate_database,
    move_damaged_tables,
    protect_versions,
    read_stored_state,
    record_index_settings,
    record_run,
    settings_changes,
    start_run,
    tidy_local_files,
    update_sources,
)
from sproutrag.tasks.workdir import close_work_dir, open_work_dir

from sproutrag.documents import Skipped
from sproutrag.errors import StoragePathError, describe_storage_error, short_error
from sproutrag.ingest.batching import Tally, documents_to_index, metadata_note
from sproutrag.ingest.index_identity import reindex_note
from sproutrag.ingest.plan import Plan, check_deletions, check_not_empty, deletion_note
from sproutrag.ingest.run_summary import RunInterruptedError, RunSummary
from sproutrag.interrupt import stop_on_signals, stop_reason, stop_requested
from sproutrag.storage.check import DamagedTableError, with_dependents
from sproutrag.storage.locking import DatabaseLock

#: Unchanged documents whose listing facts changed are recorded this many at a time.
SOURCES_PER_COMMIT = 50_000


def _skipped_kinds(skipped: list[Skipped]) -> list[tuple[str, list[Skipped]]]:
    """Skipped symlinks by kind (a folder symlink's name ends with "/"), non-empty only."""
    folders = [s for s in skipped if s.doc_id.endswith("/")]
    outside = [s for s in skipped if not s.doc_id.endswith("/")]
    kinds = [("pointing outside the corpus folder (pipeline.allow_external_symlinks)",
              outside), ("to folders (never followed)", folders)]
    return [(what, group) for what, group in kinds if group]


def _plan(run: IndexRun, stored, damaged: dict[str, str]):
    """List the corpus, diff it with the stored state, refuse a mass deletion."""
    summary, logger = run.summary, run.logger
    with timed_stage(summary, "discover"):
        listing = discover_corpus(run.corpus, run.settings, run.allow_mass_delete)
        summary.failures = list(listing.failures)
        plan = diff_corpus(quote(listing), stored, run.settings, summary.fingerprint,
                           run.full, quote(damaged), run.verify)
    for what, group in _skipped_kinds(listing.skipped):
        summary.note(f"skipped {len(group)} symlinks {what}: "
                     f"{', '.join(f.shown for f in group[:10])}")
    for f in listing.skipped:
        logger.warning("skipped %s: %s", f.shown, f.reason)
    max_share = run.settings.pipeline.max_delete_share
    check_deletions(plan, plan.n_indexed, corpus=run.corpus, allow=run.allow_mass_delete,
                    max_share=max_share)
    check_not_empty(plan, len(summary.failures), corpus=run.corpus,
                    allow=run.allow_mass_delete)
    if note := deletion_note(plan, plan.n_indexed, max_share):
        summary.note(note)
        logger.warning(note)
    summary.n_unchanged = plan.n_unchanged
    logger.info(
        "discover: %d documents listed: %d unchanged by the listing, %d to read; %d "
        "deleted; %d failed (%d of them indexed before: their indexed version stays)",
        plan.n_listed, plan.n_unchanged, len(plan.to_read), len(plan.deleted),
        len(summary.failures), len(plan.kept),
    )
    for f in summary.failures:
        logger.warning("failed: %s", f.line)
    if plan.held_reason:
        summary.note(plan.held_reason)
        logger.warning(plan.held_reason)
    _note_settings_change(run, plan)
    return listing, plan


def _note_settings_change(run: IndexRun, plan: Plan) -> None:
    """Say why documents whose text did not change are re-indexed: they were indexed
    with other index settings (which ones, as `index_settings` recorded them)."""
    other = plan.other_settings()
    if not other:  # with --full too: the run re-indexes everything, the note says what changed
        return
    text = reindex_note(sum(other.values()),
                        settings_changes(run.db, run.settings, sorted(other)))
    run.summary.note(text)
    run.logger.warning(text)


def _inspect(run: IndexRun):
    """The stored state, with what interrupted runs left removed and the damaged
    documents named."""
    stored = read_stored_state(run.db, run.settings)
    removed, damaged = inspect_trees(run.db, run.settings, stored, run.verify)
    if removed:
        run.logger.warning("removed %d nodes rows an interrupted run left (no documents "
                           "row named them)", removed)
    return stored, damaged


def _run(run: IndexRun) -> None:
    """The run's work, under the lock; `run.summary` is finished when this returns."""
    summary, settings = run.summary, run.settings
    stored_state, damaged = _inspect(run)
    listing, plan = _plan(run, stored_state, damaged)
    work, leftovers = open_work_dir(run.db, settings, summary.run_id)
    if leftovers:
        run.logger.warning("removed %d work folders of killed runs of this database",
                           leftovers)
    tally = Tally()
    try:
        found = read_documents(listing, plan.to_read, settings)
        stored = index_all(documents_to_index(found, plan, tally), plan, run, work, tally)
    finally:
        close_work_dir(work, run.db, settings)
    summary.failures += tally.failures
    summary.n_unchanged += tally.unchanged
    _report_damaged(plan, damaged, tally, summary, run.logger)
    if stop_requested():
        summary.finish("interrupted", f"{stop_reason()} after {len(stored)} documents")
        return
    with timed_stage(summary, "store"):
        delete_documents(quote(plan.deleted), run.db, settings)
        for k in range(0, len(tally.restat), SOURCES_PER_COMMIT):
            update_sources(quote(tally.restat[k : k + SOURCES_PER_COMMIT]), run.db, settings)
    summary.n_deleted = len(plan.deleted)
    if note := metadata_note(tally.retitled):
        summary.note(note)
    with timed_stage(summary, "maintain"):
        maintain_tables(run.db, settings, summary.run_id, summary.fingerprint)
        files, size = tidy_local_files(run.db)
    if files:
        run.logger.warning("removed %d temporary files (%.1f MB) that killed runs left in "
                           "the tables' folders", files, size / 1e6)
    summary.finish(max_failed_share=settings.pipeline.max_failed_share)


def _report_damaged(plan: Plan, damaged: dict[str, str], tally: Tally,
                    summary: RunSummary, logger) -> None:
    """Name the damaged documents: re-indexed now, or (not in the corpus now) deleted."""
    if not damaged:
        return
    shown = "; ".join(f"{d}: {why}" for d, why in list(damaged.items())[:5])
    more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
    text = (f"{len(damaged)} documents were damaged in the database ({shown}{more}): "
            f"{len(tally.repaired)} re-indexed from the corpus")
    left = sorted(set(damaged) - set(tally.repaired) - set(plan.deleted))
    if left:
        text += f"; not in the corpus or unreadable there, still damaged: {', '.join(left[:10])}"
    summary.note(text)
    logger.warning(text)


def _check_tables(db: str, settings: Settings, full: bool, logger) -> list[str]:
    """The start-of-run check: a damaged table fails the run (DamagedTableError), or with
    --full is moved aside; returns notes for the summary."""
    unreadable = check_tables(db, settings)
    if not unreadable:
        return []
    if not full:
        raise DamagedTableError(db, unreadable)
    unreadable = with_dependents(db, unreadable)
    moved = move_damaged_tables(db, sorted(unreadable))
    note = ("moved damaged tables aside (kept, not deleted): " + ", ".join(
        f"{n} ({unreadable[n]}) -> {path}" for n, path in moved.items())
        + "; this --full run re-creates them")
    logger.warning(note)
    return [note]


def _migrate(db: str, settings: Settings, logger) -> None:
    migrated = migrate_database(db, settings)
    if not migrated:
        return
    rewritten = any(v not in ROWS_COMPATIBLE_VERSIONS for v in migrated.values())
    logger.warning("migrated tables %s of %s to the current schema in place%s",
                   ", ".join(migrated), db, "; every document is re-indexed" if rewritten
                   else " (columns added, no row rewritten, nothing re-indexed)")


def _locked_run(run: IndexRun) -> RunSummary:
    """Migrate, record the start, run, record the end: the `runs` row is always completed
    unless the process is killed. A damaged table fails the run here, before it writes
    anything (with --full: moved aside, then rebuilt)."""
    db, settings, summary = run.db, run.settings, run.summary
    notes = _check_tables(db, settings, run.full, run.logger)
    _migrate(db, settings, run.logger)
    damaged = drop_damaged_indexes(db, settings)
    if damaged:
        notes.append("indexes dropped (derived data; this run's maintenance builds its "
                     "own again): "
                     + "; ".join(f"{name} ({why})" for name, why in damaged.items()))
        run.logger.warning(notes[-1])
    for note in notes:
        summary.note(note)
    if mark_killed_runs(db, settings, summary.run_id):
        run.logger.warning("runs left 'running' by killed runs are marked 'killed'")
    start_run(summary.to_row(), db, settings)
    try:
        protect_versions(db, settings, summary.run_id)
        record_index_settings(db, settings, summary.fingerprint, summary.run_id)
        _run(run)
    except KeyboardInterrupt as exc:  # a second signal
        summary.finish("interrupted", f"stopped at once: {exc}")
        record_run(summary.to_row(), db, settings)
        raise
    except Exception as exc:
        error = _storage_error(run, exc) or exc
        summary.finish("failed", f"{type(error).__name__}: {error}")
        _record_failed_run(run)
        if error is exc:
            raise
        raise error from exc
    record_run(summary.to_row(), db, settings)
    return summary


def _storage_error(run: IndexRun, exc: Exception) -> StoragePathError | None:
    """EXC as the one line an S3 failure gets (what to check, naming the run's s3://
    paths and endpoint; `describe_storage_error`), or None when it is not one."""
    line = describe_storage_error(exc, [run.corpus, run.db, run.settings.pipeline.work_dir],
                                  run.settings.storage.endpoint)
    return None if line is None else StoragePathError(line)


def _record_failed_run(run: IndexRun) -> None:
    """Complete the `runs` row of a failed run. When that fails too (the database's
    storage is gone: the same failure), the run's own error is what the user must see:
    a warning says so, and the row stays 'running' until the next run marks it."""
    try:
        record_run(run.summary.to_row(), run.db, run.settings)
    except Exception as exc:  # noqa: BLE001 - reported, then the run's own error raised
        run.logger.warning(f"the runs row of run {run.summary.run_id} could not be "
                           f"completed ({short_error(exc)}); the next run marks it killed")


@flow(name="index-corpus", log_prints=True)
def index_corpus(
    corpus: str = "data/sample",
    db: str = ".sproutrag/db",
    config: str | None = None,
    full: bool = False,
    allow_mass_delete: bool = False,
    settings: Settings | None = None,
    verify: bool = False,
):
    """Index CORPUS (folder, .jsonl or file) into the LanceDB database DB, incrementally.

    SETTINGS (the CLI's, loaded once) or else CONFIG (a YAML file) and the environment
    (`sproutrag.flows.parameters`). FULL: read and re-index every document. VERIFY: also hash every
    stored text and re-index those that do not match (what `sproutrag check` reads).

    Returns the run's `runs` row. With failed documents past the tolerated share the
    run ends Failed, when interrupted Cancelled; either state's data is an exception
    whose `.row` is that row.
    """
    logger = get_run_logger()
    settings = flow_settings(settings, config)
    # Before the database is touched: a missing corpus or bucket, or a model or weights
    # file that cannot be read, fails here (no retries, no database folder created).
    check_s3_paths([("corpus", corpus), ("db", db),
                    ("pipeline.work_dir", settings.pipeline.work_dir)], settings)
    check_corpus_exists(corpus, settings)
    fp = index_fingerprint(settings)
    if is_s3(db):
        logger.info("database on S3: no lock file; the deployment's concurrency limit "
                    "of 1 keeps runs from overlapping")
    with DatabaseLock(db, timeout=settings.pipeline.lock_timeout), stop_on_signals():
        summary = RunSummary(corpus=corpus, fingerprint=fp, flow_run_id=flow_run.get_id())
        run = IndexRun(corpus, db, settings, summary, logger, full, verify, allow_mass_delete)
        summary = _locked_run(run)
    create_markdown_artifact(
        key="index-run", markdown=summary.to_markdown(), description=f"index run of {corpus}"
    )
    logger.info(summary.to_text())
    outcome = summary.outcome()
    if outcome is None:
        return summary.to_row()
    state = Cancelled if isinstance(outcome, RunInterruptedError) else Failed
    return state(message=str(outcome), data=outcome)
