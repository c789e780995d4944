"""Prefect flow `index-corpus`: discover -> diff -> chunk -> encode -> build_trees -> store.

The CLI (`sproutrag index`) runs this same flow. Documents go through the stages in
batches of `pipeline.batch_docs`; each batch's Parquet intermediates live in the run's
own folder below the work dir until the batch is stored.

Under the database's run lock a run checks that every table can be read (a damaged one
fails the run, or with --full is moved aside: `sproutrag.storage.check`), migrates an older
schema, writes its `runs` row ("running"), removes what interrupted runs left, diffs the
corpus with the database (refusing mass deletions; documents found damaged are
re-indexed), indexes batch by batch, deletes what left the corpus, and completes its
row. SIGTERM / SIGINT stop it between batches ("interrupted"). The flow
run ends Failed when more documents failed than `pipeline.max_failed_share` tolerates
(the data: `DocumentsFailedError` with the run's row), Cancelled when interrupted.
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import contextmanager

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from prefect.states import Cancelled, Failed
from tqdm import tqdm

from flows.parameters import flow_settings
from flows.runners import batch_runner
from schemas.settings import Settings, is_s3
from sproutrag.documents import Failure, Skipped
from sproutrag.errors import is_environment_error
from sproutrag.ingest.plan import check_deletions
from sproutrag.ingest.run_summary import RunInterruptedError, RunSummary
from sproutrag.interrupt import (
    StopRequested,
    crash_point,
    stop_on_signals,
    stop_reason,
    stop_requested,
)
from sproutrag.storage.check import DamagedTableError
from sproutrag.storage.locking import DatabaseLock
from tasks.build_trees import build_trees_batch
from tasks.chunk import chunk_batch
from tasks.database import index_fingerprint
from tasks.discover import check_corpus_exists, diff_corpus, discover_corpus
from tasks.encode import encode_batch
from tasks.store import (
    check_tables,
    collect_garbage,
    delete_documents,
    maintain_tables,
    migrate_database,
    move_damaged_tables,
    record_index_settings,
    record_run,
    start_run,
    store_batch,
)
from tasks.workdir import close_work_dir, open_work_dir


@contextmanager
def _stage(summary: RunSummary, name: str):
    t0 = time.perf_counter()
    yield
    summary.add_time(name, time.perf_counter() - t0)


def _submit_batch(runner, batch, k: int, settings: Settings, work: str):
    """chunk -> encode -> build_trees of one batch, as chained futures on the task runner."""
    out = f"{work}/batch-{k:05d}"
    chunked = runner.submit(chunk_batch, {"docs": batch, "settings": settings, "out_dir": out})
    encoded = runner.submit(
        encode_batch, {"docs": batch, "chunked": chunked, "settings": settings, "out_dir": out}
    )
    built = runner.submit(
        build_trees_batch, {"docs": batch, "encoded": encoded, "settings": settings}
    )
    return k, batch, (chunked, encoded, built)


def _store_batch(
    submitted, db: str, settings: Settings, fp: str, summary: RunSummary, stored: set[str],
    logger,
) -> int:
    """Wait for one batch and store it (stores run one at a time, in batch order).

    A batch whose task itself failed (a lost Dask worker, an unreadable intermediate)
    marks each of its documents failed, with the reason; the run goes on and the next
    run retries them.
    """
    k, batch, futures = submitted
    try:
        chunked, encoded, built = (f.result() for f in futures)
    except StopRequested:  # not a failure: the batch never ran; the next run does it
        return 0
    except Exception as exc:  # reported per document; the run goes on
        if is_environment_error(exc):  # a full disk fails every batch: stop the run
            raise
        reason = f"batch {k} failed: {type(exc).__name__}: {exc}"
        summary.failures += [Failure(d.doc_id, reason) for d in batch]
        logger.error("%s (%d documents: %s)", reason, len(batch),
                     ", ".join(d.doc_id for d in batch))
        return len(batch)
    for name, part in (("chunk", chunked), ("encode", encoded), ("build_trees", built)):
        summary.add_time(name, part.seconds)
        summary.failures += part.failures
    t0 = time.perf_counter()
    with _stage(summary, "store"):
        n_nodes = store_batch(built.items, db, settings, fp)
    summary.n_nodes += n_nodes
    stored.update(i.doc.doc_id for i in built.items)
    summary.n_chunks += sum(i.tree.n for i in built.items)
    summary.n_chars += sum(len(i.doc.text) for i in built.items)
    crash_point("batch-stored")
    failed = chunked.failures + encoded.failures + built.failures
    logger.info(
        "batch %d: %d documents stored, %d failed, %d chunks, %d nodes; chunk %.1f s, "
        "encode %.1f s, build_trees %.1f s, store %.1f s", k, len(built.items), len(failed),
        sum(i.tree.n for i in built.items), n_nodes, chunked.seconds, encoded.seconds,
        built.seconds, time.perf_counter() - t0,
    )
    for f in failed:
        logger.warning("document %s failed: %s", f.shown, f.reason)
    return len(built.items) + len(failed)


def _skipped_kinds(skipped: list[Skipped]) -> list[tuple[str, list[Skipped]]]:
    """Skipped symlinks by kind (a folder symlink's name ends with "/"), non-empty only."""
    folders = [s for s in skipped if s.doc_id.endswith("/")]
    outside = [s for s in skipped if not s.doc_id.endswith("/")]
    kinds = [("pointing outside the corpus folder (pipeline.allow_external_symlinks)",
              outside), ("to folders (never followed)", folders)]
    return [(what, group) for what, group in kinds if group]


def _plan(corpus: str, db: str, settings: Settings, full: bool, allow_mass_delete: bool,
          summary: RunSummary, logger, damaged: dict[str, str] | None = None):
    """Discover the corpus, diff it with the database, refuse a mass deletion."""
    with _stage(summary, "discover"):
        found = discover_corpus(corpus, settings)
        docs, summary.failures = found.docs, found.failures
        plan, n_indexed = diff_corpus(
            docs, db, settings, summary.fingerprint, full, summary.failures, damaged
        )
    for what, group in _skipped_kinds(found.skipped):
        summary.note(f"skipped {len(group)} symlinks {what}: "
                     f"{', '.join(f.shown for f in group[:10])}")
    for f in found.skipped:
        logger.warning("skipped %s: %s", f.shown, f.reason)
    check_deletions(plan, n_indexed, corpus=corpus, allow=allow_mass_delete,
                    max_share=settings.pipeline.max_delete_share)
    summary.n_new, summary.n_changed = len(plan.new), len(plan.changed)
    summary.n_unchanged = len(plan.unchanged)
    logger.info(
        "discover: %d documents (%d new, %d changed, %d unchanged, %d deleted), %d failed "
        "(%d of them indexed before: their indexed version stays)", len(docs),
        summary.n_new, summary.n_changed, summary.n_unchanged, len(plan.deleted),
        len(summary.failures), len(plan.kept),
    )
    for f in summary.failures:
        logger.warning("document %s failed: %s", f.shown, f.reason)
    if plan.held_reason:
        summary.note(plan.held_reason)
        logger.warning(plan.held_reason)
    return plan


def _run(corpus: str, db: str, settings: Settings, full: bool, allow_mass_delete: bool,
         summary: RunSummary, logger, damaged: dict[str, str] | None = None) -> None:
    """The run's work, under the lock; `summary` is finished when this returns.
    DAMAGED: documents the start-of-run check found damaged (re-indexed)."""
    removed = collect_garbage(db, settings)
    if removed:
        logger.warning("removed %d nodes rows an interrupted run left (no documents row "
                       "named them)", removed)
    plan = _plan(corpus, db, settings, full, allow_mass_delete, summary, logger, damaged)
    _report_damaged(plan, damaged or {}, summary, logger)
    work, leftovers = open_work_dir(db, settings, summary.run_id)
    if leftovers:
        logger.warning("removed %d work folders of killed runs of this database", leftovers)
    try:
        stored = _index_all(plan.to_index, db, settings, work, summary, logger)
    finally:
        close_work_dir(work, db, settings)
    summary.n_new = sum(d.doc_id in stored for d in plan.new)
    summary.n_changed = sum(d.doc_id in stored for d in plan.changed)
    if stop_requested():
        summary.finish("interrupted", f"{stop_reason()} after {len(stored)} documents")
        return
    with _stage(summary, "store"):
        delete_documents(plan.deleted, db, settings)
    summary.n_deleted = len(plan.deleted)
    with _stage(summary, "maintain"):
        maintain_tables(db, settings)
    summary.finish(max_failed_share=settings.pipeline.max_failed_share)


def _report_damaged(plan, damaged: dict[str, str], summary: RunSummary, logger) -> None:
    """Name the damaged documents: re-indexed now, or (not in the corpus now) deleted."""
    if not damaged:
        return
    shown = "; ".join(f"{d}: {why}" for d, why in list(damaged.items())[:5])
    more = f" and {len(damaged) - 5} more" if len(damaged) > 5 else ""
    text = (f"{len(damaged)} documents were damaged in the database ({shown}{more}): "
            f"{len(plan.repaired)} re-indexed from the corpus")
    left = sorted(set(damaged) - set(plan.repaired) - set(plan.deleted))
    if left:
        text += f"; not in the corpus or unreadable there, still damaged: {', '.join(left[:10])}"
    summary.note(text)
    logger.warning(text)


def _check_tables(db: str, settings: Settings, full: bool, logger) -> tuple[dict, list[str]]:
    """The start-of-run check: a damaged table fails the run (DamagedTableError), or with
    --full is moved aside; returns the damaged documents and notes for the summary."""
    health = check_tables(db, settings)
    if not health.unreadable:
        return health.documents, []
    if not full:
        raise DamagedTableError(db, health.unreadable)
    moved = move_damaged_tables(db, sorted(health.unreadable))
    note = ("moved damaged tables aside (kept, not deleted): " + ", ".join(
        f"{n} ({health.unreadable[n]}) -> {path}" for n, path in moved.items())
        + "; this --full run re-creates them")
    logger.warning(note)
    return {}, [note]


def _wait_all(inflight: deque) -> None:
    """Let the batches still in flight end (they see the stop request and do no work),
    so none of them writes into the work folder after it is removed."""
    for _, _, futures in inflight:
        for future in futures:
            future.wait()


def _index_all(todo, db: str, settings: Settings, work: str, summary, logger) -> set[str]:
    """Index documents batch by batch; returns the doc_ids stored. A stop request ends
    it after the batch being stored."""
    stored: set[str] = set()
    size = settings.pipeline.batch_docs
    batches = [todo[k : k + size] for k in range(0, len(todo), size)]
    if not batches:
        return stored
    logger.info("index: %d documents in %d batches on the %s task runner",
                len(todo), len(batches), settings.pipeline.task_runner)
    inflight: deque = deque()
    progress = tqdm(total=len(todo), unit="doc", disable=not settings.pipeline.progress)
    fp = summary.fingerprint
    with batch_runner(settings) as runner, progress as bar:
        for k, batch in enumerate(batches):
            if stop_requested():
                break
            inflight.append(_submit_batch(runner, batch, k, settings, work))
            if len(inflight) >= settings.pipeline.max_inflight_batches:
                done = inflight.popleft()
                bar.update(_store_batch(done, db, settings, fp, summary, stored, logger))
        while inflight and not stop_requested():
            done = inflight.popleft()
            bar.update(_store_batch(done, db, settings, fp, summary, stored, logger))
        if stop_requested():
            logger.warning("%s: stopping after %d stored documents", stop_reason(),
                           len(stored))
            _wait_all(inflight)
    return stored


def _locked_run(corpus: str, db: str, settings: Settings, fp: str, full: bool,
                allow_mass_delete: bool, logger) -> RunSummary:
    """Migrate, record the start, run, record the end: the `runs` row is always completed
    unless the process is killed. A damaged table fails the run here, before it writes
    anything (with --full: moved aside, then rebuilt)."""
    damaged, notes = _check_tables(db, settings, full, logger)
    migrated = migrate_database(db, settings)
    if migrated:
        logger.warning("migrated tables %s of %s to the current schema in place; every "
                       "document is re-indexed", ", ".join(migrated), db)
    summary = RunSummary(corpus=corpus, fingerprint=fp, flow_run_id=flow_run.get_id())
    for note in notes:
        summary.note(note)
    start_run(summary.to_row(), db, settings)
    try:
        record_index_settings(db, settings, fp, summary.run_id)
        _run(corpus, db, settings, full, allow_mass_delete, summary, logger, damaged)
    except KeyboardInterrupt as exc:  # a second signal
        summary.finish("interrupted", f"stopped at once: {exc}")
        record_run(summary.to_row(), db, settings)
        raise
    except Exception as exc:
        summary.finish("failed", f"{type(exc).__name__}: {exc}")
        record_run(summary.to_row(), db, settings)
        raise
    record_run(summary.to_row(), db, settings)
    return summary


@flow(name="index-corpus", log_prints=True)
def index_corpus(
    corpus: str = "data/sample",
    db: str = ".sproutrag/db",
    config: str | None = None,
    full: bool = False,
    allow_mass_delete: bool = False,
    settings: Settings | None = None,
):
    """Index CORPUS (folder, .jsonl or file) into the LanceDB database DB, incrementally.

    SETTINGS (the CLI's, loaded once) or else CONFIG (a YAML file) and the environment
    (`flows.parameters`).

    Returns the run's `runs` row. With failed documents past the tolerated share the
    run ends Failed, when interrupted Cancelled; either state's data is an exception
    whose `.row` is that row.
    """
    logger = get_run_logger()
    settings = flow_settings(settings, config)
    # Before the database is touched: a missing corpus, or a model or weights file that
    # cannot be read, fails here (no retries, no database folder created).
    check_corpus_exists(corpus, settings)
    fp = index_fingerprint(settings)
    if is_s3(db):
        logger.info("database on S3: no lock file; the deployment's concurrency limit "
                    "of 1 keeps runs from overlapping")
    with DatabaseLock(db, timeout=settings.pipeline.lock_timeout), stop_on_signals():
        summary = _locked_run(corpus, db, settings, fp, full, allow_mass_delete, logger)
    create_markdown_artifact(
        key="index-run", markdown=summary.to_markdown(), description=f"index run of {corpus}"
    )
    logger.info(summary.to_text())
    outcome = summary.outcome()
    if outcome is None:
        return summary.to_row()
    state = Cancelled if isinstance(outcome, RunInterruptedError) else Failed
    return state(message=str(outcome), data=outcome)
