"""discover: check and list the corpus, and diff it with the database."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.documents import Failure, SourceDocument
from sproutrag.ingest.corpus import Discovery, DocLimits, check_corpus, discover
from sproutrag.ingest.plan import Plan, plan_changes
from tasks.database import open_store
from tasks.retries import IO_RETRIES


@task(name="check_corpus", cache_policy=NO_CACHE, **IO_RETRIES)
def check_corpus_exists(corpus: str, settings: Settings | None = None) -> None:
    """Fail fast (before the database is touched) when the corpus does not exist."""
    opts = settings.storage.fsspec_options(corpus) if settings is not None else None
    check_corpus(corpus, storage_options=opts)


@task(name="discover", cache_policy=NO_CACHE, **IO_RETRIES)
def discover_corpus(corpus: str, settings: Settings | None = None) -> Discovery:
    opts = settings.storage.fsspec_options(corpus) if settings is not None else None
    pipeline = settings.pipeline if settings is not None else None
    allow = pipeline.allow_external_symlinks if pipeline is not None else False
    limits = (DocLimits(pipeline.max_doc_bytes, pipeline.max_doc_chars)
              if pipeline is not None else None)
    return discover(corpus, storage_options=opts, allow_external_symlinks=allow, limits=limits)


@task(name="diff", cache_policy=NO_CACHE)
def diff_corpus(
    docs: list[SourceDocument], db: str, settings: Settings, fingerprint: str,
    full: bool = False, failures: list[Failure] | None = None,
    damaged: dict[str, str] | None = None,
) -> tuple[Plan, int]:
    """The plan, and how many documents the database holds. DAMAGED documents (from
    the start-of-run check) are re-indexed."""
    indexed = open_store(db, settings).indexed()
    plan = plan_changes(docs, indexed, fingerprint, full=full, failures=failures or [],
                        damaged=damaged)
    return plan, len(indexed)
