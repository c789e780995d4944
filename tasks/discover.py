"""discover: list the corpus and diff it with the database."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from schemas.settings import Settings
from sproutrag.corpus import Failure, SourceDocument, discover
from sproutrag.indexing import Plan, plan_changes
from tasks.common import open_store


@task(name="discover", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def discover_corpus(
    corpus: str, settings: Settings | None = None
) -> tuple[list[SourceDocument], list[Failure]]:
    opts = settings.storage.fsspec_options(corpus) if settings is not None else None
    return discover(corpus, storage_options=opts)


@task(name="diff", cache_policy=NO_CACHE)
def diff_corpus(
    docs: list[SourceDocument], db: str, settings: Settings, fingerprint: str,
    full: bool = False, failures: list[Failure] | None = None,
) -> tuple[Plan, int]:
    """The plan, and how many documents the database holds."""
    indexed = open_store(db, settings).indexed()
    plan = plan_changes(docs, indexed, fingerprint, full=full, failures=failures or [])
    return plan, len(indexed)
