"""A JSONL corpus: one document per line, `{"doc_id": ..., "text": ...}`; any other field
is the document's metadata (`documents.metadata_json`; "title" also fills
`documents.title`), not part of its content hash.

`list_jsonl` streams the file once and hashes each line's text (the text is in hand:
parsing a line costs about as much as hashing it), keeping only `Listed` entries with
their byte offsets; `read_jsonl` reads the lines a run needs again by seeking to them,
so a run holds one text at a time. A line that is not JSON, has no usable doc_id or is
longer than `pipeline.max_doc_bytes` fails without a doc_id (`doc_id_known=False`); any
other bad line fails under its doc_id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from sproutrag.documents import (
    SHOWN_ID_CHARS,
    Failure,
    SourceDocument,
    content_hash,
    metadata_hash,
)
from sproutrag.errors import CorpusUnreadableError
from sproutrag.ingest.listing import bounded_lines, is_local
from sproutrag.ingest.sources import (
    DocLimits,
    Listed,
    as_text,
    check_doc_id,
    check_regular,
    check_text,
)

#: The fields of a JSONL line that are not its metadata.
RESERVED = ("doc_id", "text")


class Parsed(NamedTuple):
    """One JSONL line: doc_id, text, content hash, "title" (a string field) and the other
    fields as a JSON object (sorted keys; None when there are none)."""

    doc_id: str
    text: str
    digest: str
    title: str | None
    metadata: str | None


def _metadata(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """(title, metadata JSON) of a parsed line: every field but `RESERVED`."""
    rest = {k: v for k, v in row.items() if k not in RESERVED}
    title = rest.get("title") if isinstance(rest.get("title"), str) else None
    if not rest:
        return title, None
    try:
        return title, json.dumps(rest, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError:  # Python's json reads NaN and Infinity, which JSON has not
        bad = sorted(k for k, v in rest.items() if not _strict_json(v))
        raise ValueError(f"metadata field {', '.join(map(repr, bad))} holds NaN or Infinity "
                         "(also inside it), which JSON has no value for: write null or a "
                         "string") from None


def _strict_json(value: Any) -> bool:
    """Whether VALUE is JSON without NaN or Infinity anywhere inside it."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def _parse(raw: bytes, *, where: str, line: str, limits: DocLimits) -> Parsed | Failure:
    """One JSONL line (`Parsed`); a failure names the doc_id whenever the line has a
    usable one. A line's metadata must be text too (no lone surrogates)."""
    try:
        row = json.loads(raw)
    except UnicodeDecodeError as exc:
        return Failure(line, f"{where}: not UTF-8 (byte {exc.object[exc.start]:#04x} at "
                       f"{exc.start}): write the file as UTF-8 (e.g. `iconv -f latin1 -t "
                       "utf-8`)", doc_id_known=False)
    except ValueError as exc:  # not JSON
        return Failure(line, f"{where}: not a JSON line ({exc})", doc_id_known=False)
    if not isinstance(row, dict):
        return Failure(line, f"{where}: not a JSON object {{\"doc_id\", \"text\", ...}} "
                       f"(a {type(row).__name__})", doc_id_known=False)
    if "doc_id" not in row:
        return Failure(line, f"{where}: missing field 'doc_id'", doc_id_known=False)
    doc_id = row["doc_id"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        return Failure(line, f"{where}: doc_id must be a string or an integer, got "
                       f"{doc_id!r}", doc_id_known=False)
    doc_id = str(doc_id)
    try:
        check_doc_id(doc_id)
    except ValueError as exc:  # never stored: `runs.failures_json` keeps its start only
        return Failure(as_text(doc_id[:SHOWN_ID_CHARS]), f"{where}: {exc}")
    try:
        if "text" not in row:
            raise ValueError("missing field 'text'")
        if not isinstance(row["text"], str):
            raise ValueError(f"text must be a string, got {type(row['text']).__name__}")
        text = limits.check_chars(check_text(row["text"], name=doc_id), name=doc_id)
        try:
            digest = content_hash(text)
        except UnicodeEncodeError:  # a JSON escape such as "\ud800" without its pair
            raise ValueError("text holds a lone surrogate (a \\uD800-\\uDFFF escape "
                             "without its pair): not valid Unicode; fix the export") from None
        title, metadata = _metadata(row)
        if metadata is not None:
            metadata.encode("utf-8")  # lone surrogates in a field
    except ValueError as exc:  # the line's doc_id is the failure's: named once
        return Failure(as_text(doc_id), f"{where}: {str(exc).removeprefix(f'{doc_id}: ')}")
    return Parsed(doc_id, text, digest, title, metadata)


def _wide_encoding(first: bytes) -> str | None:
    """The encoding of a file whose first line is FIRST, when it is UTF-16 or UTF-32
    (by its byte order mark, or a NUL in every other byte of JSON's ASCII), else None:
    `json.loads` reads such a line by itself and every later one failed as "not UTF-8"."""
    if first[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return "UTF-32"
    if first[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16"
    if len(first) >= 4 and first.count(0) * 3 >= len(first):
        return "UTF-16BE" if first[0] == 0 else "UTF-16LE"
    return None


def _open(fs: Any, path: str, corpus: str):
    """The JSONL file PATH open for reading; `CorpusUnreadableError` naming CORPUS when it
    is no regular file or cannot be read (not the database's error: nothing changes)."""
    if is_local(fs):
        try:
            check_regular(os.stat(path).st_mode, name=corpus)
        except ValueError as exc:
            raise CorpusUnreadableError(str(exc)) from None
    try:
        return fs.open(path, "rb")
    except PermissionError as exc:
        raise CorpusUnreadableError(
            f"cannot read the corpus file {corpus!r}: {exc.strerror or exc}; nothing was "
            "changed: check its permissions") from None


def list_jsonl(fs: Any, path: str, corpus: str, limits: DocLimits
               ) -> Iterator[Listed | Failure]:
    """Every non-blank line of the file: a `Listed` (hash, size, offset, line number)
    or a `Failure`."""
    with _open(fs, path, corpus) as fh:
        for lineno, (offset, raw) in enumerate(bounded_lines(fh, limits.max_bytes), start=1):
            where, line = f"{corpus}:{lineno}", f"line {lineno}"
            if lineno == 1 and raw is not None:
                if wide := _wide_encoding(raw):
                    raise CorpusUnreadableError(
                        f"{corpus} is {wide} text, not UTF-8 JSON Lines: nothing was "
                        f"indexed; convert it (`iconv -f {wide} -t UTF-8`) and run again")
            if raw is None:
                yield Failure(line, f"{where}: line longer than {limits.max_bytes:,} bytes "
                                    "(pipeline.max_doc_bytes): not read", doc_id_known=False)
            elif raw.removeprefix(b"\xef\xbb\xbf").strip():  # a UTF-8 BOM alone is blank
                parsed = _parse(raw, where=where, line=line, limits=limits)
                if isinstance(parsed, Failure):
                    yield parsed
                else:
                    meta = None if parsed.metadata is None else metadata_hash(parsed.metadata)
                    yield Listed(parsed.doc_id, size=len(raw), content_hash=parsed.digest,
                                 offset=offset, line=lineno, meta_hash=meta)


#: Bytes `_read_line` reads at a time.
FIRST_READ = 1 << 13


def _read_line(fh: Any, offset: int, limit: int) -> bytes | None:
    """The line at OFFSET (newline stripped), or None when it is longer than LIMIT.

    Reads blocks of `FIRST_READ` bytes up to the line's end (`bounded_lines`), never up
    to LIMIT: reading LIMIT bytes (100 MB by default) for every document copied the rest
    of the file each time, so a run over a JSONL file of N documents read O(N^2) bytes."""
    fh.seek(offset)
    return next(bounded_lines(fh, limit, block=FIRST_READ), (offset, b""))[1]


def read_jsonl(fs: Any, path: str, corpus: str, items: Iterable[Listed], limits: DocLimits
               ) -> Iterator[SourceDocument | Failure]:
    """The documents of ITEMS (listed by `list_jsonl`), read again at their offsets, in
    the order given. A line that no longer holds its doc_id (the file changed since it
    was listed) fails: the next run lists it afresh."""
    with _open(fs, path, corpus) as fh:
        for item in items:
            where = f"{corpus}:{item.line}"
            raw = _read_line(fh, item.offset, limits.max_bytes)
            parsed = (Failure(item.doc_id, f"{where}: line longer than {limits.max_bytes:,} "
                              "bytes (pipeline.max_doc_bytes): not read") if raw is None else
                      _parse(raw, where=where, line=f"line {item.line}", limits=limits))
            if isinstance(parsed, Failure):
                yield Failure(item.doc_id, parsed.reason) if not parsed.doc_id_known \
                    else parsed
            elif parsed.doc_id != item.doc_id:
                yield Failure(item.doc_id, f"{where}: the file changed while the run read it "
                                           "(the line now holds another document); the next "
                                           "run reads it again")
            else:
                yield SourceDocument(item.doc_id, where, parsed.text, parsed.digest,
                                     size=len(raw), title=parsed.title,
                                     metadata=parsed.metadata)
