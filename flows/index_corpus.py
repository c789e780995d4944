"""Prefect flow `index-corpus`: discover -> diff -> chunk -> encode -> build_trees -> store.

The CLI (`sproutrag index`) runs this same flow. Documents go through the stages in
batches of `pipeline.batch_docs`; each batch's Parquet intermediates live under the work
dir until the batch is stored.
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import contextmanager

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from tqdm import tqdm

from flows.runners import batch_runner
from schemas.settings import Settings, is_s3, load_settings
from sproutrag.corpus import Failure
from sproutrag.locking import DatabaseLock
from sproutrag.report import RunSummary
from tasks.build_trees import build_trees_batch
from tasks.chunk import chunk_batch
from tasks.common import index_fingerprint, remove_tree
from tasks.discover import diff_corpus, discover_corpus
from tasks.encode import encode_batch
from tasks.store import delete_documents, maintain_tables, record_run, store_batch


@contextmanager
def _stage(summary: RunSummary, name: str):
    t0 = time.perf_counter()
    yield
    summary.add_time(name, time.perf_counter() - t0)


def _work_dir(db: str, settings: Settings, run_id: str) -> str:
    """This run's folder (or s3:// prefix) for Parquet intermediates.

    Those of killed runs are removed first: one index run per database at a time.
    """
    base = (settings.pipeline.work_dir or f"{db.rstrip('/')}/_work").rstrip("/")
    remove_tree(base, settings)
    return f"{base}/{run_id}"


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
    except Exception as exc:  # reported per document; the run goes on
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
    failed = chunked.failures + encoded.failures + built.failures
    logger.info(
        "batch %d: %d documents stored, %d failed, %d chunks, %d nodes; chunk %.1f s, "
        "encode %.1f s, build_trees %.1f s, store %.1f s", k, len(built.items), len(failed),
        sum(i.tree.n for i in built.items), n_nodes, chunked.seconds, encoded.seconds,
        built.seconds, time.perf_counter() - t0,
    )
    for f in failed:
        logger.warning("document %s failed: %s", f.doc_id, f.reason)
    return len(built.items) + len(failed)


def _run(corpus: str, db: str, settings: Settings, full: bool, logger) -> RunSummary:
    fp = index_fingerprint(settings)
    summary = RunSummary(corpus=corpus, fingerprint=fp)
    with _stage(summary, "discover"):
        docs, summary.failures = discover_corpus(corpus, settings)
        plan = diff_corpus(docs, db, settings, fp, full)
    summary.n_new, summary.n_changed = len(plan.new), len(plan.changed)
    summary.n_unchanged, summary.n_deleted = len(plan.unchanged), len(plan.deleted)
    logger.info(
        "discover: %d documents (%d new, %d changed, %d unchanged, %d deleted), %d unreadable",
        len(docs), summary.n_new, summary.n_changed, summary.n_unchanged, summary.n_deleted,
        len(summary.failures),
    )
    for f in summary.failures:
        logger.warning("document %s failed: %s", f.doc_id, f.reason)
    work = _work_dir(db, settings, summary.run_id)
    stored = _index_all(plan.to_index, db, settings, fp, work, summary, logger)
    with _stage(summary, "store"):
        delete_documents(plan.deleted + plan.orphans, db, settings)
    remove_tree(work, settings)
    summary.n_new = sum(d.doc_id in stored for d in plan.new)
    summary.n_changed = sum(d.doc_id in stored for d in plan.changed)
    with _stage(summary, "maintain"):
        maintain_tables(db, settings)
    return summary.finish()


def _index_all(
    todo, db: str, settings: Settings, fp: str, work: str, summary, logger
) -> set[str]:
    """Index documents batch by batch; returns the doc_ids stored."""
    stored: set[str] = set()
    size = settings.pipeline.batch_docs
    batches = [todo[k : k + size] for k in range(0, len(todo), size)]
    if not batches:
        return stored
    logger.info("index: %d documents in %d batches on the %s task runner",
                len(todo), len(batches), settings.pipeline.task_runner)
    inflight: deque = deque()
    progress = tqdm(total=len(todo), unit="doc", disable=not settings.pipeline.progress)
    with batch_runner(settings) as runner, progress as bar:
        for k, batch in enumerate(batches):
            inflight.append(_submit_batch(runner, batch, k, settings, work))
            if len(inflight) >= settings.pipeline.max_inflight_batches:
                done = inflight.popleft()
                bar.update(_store_batch(done, db, settings, fp, summary, stored, logger))
        while inflight:
            done = inflight.popleft()
            bar.update(_store_batch(done, db, settings, fp, summary, stored, logger))
    return stored


@flow(name="index-corpus", log_prints=True)
def index_corpus(
    corpus: str = "data/sample",
    db: str = ".sproutrag/db",
    config: str | None = None,
    full: bool = False,
) -> dict:
    """Index CORPUS (folder, .jsonl or file) into the LanceDB database DB, incrementally."""
    logger = get_run_logger()
    settings = load_settings(config)
    if is_s3(db):
        logger.info("database on S3: no lock file; the deployment's concurrency limit "
                    "of 1 keeps runs from overlapping")
    with DatabaseLock(db, timeout=settings.pipeline.lock_timeout):
        summary = _run(corpus, db, settings, full, logger)
        record_run(summary.to_row(), db, settings)
    create_markdown_artifact(
        key="index-run", markdown=summary.to_markdown(), description=f"index run of {corpus}"
    )
    logger.info(summary.to_text())
    return summary.to_row()
