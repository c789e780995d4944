"""Prefect flow `index-corpus`: discover -> diff -> chunk -> encode -> build_trees -> store.

The CLI (`sproutrag index`) runs this same flow. Documents go through the stages in
batches of `pipeline.batch_docs`; each batch's Parquet intermediates live under the work
dir until the batch is stored.
"""

from __future__ import annotations

import shutil
import time
from collections import deque
from contextlib import contextmanager

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from tqdm import tqdm

from schemas.settings import Settings, load_settings
from sproutrag.locking import DatabaseLock
from sproutrag.report import RunSummary
from tasks.build_trees import build_trees_batch
from tasks.chunk import chunk_batch
from tasks.common import index_fingerprint
from tasks.discover import diff_corpus, discover_corpus
from tasks.encode import encode_batch
from tasks.store import delete_documents, maintain_tables, record_run, store_batch


@contextmanager
def _stage(summary: RunSummary, name: str):
    t0 = time.perf_counter()
    yield
    summary.add_time(name, time.perf_counter() - t0)


def _work_dir(db: str, settings: Settings, run_id: str) -> str:
    """This run's folder for Parquet intermediates; those of killed runs are removed."""
    base = settings.pipeline.work_dir or f"{db.rstrip('/')}/_work"
    shutil.rmtree(base, ignore_errors=True)
    return f"{base}/{run_id}"


def _submit_batch(batch, k: int, settings: Settings, work: str):
    """chunk -> encode -> build_trees of one batch, as chained futures on the task runner."""
    out = f"{work}/batch-{k:05d}"
    chunked = chunk_batch.submit(batch, settings, out)
    encoded = encode_batch.submit(batch, chunked, settings, out)
    return chunked, encoded, build_trees_batch.submit(batch, encoded, settings)


def _store_batch(
    futures, db: str, settings: Settings, fp: str, summary: RunSummary, stored: set[str]
) -> int:
    """Wait for one batch and store it (stores run one at a time, in batch order)."""
    chunked, encoded, built = (f.result() for f in futures)
    for name, part in (("chunk", chunked), ("encode", encoded), ("build_trees", built)):
        summary.add_time(name, part.seconds)
        summary.failures += part.failures
    with _stage(summary, "store"):
        summary.n_nodes += store_batch(built.items, db, settings, fp)
    stored.update(i.doc.doc_id for i in built.items)
    summary.n_chunks += sum(i.tree.n for i in built.items)
    summary.n_chars += sum(len(i.doc.text) for i in built.items)
    return len(built.items) + len(chunked.failures + encoded.failures + built.failures)


def _run(corpus: str, db: str, settings: Settings, full: bool, logger) -> RunSummary:
    fp = index_fingerprint(settings)
    summary = RunSummary(corpus=corpus, fingerprint=fp)
    with _stage(summary, "discover"):
        docs, summary.failures = discover_corpus(corpus)
        plan = diff_corpus(docs, db, settings, fp, full)
    summary.n_new, summary.n_changed = len(plan.new), len(plan.changed)
    summary.n_unchanged, summary.n_deleted = len(plan.unchanged), len(plan.deleted)
    logger.info(
        "discover: %d documents (%d new, %d changed, %d unchanged, %d deleted), %d unreadable",
        len(docs), summary.n_new, summary.n_changed, summary.n_unchanged, summary.n_deleted,
        len(summary.failures),
    )
    work = _work_dir(db, settings, summary.run_id)
    stored = _index_all(plan.to_index, db, settings, fp, work, summary)
    with _stage(summary, "store"):
        delete_documents(plan.deleted + plan.orphans, db, settings)
    shutil.rmtree(work, ignore_errors=True)
    summary.n_new = sum(d.doc_id in stored for d in plan.new)
    summary.n_changed = sum(d.doc_id in stored for d in plan.changed)
    with _stage(summary, "maintain"):
        maintain_tables(db, settings)
    return summary.finish()


def _index_all(todo, db: str, settings: Settings, fp: str, work: str, summary) -> set[str]:
    """Index documents batch by batch; returns the doc_ids stored."""
    stored: set[str] = set()
    size = settings.pipeline.batch_docs
    batches = [todo[k : k + size] for k in range(0, len(todo), size)]
    inflight: deque = deque()
    with tqdm(total=len(todo), unit="doc", disable=not settings.pipeline.progress) as bar:
        for k, batch in enumerate(batches):
            inflight.append(_submit_batch(batch, k, settings, work))
            if len(inflight) >= settings.pipeline.max_inflight_batches:
                bar.update(_store_batch(inflight.popleft(), db, settings, fp, summary, stored))
        while inflight:
            bar.update(_store_batch(inflight.popleft(), db, settings, fp, summary, stored))
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
    with DatabaseLock(db, timeout=settings.pipeline.lock_timeout):
        summary = _run(corpus, db, settings, full, logger)
        record_run(summary.to_row(), db, settings)
    create_markdown_artifact(
        key="index-run", markdown=summary.to_markdown(), description=f"index run of {corpus}"
    )
    logger.info(summary.to_text())
    return summary.to_row()
