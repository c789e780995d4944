"""Discover a corpus: a folder of .txt/.md files, a JSONL file of {doc_id, text}, or one file.

Works on local paths and on any fsspec URL (s3://...). A document that cannot be read
(empty, binary, not UTF-8, duplicate or invalid doc_id, bad JSON line) becomes a
`Failure` with its reason; discovery never stops at one bad document. A failure that
cannot be tied to a doc_id (a JSONL line that is not JSON, or has no doc_id) says so
(`doc_id_known=False`): the run cannot tell which indexed document it was, so it must
not delete any.

In a local folder a symlink is followed only when its target lies inside the corpus
folder; one pointing outside (say to /etc/passwd) is skipped and reported
(`Discovery.skipped`) unless `allow_external_symlinks`.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

TEXT_SUFFIXES = (".txt", ".md")


class CorpusNotFoundError(FileNotFoundError):
    """The corpus path does not exist or holds nothing to index."""


@dataclass(frozen=True)
class SourceDocument:
    doc_id: str
    source: str
    text: str
    content_hash: str


@dataclass(frozen=True)
class Failure:
    doc_id: str  # the document's id, or "line N" when doc_id_known is False
    reason: str
    doc_id_known: bool = True

    @property
    def shown(self) -> str:
        """The doc_id for logs and reports: control characters escaped."""
        return self.doc_id if self.doc_id.isprintable() else repr(self.doc_id)

    def to_dict(self) -> dict[str, str]:
        """The entry of `runs.failures_json`."""
        return {"doc_id": self.doc_id, "reason": self.reason}


@dataclass(frozen=True)
class Skipped:
    """A corpus entry deliberately not indexed (a symlink out of the corpus folder)."""

    doc_id: str
    reason: str

    @property
    def shown(self) -> str:
        return self.doc_id if self.doc_id.isprintable() else repr(self.doc_id)


@dataclass(frozen=True)
class Discovery:
    """What `discover` found: readable documents (sorted by doc_id), failures, and the
    entries skipped on purpose (absent from the corpus for the run: an indexed one is
    deleted)."""

    docs: list[SourceDocument]
    failures: list[Failure]
    skipped: list[Skipped] = field(default_factory=list)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decode_text(data: bytes, *, name: str) -> str:
    """Strict UTF-8 (a BOM is dropped); binary and undecodable data raise ValueError."""
    if b"\x00" in data[:8192]:
        raise ValueError(f"{name}: binary file (NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert the file to UTF-8"
        ) from None
    return check_text(text, name=name)


def check_doc_id(doc_id: str) -> str:
    """A doc_id must be non-empty text without control characters (NUL, newlines, ...)."""
    if not doc_id.strip():
        raise ValueError(f"invalid doc_id {doc_id!r}: empty")
    for ch in doc_id:
        if unicodedata.category(ch) in ("Cc", "Cs"):  # controls, lone surrogates
            raise ValueError(
                f"invalid doc_id {doc_id!r}: control character U+{ord(ch):04X} "
                "(doc_ids must be printable text)"
            )
    return doc_id


def check_text(text: str, *, name: str) -> str:
    if not text.strip():
        raise ValueError(f"{name}: empty document (no text to index)")
    return text


def _filesystem(corpus: str, storage_options: dict[str, Any] | None):
    import fsspec.core

    fs, root = fsspec.core.url_to_fs(corpus, **(storage_options or {}))
    # fsspec reuses filesystem instances, and s3fs caches listings with each object's
    # ETag: a second run in the same process would read a changed object through the
    # stale entry ("no longer exists"). Every discovery lists afresh.
    fs.invalidate_cache()
    return fs, root


def check_corpus(corpus: str, *, storage_options: dict[str, Any] | None = None) -> None:
    """Raise CorpusNotFoundError when CORPUS does not exist (a cheap check before a run)."""
    fs, root = _filesystem(str(corpus), storage_options)
    if not fs.exists(root):
        raise CorpusNotFoundError(
            f"corpus {corpus!r} does not exist: give a folder of .txt/.md files, "
            "a .jsonl file of {doc_id, text} lines, or a single text file"
        )


def discover(
    corpus: str, *, storage_options: dict[str, Any] | None = None,
    allow_external_symlinks: bool = False,
) -> Discovery:
    """The corpus's readable documents (sorted by doc_id), failures and skipped entries."""
    check_corpus(corpus, storage_options=storage_options)
    fs, root = _filesystem(str(corpus), storage_options)
    skipped: list[Skipped] = []
    if fs.isdir(root):
        items = _from_folder(fs, root, corpus, skipped if not allow_external_symlinks else None)
    elif root.endswith(".jsonl"):
        items = _from_jsonl(fs, root, corpus)
    else:
        name = root.rsplit("/", 1)[-1]
        items = iter([_read_file(fs, root, doc_id=name, source=str(corpus))])
    docs: dict[str, SourceDocument] = {}
    failures: list[Failure] = []
    for item in items:
        if isinstance(item, Failure):
            failures.append(item)
        elif item.doc_id in docs:
            failures.append(Failure(item.doc_id, f"duplicate doc_id (also in {item.source})"))
        else:
            docs[item.doc_id] = item
    return Discovery([docs[k] for k in sorted(docs)], failures, skipped)


def _read_file(fs, path: str, *, doc_id: str, source: str) -> SourceDocument | Failure:
    try:
        check_doc_id(doc_id)
        with fs.open(path, "rb") as fh:
            text = decode_text(fh.read(), name=doc_id)
    except (OSError, ValueError) as exc:
        return Failure(doc_id, str(exc))
    return SourceDocument(doc_id, source, text, content_hash(text))


def _external_target(fs, root: str, path: str) -> str | None:
    """The target of PATH when it is a local symlink pointing outside ROOT, else None."""
    if "file" not in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
        return None  # object stores have no symlinks
    if not os.path.islink(path):
        return None
    target, base = os.path.realpath(path), os.path.realpath(root)
    return None if os.path.commonpath([target, base]) == base else target


def _from_folder(
    fs, root: str, corpus: str, skipped: list[Skipped] | None
) -> Iterator[SourceDocument | Failure]:
    """The folder's .txt/.md files; with SKIPPED (a list to fill), symlinks out of the
    folder are reported there instead of being read."""
    root = root.rstrip("/")
    paths = sorted(p for p in fs.find(root) if p.lower().endswith(TEXT_SUFFIXES))
    if not paths:
        raise CorpusNotFoundError(f"corpus folder {corpus!r} holds no .txt or .md files")
    prefix = corpus.rstrip("/")
    for path in paths:
        rel = path[len(root) + 1 :]
        target = _external_target(fs, root, path) if skipped is not None else None
        if target is not None:
            skipped.append(Skipped(rel, f"symlink to {target}, outside the corpus folder: "
                                        "skipped (pipeline.allow_external_symlinks)"))
            continue
        yield _read_file(fs, path, doc_id=rel, source=f"{prefix}/{rel}")


def _from_jsonl(fs, path: str, corpus: str) -> Iterator[SourceDocument | Failure]:
    with fs.open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw.strip():
                yield _jsonl_line(raw, where=f"{corpus}:{lineno}", line=f"line {lineno}")


def _jsonl_line(raw: bytes, *, where: str, line: str) -> SourceDocument | Failure:
    """One JSONL line; a failure names the doc_id whenever the line has a usable one."""
    try:
        row = json.loads(raw)
    except ValueError as exc:  # not JSON, or not UTF-8
        return Failure(line, f"{where}: not a JSON line ({exc})", doc_id_known=False)
    if not isinstance(row, dict) or "doc_id" not in row:
        return Failure(line, f"{where}: missing field 'doc_id'", doc_id_known=False)
    doc_id = row["doc_id"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        return Failure(line, f"{where}: doc_id must be a string, got {doc_id!r}",
                       doc_id_known=False)
    doc_id = str(doc_id)
    try:
        check_doc_id(doc_id)
        if "text" not in row:
            raise ValueError("missing field 'text'")
        if not isinstance(row["text"], str):
            raise ValueError("text must be a string")
        text = check_text(row["text"], name=doc_id)
        digest = content_hash(text)  # UnicodeEncodeError (a ValueError): lone surrogates
    except ValueError as exc:
        return Failure(doc_id, f"{where}: {exc}")
    return SourceDocument(doc_id, where, text, digest)
