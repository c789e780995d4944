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

Discovery is two passes, so that a run never holds the corpus's texts: `list_corpus`
lists the documents (doc_id, size, modification time, ETag: no file is read; a JSONL
file is streamed once and each line hashed, `sproutrag.ingest.jsonl`) and `read_listed`
reads the texts of the documents a run needs, one at a time, in listing order.
`discover` does both for every document. Memory: the listing (about 250 bytes a
document), never more than one text.

In a local folder a file symlink is followed only when its target lies inside the corpus
folder; one pointing outside (say to /etc/passwd) is skipped and reported
(`Discovery.skipped`) unless `allow_external_symlinks`. Symlinks to folders are never
followed (no cycles, no document under two doc_ids): they are skipped and reported.
Only regular files are opened (a named pipe would block the run forever); a file's size
is checked before it is read, and the binary check reads only its first 8 KiB.
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.documents import Failure, Skipped, SourceDocument, content_hash
from sproutrag.errors import CorpusNotFoundError, CorpusUnreadableError  # noqa: F401 - also importable from here
from sproutrag.ingest.jsonl import list_jsonl, read_jsonl
from sproutrag.ingest.listing import (
    TEXT_SUFFIXES,
    Entry,
    fsspec_entry,
    is_local,
    list_fsspec,
    list_local,
    local_facts,
)
from sproutrag.ingest.sources import (
    DocLimits,
    Listed,
    as_text,
    check_doc_id,
    check_regular,
    check_text,
    decode_text,
    listed_rows,
    listed_table,
    not_text,
    read_problem,
)

# re-exported: callers import them from here
__all__ = ["TEXT_SUFFIXES", "DocLimits", "Listed", "check_doc_id", "check_text", "decode_text"]

#: A file modified this close to its listing may change again within the same
#: modification time: its time is not stored, so the next run reads it (git's "racy" rule).
RACY = timedelta(seconds=2)


@dataclass(frozen=True)
class Discovery:
    """What `discover` found: readable documents (sorted by doc_id), failures, and the
    entries skipped on purpose (absent from the corpus for the run: an indexed one is
    deleted)."""

    docs: list[SourceDocument]
    failures: list[Failure]
    skipped: list[Skipped] = field(default_factory=list)


@dataclass(frozen=True)
class CorpusListing:
    """What `list_corpus` found: the documents (TABLE, `sources.LISTED_SCHEMA`: one row a
    document, sorted by doc_id; a JSONL file's in file order), failures, the entries
    skipped on purpose, and how to read them again (`read_listed`). KIND: "folder",
    "jsonl" or "file"; ROOT: the folder or file as the filesystem names it; LISTED_AT:
    when the listing started (UTC)."""

    corpus: str
    kind: str
    root: str
    table: pa.Table
    failures: list[Failure]
    skipped: list[Skipped] = field(default_factory=list)
    listed_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def items(self) -> list[Listed]:
        """Every listed document as a `Listed` (Python objects: for small corpora)."""
        return listed_rows(self.table)

    def line_sources(self) -> pa.ChunkedArray | None:
        """The `source` of every listed document of a JSONL corpus ("corpus.jsonl:LINE",
        in table order): a line's number changes when an earlier line is added or
        removed. None for files, whose source changes only with the corpus's spelling."""
        if self.kind != "jsonl":
            return None
        lines = pc.cast(self.table["line"], pa.string())
        return pc.binary_join_element_wise(f"{self.corpus}:", lines, "")

    def source(self, item: Listed) -> str:
        """Where ITEM is: the file's path or URL, or "corpus.jsonl:LINE"."""
        if self.kind == "jsonl":
            return f"{self.corpus}:{item.line}"
        return self.corpus if self.kind == "file" else f"{self.corpus.rstrip('/')}/{item.doc_id}"


def _filesystem(corpus: str, storage_options: dict[str, Any] | None):
    import fsspec.core

    fs, root = fsspec.core.url_to_fs(corpus, **(storage_options or {}))
    # fsspec reuses filesystem instances, and s3fs caches listings with each object's
    # ETag: a second run in the same process would read a changed object through the
    # stale entry ("no longer exists"). Every discovery lists afresh.
    fs.invalidate_cache()
    return fs, root


def check_corpus(corpus: str, *, storage_options: dict[str, Any] | None = None) -> None:
    """Raise CorpusNotFoundError when CORPUS does not exist, or is a .json file (a cheap
    check before a run: it would be indexed as one text document)."""
    fs, root = _filesystem(str(corpus), storage_options)
    if not fs.exists(root):
        raise CorpusNotFoundError(
            f"corpus {corpus!r} does not exist: give a folder of .txt/.md files, "
            "a .jsonl file of {doc_id, text} lines, or a single text file"
        )
    if root.lower().endswith(".json") and not fs.isdir(root):  # not one text document
        raise CorpusNotFoundError(
            f"corpus {corpus!r} is a .json file: SproutRAG reads JSON Lines from a .jsonl "
            "file (one {doc_id, text} object a line); rename it .jsonl if it is JSON "
            "Lines, or write it as JSON Lines"
        )


def list_corpus(
    corpus: str, *, storage_options: dict[str, Any] | None = None,
    allow_external_symlinks: bool = False, limits: DocLimits | None = None,
    include_hidden: bool = False, allow_empty: bool = False,
) -> CorpusListing:
    """The corpus's documents as its listing sees them (no file is read; a JSONL file is
    streamed and hashed line by line), with failures and skipped entries. Memory: about
    120 bytes a document (columns, `sources.listed_table`)."""
    check_corpus(corpus, storage_options=storage_options)
    fs, root = _filesystem(str(corpus), storage_options)
    limits = limits or DocLimits()
    listed_at, skipped, failures = datetime.now(UTC), [], []
    if fs.isdir(root):
        kind, root = "folder", root.rstrip("/")
        items = _list_folder_items(fs, root, corpus, skipped, allow_external_symlinks,
                                   include_hidden, allow_empty)
    elif root.endswith(".jsonl"):
        kind, items = "jsonl", list_jsonl(fs, root, str(corpus), limits)
    else:
        kind = "file"
        items = iter([_file_item(fs, root, root.rsplit("/", 1)[-1])])
    table = listed_table(_split(items, failures))
    table = _without_duplicates(table, failures, corpus)
    if kind != "jsonl":
        table = table.sort_by("doc_id")
    return CorpusListing(str(corpus), kind, root, table, failures, skipped, listed_at)


def _split(items: Iterable[Listed | Failure], failures: list[Failure]) -> Iterator[Listed]:
    """The `Listed` of ITEMS; the failures go to FAILURES."""
    for item in items:
        if isinstance(item, Failure):
            failures.append(item)
        else:
            yield item


def read_listed(
    listing: CorpusListing, items: Iterable[Listed] | None = None, *,
    storage_options: dict[str, Any] | None = None, limits: DocLimits | None = None,
) -> Iterator[SourceDocument | Failure]:
    """The documents of ITEMS (default: every listed one) read, in the order given; a
    document that cannot be read is a `Failure`. Each carries what the listing said of
    it (a modification time within `RACY` of the listing is dropped)."""
    fs, _ = _filesystem(listing.corpus, storage_options)
    limits = limits or DocLimits()
    items = listing.items if items is None else items
    if listing.kind == "jsonl":
        yield from read_jsonl(fs, listing.root, listing.corpus, items, limits)
        return
    for item in items:
        path = listing.root if listing.kind == "file" else f"{listing.root}/{item.doc_id}"
        entry = Entry(path, item.doc_id, item.size, item.modified_at, item.etag)
        found = _read_file(fs, entry, source=listing.source(item), limits=limits)
        if isinstance(found, SourceDocument):
            recent = item.modified_at is not None and item.modified_at >= (
                listing.listed_at - RACY)
            found = SourceDocument(found.doc_id, found.source, found.text, found.content_hash,
                                   item.size, None if recent else item.modified_at, item.etag)
        yield found


def discover(
    corpus: str, *, storage_options: dict[str, Any] | None = None,
    allow_external_symlinks: bool = False, limits: DocLimits | None = None,
    include_hidden: bool = False,
) -> Discovery:
    """The corpus's readable documents (sorted by doc_id), failures and skipped entries:
    `list_corpus` and `read_listed` of every document, texts held in memory (for small
    corpora and tests; an index run streams)."""
    listing = list_corpus(corpus, storage_options=storage_options,
                          allow_external_symlinks=allow_external_symlinks, limits=limits,
                          include_hidden=include_hidden)
    docs, failures = [], list(listing.failures)
    for found in read_listed(listing, storage_options=storage_options, limits=limits):
        (docs if isinstance(found, SourceDocument) else failures).append(found)
    return Discovery(sorted(docs, key=lambda d: d.doc_id), failures, listing.skipped)


def _without_duplicates(table: pa.Table, failures: list[Failure], corpus: str) -> pa.Table:
    """TABLE without the doc_ids found more than once (as documents, or as a document and
    a failure): each becomes one failure naming every copy (in FAILURES, which loses the
    copies' own failures). Vectorised: only the duplicates are looked at one by one."""
    failed = Counter(f.doc_id for f in failures if f.doc_id_known)
    counts = pc.value_counts(table["doc_id"])
    dups = {v for v, n in zip(counts.field("values").to_pylist(),
                              counts.field("counts").to_pylist()) if n > 1}
    listed = set(pc.filter(table["doc_id"], pc.is_in(
        table["doc_id"], value_set=pa.array(sorted(failed), pa.string()))).to_pylist())
    dups |= {d for d, n in failed.items() if n > 1 or d in listed}
    if not dups:
        return table
    keep = pc.invert(pc.is_in(table["doc_id"], value_set=pa.array(sorted(dups), pa.string())))
    where: dict[str, list[str]] = {d: [] for d in sorted(dups)}
    for row in listed_rows(table.filter(pc.invert(keep))):
        where[row.doc_id].append(f"{corpus}:{row.line}" if row.line else row.doc_id)
    for f in [f for f in failures if f.doc_id_known and f.doc_id in dups]:
        where[f.doc_id].append(f"failed: {f.reason}")
        failures.remove(f)
    for doc_id, copies in where.items():
        failures.append(Failure(doc_id, (
            f"duplicate doc_id: {len(copies)} entries ({'; '.join(copies)}); none of them "
            "is indexed (an indexed version stays): give each document its own doc_id")))
    return table.filter(keep)


def _open_local(path: str, *, name: str, limits: DocLimits) -> BinaryIO:
    """PATH opened for reading once it is known to be a regular file of at most
    `limits.max_bytes` (a named pipe is never opened: that would block)."""
    st = os.stat(path)  # follows symlinks
    check_regular(st.st_mode, name=name)
    limits.check_bytes(st.st_size, name=name)
    fh = open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")  # noqa: SIM115 - returned
    try:  # replaced between the stat and the open?
        check_regular(os.fstat(fh.fileno()).st_mode, name=name)
    except ValueError:
        fh.close()
        raise
    return fh


def _read_bytes(fh: BinaryIO, *, name: str, limits: DocLimits) -> bytes:
    """The file's bytes: the first 8 KiB checked for NUL bytes before the rest is read,
    and never more than `limits.max_bytes`."""
    head = fh.read(8192)
    if b"\x00" in head:
        raise not_text(head, name=name)
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
        broken = _broken_link(entry.path) if is_local(fs) else None
        return Failure(doc_id, broken or read_problem(exc))
    return SourceDocument(doc_id, source, text, content_hash(text))


def _broken_link(path: str) -> str | None:
    """Why PATH cannot be read when it is a symlink to nothing (or to itself, through a
    loop of links); None otherwise."""
    if os.path.islink(path) and not os.path.exists(path):
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return (f"a symlink loop: its target {os.readlink(path)!r} leads back to "
                        "a link of the loop (fix or remove the links)")
        return (f"a broken symlink: its target {os.readlink(path)!r} does not exist (fix "
                "or remove the link)")
    return None


def _file_item(fs, path: str, name: str) -> Listed:
    """The one document of a single-file corpus, as its listing (a stat) sees it."""
    try:
        entry = (_stat_local(path, name) if is_local(fs) else
                 fsspec_entry(path, name, fs.info(path)))
    except OSError:  # reading it reports why
        return Listed(name)
    return Listed(name, entry.size, entry.modified_at, entry.etag)


def _stat_local(path: str, name: str) -> Entry:
    return Entry(path, name, *local_facts(path, os.stat(path)))


def _external_target(root: str, path: str) -> str | None:
    """The target of PATH when it is a local symlink pointing outside ROOT, else None."""
    if not os.path.islink(path):
        return None
    target, base = os.path.realpath(path), os.path.realpath(root)
    return None if os.path.commonpath([target, base]) == base else target


def _list_folder(fs, root: str, corpus: str, skipped: list[Skipped], include_hidden: bool):
    """The folder's entries, and a failure for each subfolder that could not be listed."""
    if not is_local(fs):
        return list_fsspec(fs, root, include_hidden=include_hidden).entries, []
    try:
        listing = list_local(root, include_hidden=include_hidden)
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


def _list_folder_items(
    fs, root: str, corpus: str, skipped: list[Skipped], allow_external: bool,
    include_hidden: bool = False, allow_empty: bool = False,
) -> list[Listed | Failure]:
    """The folder's .txt/.md files as `Listed` (doc_id: the path below the folder) and a
    failure per subfolder that could not be listed; symlinks out of the folder are
    reported in SKIPPED instead, unless ALLOW_EXTERNAL; hidden files and folders (a name
    starting with a dot) are left out unless INCLUDE_HIDDEN; an invalid doc_id fails.
    A folder with no such file is an error (a wrong path, most likely) unless
    ALLOW_EMPTY (a run allowed to delete every document: `--allow-mass-delete`)."""
    entries, unlisted = _list_folder(fs, root, corpus, skipped, include_hidden)
    if not entries and not unlisted and not allow_empty:
        hint = "" if include_hidden else (
            " (hidden files and folders, whose names start with a dot, are left out: "
            "set pipeline.include_hidden to index them)")
        raise CorpusNotFoundError(
            f"corpus folder {corpus!r} holds no .txt or .md files{hint}; to delete every "
            "document of the database, run again with --allow-mass-delete")
    items: list[Listed | Failure] = list(unlisted)
    for entry in entries:
        target = None if allow_external or not is_local(fs) else _external_target(
            root, entry.path)
        if target is not None:
            skipped.append(Skipped(entry.rel, f"symlink to {target}, outside the corpus "
                                              "folder: skipped (pipeline.allow_external_symlinks)"))
            continue
        items.append(_folder_item(entry))
    return items


def _folder_item(entry: Entry) -> Listed | Failure:
    """ENTRY as `Listed`, or a failure when its path below the folder is no doc_id (not
    valid UTF-8, control characters)."""
    shown = as_text(entry.rel)
    if shown != entry.rel:
        return Failure(shown, f"{shown}: file name is not valid UTF-8: rename it (a doc_id "
                              "is the file's path below the corpus folder, as UTF-8 text)")
    try:
        check_doc_id(entry.rel)
    except ValueError as exc:
        return Failure(entry.rel, str(exc))
    return Listed(entry.rel, entry.size, entry.modified_at, entry.etag)
