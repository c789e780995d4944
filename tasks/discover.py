"""discover: check and list the corpus, diff the listing with the database, and read the
documents the run needs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.retries import IO_RETRIES

from sproutrag.documents import Failure, SourceDocument
from sproutrag.ingest.corpus import (
    CorpusListing,
    DocLimits,
    Listed,
    check_corpus,
    list_corpus,
    read_listed,
)
from sproutrag.ingest.plan import Plan, plan_changes


def _limits(settings: Settings) -> DocLimits:
    return DocLimits(settings.pipeline.max_doc_bytes, settings.pipeline.max_doc_chars)


@task(name="check_corpus", cache_policy=NO_CACHE, **IO_RETRIES)
def check_corpus_exists(corpus: str, settings: Settings | None = None) -> None:
    """Fail fast (before the database is touched) when the corpus does not exist."""
    opts = settings.storage.fsspec_options(corpus) if settings is not None else None
    check_corpus(corpus, storage_options=opts)


@task(name="discover", cache_policy=NO_CACHE, **IO_RETRIES)
def discover_corpus(corpus: str, settings: Settings,
                    allow_empty: bool = False) -> CorpusListing:
    """The corpus listing: doc ids and what the listing says of each (no text held); an
    empty folder only with ALLOW_EMPTY (`--allow-mass-delete`)."""
    return list_corpus(corpus, storage_options=settings.storage.fsspec_options(corpus),
                       allow_external_symlinks=settings.pipeline.allow_external_symlinks,
                       include_hidden=settings.pipeline.include_hidden,
                       limits=_limits(settings), allow_empty=allow_empty)


@task(name="diff", cache_policy=NO_CACHE)
def diff_corpus(
    listing: CorpusListing, stored: pa.Table, settings: Settings, fingerprint: str,
    full: bool = False, damaged: dict[str, str] | None = None, verify: bool = False,
) -> Plan:
    """The plan: the listing against the stored state; DAMAGED documents are re-indexed.
    A VERIFY run trusts no listing: every file is read and compared by content hash."""
    return plan_changes(listing.table, stored, fingerprint, full=full,
                        fast_path=settings.pipeline.listing_fast_path and not verify,
                        failures=listing.failures, damaged=damaged,
                        sources=listing.line_sources())


def read_documents(listing: CorpusListing, items: Sequence[Listed], settings: Settings
                   ) -> Iterator[SourceDocument | Failure]:
    """The texts of ITEMS, one at a time, in listing order (a generator: not a task; the
    flow reads while the task runner chunks and encodes)."""
    return read_listed(listing, items,
                       storage_options=settings.storage.fsspec_options(listing.corpus),
                       limits=_limits(settings))
