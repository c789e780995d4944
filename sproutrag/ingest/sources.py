"""What every corpus kind shares: the checks a doc_id and a text pass, the size limits, and
`Listed`, a document as the corpus listing saw it (before its text is read)."""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa

from sproutrag.blank import shows_nothing
from sproutrag.documents import shown_id


@dataclass(frozen=True, slots=True)
class Listed:
    """A corpus document as its listing saw it, without its text: the doc_id, what the
    listing said (size in bytes, modification time in UTC, ETag; None when it said
    nothing), the content hash when the listing read the text anyway (a JSONL line: it
    is hashed while listed) and, for a JSONL line, where it is (byte offset, line number)
    and the hash of its metadata (its other fields)."""

    doc_id: str
    size: int | None = None
    modified_at: datetime | None = None
    etag: str | None = None
    content_hash: str | None = None
    offset: int = -1
    line: int = 0
    meta_hash: str | None = None  # a JSONL line's metadata (`documents.metadata_hash`)


#: A corpus listing as columns (`listed_table`): about 120 bytes a document, where the
#: `Listed` objects of a million documents would hold 400 MB.
LISTED_SCHEMA = pa.schema([
    pa.field("doc_id", pa.string()), pa.field("size", pa.int64()),
    pa.field("modified_at", pa.timestamp("us", tz="UTC")), pa.field("etag", pa.string()),
    pa.field("content_hash", pa.string()), pa.field("offset", pa.int64()),
    pa.field("line", pa.int64()), pa.field("meta_hash", pa.string()),
])
_COLUMNS = LISTED_SCHEMA.names


def listed_table(items: Iterable[Listed], *, block: int = 65_536) -> pa.Table:
    """ITEMS as a `LISTED_SCHEMA` table, converted a block at a time (the Python objects
    of one block at most are alive)."""
    batches, cols = [], {c: [] for c in _COLUMNS}

    def flush() -> None:
        batches.append(pa.record_batch([pa.array(cols[c], LISTED_SCHEMA.field(c).type)
                                        for c in _COLUMNS], schema=LISTED_SCHEMA))
        for c in _COLUMNS:
            cols[c].clear()

    for item in items:
        for c in _COLUMNS:
            cols[c].append(getattr(item, c))
        if len(cols["doc_id"]) >= block:
            flush()
    flush()
    return pa.Table.from_batches(batches, schema=LISTED_SCHEMA)


def listed_rows(table: pa.Table, rows: Sequence[int] | None = None) -> list[Listed]:
    """The `Listed` of TABLE's ROWS (default: every row), in that order."""
    part = table if rows is None else table.take(pa.array(rows, pa.int64()))
    data = part.to_pydict()
    return [Listed(*values) for values in zip(*(data[c] for c in _COLUMNS))]


def not_text(data: bytes, *, name: str) -> ValueError:
    """Why DATA, whose first 8 KiB hold a NUL byte, is not read: UTF-16 or UTF-32 text
    gets the conversion to run."""
    wide = _wide_encoding(data)
    if wide:
        return ValueError(f"{name}: {wide} text, not UTF-8: convert the file (e.g. `iconv "
                          f"-f {wide} -t UTF-8`)")
    return ValueError(f"{name}: binary file (NUL bytes), not text")


def _wide_encoding(data: bytes) -> str | None:
    """"UTF-32" or "UTF-16" when DATA starts with that byte order mark; "UTF-16LE" or
    "UTF-16BE" when, without one, a NUL sits beside most letters on one side and never
    on the other; else None."""
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return "UTF-32"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16"
    head = data[:512]
    half = len(head) // 2
    even, odd = head[0::2].count(0), head[1::2].count(0)  # "H\0" is little-endian
    if half < 8 or min(even, odd) > 0 or max(even, odd) < 0.4 * half:
        return None
    return "UTF-16LE" if odd else "UTF-16BE"


def decode_text(data: bytes, *, name: str) -> str:
    """Strict UTF-8; a leading byte order mark is dropped (as Python's "utf-8-sig" reads
    it), so spans index the text after it. Binary and undecodable data raise ValueError."""
    if b"\x00" in data[:8192]:
        raise not_text(data, name=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert the file to UTF-8"
        ) from None
    return check_text(text, name=name)


#: Unicode's control characters (category Cc) and lone surrogates (Cs).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def as_text(name: str) -> str:
    """NAME with its lone surrogates escaped, so that it can be stored and shown: a file
    name that is not valid UTF-8 (Python decodes it with surrogateescape) shows its bytes
    ("caf\\xe9.txt"), any other lone surrogate (a JSON "\\ud800") its code point. NAME
    itself when it is valid text."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


def check_doc_id(doc_id: str) -> str:
    """A doc_id must be non-empty text without control characters (NUL, newlines, ...)."""
    if not doc_id.strip():
        raise ValueError(f"invalid doc_id {shown_id(doc_id)}: empty")
    found = _CONTROL.search(doc_id)
    if found:
        code = ord(found.group())
        kind = "lone surrogate" if 0xD800 <= code <= 0xDFFF else "control character"
        raise ValueError(f"invalid doc_id {shown_id(doc_id)}: {kind} U+{code:04X} (doc_ids "
                         "must be printable text)")
    return doc_id


def check_text(text: str, *, name: str) -> str:
    """TEXT, or an error when it shows nothing (white space and zero-width characters
    only: nothing a search could return)."""
    if shows_nothing(text):
        raise ValueError(f"{name}: empty document (no text to index)")
    return text


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


_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a folder"))


def check_regular(mode: int, *, name: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{name}: {kind}, not a regular file: not read "
                         "(only regular files are indexed)")


def read_problem(exc: OSError | ValueError) -> str:
    """Why a file could not be read, as a user acts on it (an OSError's errno line
    named the full path and no remedy)."""
    if isinstance(exc, PermissionError):
        return (f"cannot read the file ({exc.strerror}): check its permissions; its indexed "
                "version, if any, stays")
    if isinstance(exc, FileNotFoundError):
        return ("the file was removed while the run read the corpus: the next run deletes "
                "it from the index, if it stays gone")
    return str(exc)
