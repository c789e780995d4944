"""The batch loop of the flow `index-corpus`: read documents in, stored batches out.

`index_all` cuts the documents to index (read one at a time) into batches of
`pipeline.batch_chars` characters, submits each batch's chunk -> encode -> build_trees
tasks to the task runner as chained futures, keeps at most
`pipeline.max_inflight_batches` batches ahead of the store, and stores them one at a
time in batch order. A batch whose task failed marks its documents failed and the run
goes on (a full disk stops it); a stop request ends the loop after the batch being
stored. Large task parameters are passed in Prefect's `quote` (see
`sproutrag.flows.index_corpus`). `IndexRun` is the run's state the flow shares with it.
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from prefect.utilities.annotations import quote
from sproutrag.flows.runners import batch_runner
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.build_trees import build_trees_batch
from sproutrag.tasks.chunk import chunk_batch
from sproutrag.tasks.encode import encode_batch
from sproutrag.tasks.store import store_batch
from tqdm import tqdm

from sproutrag.documents import Failure
from sproutrag.errors import is_environment_error
from sproutrag.ingest.batching import Tally, batches
from sproutrag.ingest.plan import Plan
from sproutrag.ingest.run_summary import RunSummary
from sproutrag.interrupt import StopRequested, crash_point, stop_reason, stop_requested


@dataclass
class IndexRun:
    """One index run: what it was asked to do and what it found so far."""

    corpus: str
    db: str
    settings: Settings
    summary: RunSummary
    logger: Any
    full: bool = False
    verify: bool = False
    allow_mass_delete: bool = False


@contextmanager
def timed_stage(summary: RunSummary, name: str):
    """Add the seconds the block takes to the stage NAME of SUMMARY."""
    t0 = time.perf_counter()
    yield
    summary.add_time(name, time.perf_counter() - t0)


def index_all(todo, plan: Plan, run: IndexRun, work: str, tally: Tally) -> set[str]:
    """Index the documents of TODO (read one at a time) in batches of
    `pipeline.batch_chars`; returns the doc_ids stored. A stop request ends it after the
    batch being stored."""
    settings, logger = run.settings, run.logger
    pipeline = settings.pipeline
    stored: set[str] = set()
    logger.info("index: reading %d documents, indexing the new and changed ones in "
                "batches of %d characters or %d documents on the %s task runner",
                len(plan.to_read), pipeline.batch_chars, pipeline.batch_docs,
                pipeline.task_runner)
    inflight: deque = deque()
    progress = tqdm(total=len(plan.to_read), unit="doc", disable=not pipeline.progress)
    with batch_runner(settings) as runner, progress as bar:
        try:
            for k, batch in enumerate(batches(todo, max_chars=pipeline.batch_chars,
                                              max_docs=pipeline.batch_docs)):
                _advance(bar, tally)
                if stop_requested():
                    break
                inflight.append(_submit_batch(runner, batch, k, settings, work))
                if len(inflight) >= pipeline.max_inflight_batches:
                    _store_batch(inflight.popleft(), run, plan, stored)
            while inflight and not stop_requested():
                _store_batch(inflight.popleft(), run, plan, stored)
        except Exception:  # a full disk: no task may write into the work folder after
            _wait_all(inflight)  # the run removes it
            raise
        _advance(bar, tally)
        if stop_requested():
            logger.warning("%s: stopping after %d stored documents", stop_reason(),
                           len(stored))
            _wait_all(inflight)
    return stored


def _submit_batch(runner, batch, k: int, settings: Settings, work: str):
    """chunk -> encode -> build_trees of one batch, as chained futures on the task runner."""
    out = f"{work}/batch-{k:05d}"
    if settings.pipeline.task_runner == "threads":  # not walked by Prefect (index_corpus)
        docs, settings = quote(batch), quote(settings)
    else:  # a quote pickles wrapped twice (Prefect's tuple subclass): Dask gets the values
        docs = batch
    chunked = runner.submit(chunk_batch, {"docs": docs, "settings": settings, "out_dir": out})
    encoded = runner.submit(
        encode_batch, {"docs": docs, "chunked": chunked, "settings": settings, "out_dir": out}
    )
    built = runner.submit(
        build_trees_batch, {"docs": docs, "encoded": encoded, "settings": settings}
    )
    return k, batch, (chunked, encoded, built)


def _store_batch(submitted, run: IndexRun, plan: Plan, stored: set[str]) -> None:
    """Wait for one batch and store it (stores run one at a time, in batch order).

    A batch whose task itself failed (a lost Dask worker, an unreadable intermediate)
    marks each of its documents failed, with the reason; the run goes on and the next
    run retries them.
    """
    k, batch, futures = submitted
    summary, logger = run.summary, run.logger
    try:
        chunked, encoded, built = (f.result() for f in futures)
    except StopRequested:  # not a failure: the batch never ran; the next run does it
        return
    except Exception as exc:  # reported per document; the run goes on
        if is_environment_error(exc):  # a full disk fails every batch: stop the run
            raise
        reason = f"batch {k} failed: {type(exc).__name__}: {exc}"
        summary.failures += [Failure(d.doc_id, reason) for d in batch]
        logger.error("%s (%d documents: %s)", reason, len(batch),
                     ", ".join(d.doc_id for d in batch))
        return
    for name, part in (("chunk", chunked), ("encode", encoded), ("build_trees", built)):
        summary.add_time(name, part.seconds)
        summary.failures += part.failures
    t0 = time.perf_counter()
    with timed_stage(summary, "store"):
        known = [i.doc.doc_id for i in built.items if i.doc.doc_id in plan.stored]
        n_nodes = store_batch(quote(built.items), run.db, quote(run.settings),
                              summary.fingerprint, quote(known), summary.run_id)
    summary.n_nodes += n_nodes
    stored.update(i.doc.doc_id for i in built.items)
    summary.n_changed += len(known)  # what was committed, also if the run stops next
    summary.n_new += len(built.items) - len(known)
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


def _wait_all(inflight: deque) -> None:
    """Let the batches still in flight end (they see the stop request and do no work),
    so none of them writes into the work folder after it is removed."""
    for _, _, futures in inflight:
        for future in futures:
            future.wait()


def _advance(bar, tally: Tally) -> None:
    """The progress bar at the documents read so far."""
    bar.update(tally.unchanged + len(tally.failures) + len(tally.new) + len(tally.changed)
               - bar.n)
