"""The typed forms every layer shares: a document read from the corpus, a document that
failed (with its reason), an entry skipped on purpose, and the content hash that
identifies a document's text."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SourceDocument:
    """A document read from the corpus, with what its listing said of it (stored in
    `documents`: `source_size`, `modified_at`, `source_etag`; None when unknown)."""

    doc_id: str
    source: str
    text: str
    content_hash: str
    size: int | None = None  # bytes of the file, object or JSONL line
    modified_at: datetime | None = None  # UTC; None: unknown or too recent to trust
    etag: str | None = None  # an S3 object's ETag
    title: str | None = None  # a JSONL line's "title" field
    metadata: str | None = None  # a JSONL line's other fields, a JSON object

    @property
    def metadata_hash(self) -> str | None:
        """The hash of `metadata` (`documents.metadata_hash`), None without metadata."""
        return None if self.metadata is None else metadata_hash(self.metadata)


@dataclass(frozen=True)
class Failure:
    doc_id: str  # the document's id, or "line N" / "folder/" when doc_id_known is False
    reason: str
    doc_id_known: bool = True
    folder: str | None = None  # an unlistable folder ("sub/"): stands for every doc_id below

    @property
    def shown(self) -> str:
        """The doc_id for logs and reports: control characters escaped, an empty or
        blank one quoted."""
        return shown_id(self.doc_id)

    @property
    def reported_id(self) -> str | None:
        """The doc_id `runs.failures_json` records: None for a line that names no document
        ("line 5" could be a real document's id), an unlistable folder's "sub/" as it is."""
        return self.doc_id if self.doc_id_known or self.folder is not None else None

    @property
    def line(self) -> str:
        """The failure as a report's line: "doc_id: reason", or the reason alone (it says
        where) for a line that names no document."""
        return failure_line(self.reported_id, self.reason)

    def to_dict(self) -> dict[str, str | None]:
        """The entry of `runs.failures_json`."""
        return {"doc_id": self.reported_id, "reason": self.reason}


@dataclass(frozen=True)
class Skipped:
    """A corpus entry deliberately not indexed (a symlink out of the corpus folder, a
    symlink to a folder: its doc_id then ends with "/")."""

    doc_id: str
    reason: str

    @property
    def shown(self) -> str:
        return shown_id(self.doc_id)


def failure_line(doc_id: str | None, reason: str) -> str:
    """A failure as a report prints it (`runs.failures_json`'s entry): "doc_id: reason",
    or REASON alone, which says where, when no document is named (DOC_ID None)."""
    if doc_id is None:
        return reason
    return f"{shown_id(doc_id)}: {reason.removeprefix(f'{doc_id}: ')}"  # named once


#: A doc_id longer than this is shown by its first `SHOWN_ID_HEAD` characters and length.
SHOWN_ID_CHARS = 200
SHOWN_ID_HEAD = 100


def shown_id(doc_id: str) -> str:
    """DOC_ID as logs show it: as it is, or quoted when empty, blank at an end or not
    printable (`FAILED '': ...`, not `FAILED : ...`); a long one by its start and length
    (a hostile upload's 50,000-character ids were printed whole, six times each)."""
    if len(doc_id) > SHOWN_ID_CHARS:
        return f"{doc_id[:SHOWN_ID_HEAD]!r}... ({len(doc_id):,} characters)"
    plain = doc_id.isprintable() and doc_id.strip() == doc_id and doc_id != ""
    return doc_id if plain else repr(doc_id)


def metadata_hash(metadata_json: str) -> str:
    """sha256 of a document's metadata JSON, 16 hex digits: what a run compares."""
    return hashlib.sha256(metadata_json.encode("utf-8")).hexdigest()[:16]


def content_hash(text: str) -> str:
    """sha256 of the UTF-8 text: `documents.content_hash`."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
