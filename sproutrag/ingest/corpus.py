"""Discover a corpus: a folder of .txt/.md files, a JSONL file of {doc_id, text}, or one file.

Works on local paths and on any fsspec URL (s3://...). A document that cannot be read
(empty, binary, not UTF-8, too large, not a regular file, invalid doc_id, bad JSON line)
becomes a `Failure` with its reason; discovery never stops at one bad document. A
failure that cannot be tied to a doc_id (a JSONL line that is not JSON, has no doc_id or
is too long to parse) says so (`doc_id_known=False`): the run cannot tell which indexed
document it was, so it must not delete any. A subfolder that cannot be listed is a
failure standing for every doc_id below it (`Failure.folder`): none of them is deleted.

A doc_id found more than once (a JSONL export with two lines for one document) fails as
a whole, naming every copy: none is indexed, the indexed version stays.

In a local folder a file symlink is followed only when its target lies inside the corpus
folder; one pointing outside (say to /etc/passwd) is skipped and reported
(`Discovery.skipped`) unless `allow_external_symlinks`. Symlinks to folders are never
followed (no cycles, no document under two doc_ids): they are skipped and reported.
Only regular files are opened (a named pipe would block the run forever); a file's size
is checked before it is read, and the binary check reads only its first 8 KiB.
"""

from __future__ import annotations

import json
import os
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from sproutrag.documents import Failure, Skipped, SourceDocument, content_hash
from sproutrag.errors import CorpusNotFoundError, CorpusUnreadableError  # noqa: F401 - also importable from here
from sproutrag.ingest.listing import (
    TEXT_SUFFIXES,
    Entry,
    bounded_lines,
    is_local,
    list_fsspec,
    list_local,
)

__all__ = ["TEXT_SUFFIXES"]  # re-exported: callers import it from here


@dataclass(frozen=True)
class Discovery:
    """What `discover` found: readable documents (sorted by doc_id), failures, and the
    entries skipped on purpose (absent from the corpus for the run: an indexed one is
    deleted)."""

    docs: list[SourceDocument]
    failures: list[Failure]
    skipped: list[Skipped] = field(default_factory=list)


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


@dataclass(frozen=True)
class DocLimits:
    """The largest document read: `pipeline.max_doc_bytes` (of a file or JSONL line, checked
    before reading it) and `pipeline.max_doc_chars` (of its text, in code points)."""

    max_bytes: int = 100_000_000
    max_chars: int = 20_000_000

    def check_bytes(self, n: int, *, name: str) -> None:
        if n > self.max_bytes:
            raise ValueError(
                f"{name}: {n:,} bytes, over the limit of {self.max_bytes:,} bytes "
                "(pipeline.max_doc_bytes): not read; split the document or raise the limit")

    def check_chars(self, text: str, *, name: str) -> str:
        if len(text) > self.max_chars:
            raise ValueError(
                f"{name}: {len(text):,} characters, over the limit of {self.max_chars:,} "
                "(pipeline.max_doc_chars); split the document or raise the limit")
        return text


def discover(
    corpus: str, *, storage_options: dict[str, Any] | None = None,
    allow_external_symlinks: bool = False, limits: DocLimits | None = None,
) -> Discovery:
    """The corpus's readable documents (sorted by doc_id), failures and skipped entries."""
    check_corpus(corpus, storage_options=storage_options)
    fs, root = _filesystem(str(corpus), storage_options)
    limits = limits or DocLimits()
    skipped: list[Skipped] = []
    if fs.isdir(root):
        items = _from_folder(fs, root, corpus, skipped, allow_external_symlinks, limits)
    elif root.endswith(".jsonl"):
        items = _from_jsonl(fs, root, corpus, limits)
    else:
        name = root.rsplit("/", 1)[-1]
        items = iter([_read_file(fs, Entry(root, name), source=str(corpus), limits=limits)])
    docs, failures = _without_duplicates(list(items))
    return Discovery(docs, failures, skipped)


def _without_duplicates(
    items: list[SourceDocument | Failure],
) -> tuple[list[SourceDocument], list[Failure]]:
    """Documents sorted by doc_id and failures; a doc_id found more than once (as a
    document or a failure) becomes one failure naming every copy."""
    copies: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, SourceDocument):
            copies.setdefault(item.doc_id, []).append(item.source)
        elif item.doc_id_known:
            copies.setdefault(item.doc_id, []).append(f"failed: {item.reason}")
    docs = {d.doc_id: d for d in items if isinstance(d, SourceDocument)
            and len(copies[d.doc_id]) == 1}
    failures = [f for f in items if isinstance(f, Failure)
                and not (f.doc_id_known and len(copies[f.doc_id]) > 1)]
    for doc_id, where in copies.items():
        if len(where) > 1:
            failures.append(Failure(doc_id, (
                f"duplicate doc_id: {len(where)} entries ({'; '.join(where)}); none of them "
                "is indexed (an indexed version stays): give each document its own doc_id")))
    return [docs[k] for k in sorted(docs)], failures


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a folder"))


def _check_regular(mode: int, *, name: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{name}: {kind}, not a regular file: not read "
                         "(only regular files are indexed)")


def _open_local(path: str, *, name: str, limits: DocLimits) -> BinaryIO:
    """PATH opened for reading once it is known to be a regular file of at most
    `limits.max_bytes` (a named pipe is never opened: that would block)."""
    st = os.stat(path)  # follows symlinks
    _check_regular(st.st_mode, name=name)
    limits.check_bytes(st.st_size, name=name)
    fh = open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")  # noqa: SIM115 - returned
    try:  # replaced between the stat and the open?
        _check_regular(os.fstat(fh.fileno()).st_mode, name=name)
    except ValueError:
        fh.close()
        raise
    return fh


def _read_bytes(fh: BinaryIO, *, name: str, limits: DocLimits) -> bytes:
    """The file's bytes: the first 8 KiB checked for NUL bytes before the rest is read,
    and never more than `limits.max_bytes`."""
    head = fh.read(8192)
    if b"\x00" in head:
        raise ValueError(f"{name}: binary file (NUL bytes), not text")
    data = head + fh.read(limits.max_bytes + 1 - len(head))
    limits.check_bytes(len(data), name=name)  # it grew since its size was checked
    return data


def _read_file(fs, entry: Entry, *, source: str, limits: DocLimits) -> SourceDocument | Failure:
    doc_id = entry.rel
    try:
        check_doc_id(doc_id)
        if is_local(fs):
            fh = _open_local(entry.path, name=doc_id, limits=limits)
        else:
            size = entry.size if entry.size is not None else fs.info(entry.path)["size"]
            limits.check_bytes(size, name=doc_id)
            fh = fs.open(entry.path, "rb")
        with fh:
            data = _read_bytes(fh, name=doc_id, limits=limits)
        text = limits.check_chars(decode_text(data, name=doc_id), name=doc_id)
    except (OSError, ValueError) as exc:
        return Failure(doc_id, str(exc))
    return SourceDocument(doc_id, source, text, content_hash(text))


def _external_target(root: str, path: str) -> str | None:
    """The target of PATH when it is a local symlink pointing outside ROOT, else None."""
    if not os.path.islink(path):
        return None
    target, base = os.path.realpath(path), os.path.realpath(root)
    return None if os.path.commonpath([target, base]) == base else target


def _list_folder(fs, root: str, corpus: str, skipped: list[Skipped]):
    """The folder's entries, and a failure for each subfolder that could not be listed."""
    if not is_local(fs):
        return list_fsspec(fs, root).entries, []
    try:
        listing = list_local(root)
    except OSError as exc:
        raise CorpusUnreadableError(
            f"cannot list the corpus folder {corpus!r}: {exc.strerror or exc}; nothing was "
            "changed: check its permissions") from None
    unlisted = [Failure(rel, f"cannot list the folder {rel} ({why}): its documents are held "
                             "back (none is deleted, none is updated); check its permissions",
                        doc_id_known=False, folder=rel) for rel, why in listing.unlisted]
    skipped += [Skipped(rel, f"symlink to the folder {target}: not followed (folder "
                             "symlinks never are; index that folder itself, or link its files)")
                for rel, target in listing.folder_links]
    return listing.entries, unlisted


def _from_folder(
    fs, root: str, corpus: str, skipped: list[Skipped], allow_external: bool,
    limits: DocLimits,
) -> Iterator[SourceDocument | Failure]:
    """The folder's .txt/.md files; symlinks out of the folder are reported in SKIPPED
    instead of being read, unless ALLOW_EXTERNAL."""
    root = root.rstrip("/")
    entries, unlisted = _list_folder(fs, root, corpus, skipped)
    yield from unlisted
    if not entries and not unlisted:
        raise CorpusNotFoundError(f"corpus folder {corpus!r} holds no .txt or .md files")
    prefix = corpus.rstrip("/")
    for entry in entries:
        target = None if allow_external or not is_local(fs) else _external_target(
            root, entry.path)
        if target is not None:
            skipped.append(Skipped(entry.rel, f"symlink to {target}, outside the corpus "
                                              "folder: skipped (pipeline.allow_external_symlinks)"))
            continue
        yield _read_file(fs, entry, source=f"{prefix}/{entry.rel}", limits=limits)


def _from_jsonl(
    fs, path: str, corpus: str, limits: DocLimits
) -> Iterator[SourceDocument | Failure]:
    if is_local(fs):
        try:
            _check_regular(os.stat(path).st_mode, name=corpus)
        except ValueError as exc:
            raise CorpusUnreadableError(str(exc)) from None
    with fs.open(path, "rb") as fh:
        for lineno, raw in enumerate(bounded_lines(fh, limits.max_bytes), start=1):
            where, line = f"{corpus}:{lineno}", f"line {lineno}"
            if raw is None:
                yield Failure(line, f"{where}: line longer than {limits.max_bytes:,} bytes "
                                    "(pipeline.max_doc_bytes): not read", doc_id_known=False)
            elif raw.strip():
                yield _jsonl_line(raw, where=where, line=line, limits=limits)


def _jsonl_line(
    raw: bytes, *, where: str, line: str, limits: DocLimits
) -> SourceDocument | Failure:
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
        text = limits.check_chars(check_text(row["text"], name=doc_id), name=doc_id)
        digest = content_hash(text)  # UnicodeEncodeError (a ValueError): lone surrogates
    except ValueError as exc:
        return Failure(doc_id, f"{where}: {exc}")
    return SourceDocument(doc_id, where, text, digest)
