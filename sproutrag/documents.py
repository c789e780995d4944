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


@dataclass(frozen=True)
class Failure:
    doc_id: str  # the document's id, or "line N" / "folder/" when doc_id_known is False
    reason: str
    doc_id_known: bool = True
    folder: str | None = None  # an unlistable folder ("sub/"): stands for every doc_id below

    @property
    def shown(self) -> str:
        """The doc_id for logs and reports: control characters escaped."""
        return self.doc_id if self.doc_id.isprintable() else repr(self.doc_id)

    def to_dict(self) -> dict[str, str]:
        """The entry of `runs.failures_json`."""
        return {"doc_id": self.doc_id, "reason": self.reason}


@dataclass(frozen=True)
class Skipped:
    """A corpus entry deliberately not indexed (a symlink out of the corpus folder, a
    symlink to a folder: its doc_id then ends with "/")."""

    doc_id: str
    reason: str

    @property
    def shown(self) -> str:
        return self.doc_id if self.doc_id.isprintable() else repr(self.doc_id)


def content_hash(text: str) -> str:
    """sha256 of the UTF-8 text: `documents.content_hash`."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
