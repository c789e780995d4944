"""Labelled datasets on disk: JSON Lines of documents and of queries with gold spans.

A set is two files per split, `SPLIT.docs.jsonl` (`{"doc_id", "text"}` per line) and
`SPLIT.queries.jsonl` (`{"qid", "query", "doc_ids", "gold": [{"doc_id", "start",
"end"}]}` per line), as in ../shared/data and as `sproutrag.learn.devsets` writes them.
Evaluation, training and the long dev sets read and write them here.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Container, Sequence
from pathlib import Path
from typing import Any

from sproutrag.errors import DatasetError
from sproutrag.search.batch import write_jsonl  # noqa: F401 - the one JSONL writer
from sproutrag.search.hits import text_id


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every non-blank line of a JSON Lines file, parsed; `DatasetError` naming the file
    and line of the first line that is not a JSON object (or not UTF-8)."""
    rows = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                rows.append(_json_object(path, n, line))
    return rows


def _json_object(path: str | Path, n: int, line: bytes) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} line {n} is not a JSON object ({exc.msg} at column "
                           f"{exc.colno}): fix or remove the line") from None
    except ValueError:  # bytes that are not UTF-8
        raise DatasetError(f"{path} line {n} is not UTF-8 text: fix or remove the "
                           "line") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{path} line {n} is not a JSON object (a "
                           f"{type(row).__name__}): fix or remove the line")
    return row


def read_labelled(docs_path: str | Path, queries_path: str | Path, *, log: Any = print
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A labelled set's documents and queries (`read_jsonl`), checked before anything is
    encoded (`check_labelled`); what would mis-score is said through LOG (the first
    `WARNINGS_SHOWN`, then how many more)."""
    queries, docs = read_jsonl(queries_path), read_jsonl(docs_path)
    said = check_labelled(docs, queries, docs_path=docs_path, queries_path=queries_path)
    for line in said[:WARNINGS_SHOWN]:
        log(f"warning: {line}")
    if len(said) > WARNINGS_SHOWN:
        log(f"warning: and {len(said) - WARNINGS_SHOWN} more such labels")
    return docs, queries


#: Label warnings `read_labelled` prints one by one.
WARNINGS_SHOWN = 5


def check_labelled(docs: Sequence[dict[str, Any]], queries: Sequence[dict[str, Any]], *,
                   docs_path: Any, queries_path: Any) -> list[str]:
    """What would crash: `DatasetError` naming the file, the entry and the fix (a doc_id
    that is neither a string nor an integer, a text that is not a string, a gold span
    that is not {doc_id, start, end} with integer offsets). What would mis-score without
    a word, returned as lines to say (labels are still scored as given: evaluation
    scripts call `evaluate` on their own sets): a doc_id or qid twice, a gold span
    outside its document's text (0 <= start < end <= its length), a gold document the
    query's doc_ids leave out."""
    texts: dict[str, str] = {}
    said: list[str] = []
    for n, d in enumerate(docs, start=1):
        doc_id, text = text_id(d.get("doc_id")), d.get("text")
        where = f"{docs_path}: document {n}"
        if doc_id is None:
            raise DatasetError(f"{where}: doc_id must be a string or an integer, got "
                               f"{d.get('doc_id')!r}")
        if not isinstance(text, str):
            raise DatasetError(f"{where} ({doc_id!r}): text must be a string, got "
                               f"{type(text).__name__}")
        if doc_id in texts:
            said.append(f"{where}: doc_id {doc_id!r} again (the last one is used)")
        texts[doc_id] = text
    seen: set[str] = set()
    for n, q in enumerate(queries, start=1):
        where = f"{queries_path}: query {n} (qid {q.get('qid')!r})"
        if "qid" in q and str(q["qid"]) in seen:
            said.append(f"{where}: the qid again (both are scored)")
        seen.add(str(q.get("qid")))
        problem, fatal = _gold_problem(q, texts)
        if fatal:
            raise DatasetError(f"{where}: {problem}")
        if problem:
            said.append(f"{where}: {problem}")
    return said


def _gold_problem(q: dict[str, Any], texts: dict[str, str]) -> tuple[str | None, bool]:
    """(what is wrong with Q's gold spans, whether scoring them would crash)."""
    gold, scope = q.get("gold") or [], q.get("doc_ids")  # null gold: unlabelled
    if not isinstance(gold, list):
        return f"gold must be a list of {{doc_id, start, end}}, got {type(gold).__name__}", True
    for g in gold:
        if not isinstance(g, dict) or not {"doc_id", "start", "end"} <= set(g):
            return f"a gold span must be {{doc_id, start, end}}, got {g!r}", True
        if any(isinstance(x, bool) or not isinstance(x, int) for x in (g["start"], g["end"])):
            return f"a gold span's start and end must be integers, got {g!r}", True
    for g in gold:
        start, end, doc = g["start"], g["end"], str(g["doc_id"])
        length = len(texts.get(doc, ""))
        if doc in texts and not 0 <= start < end <= length:
            return (f"gold span {start}-{end} is not inside document {doc!r} (0-{length}, "
                    "start before end): it cannot be found"), False
        if isinstance(scope, list) and scope and doc not in {str(d) for d in scope}:
            return (f"gold document {doc!r} is not among its doc_ids {scope!r}: its spans "
                    "cannot be found"), False
    return None, False


def gold_spans(q: dict[str, Any]) -> list[tuple[str, int, int]]:
    """A query's gold evidence as (doc id, start, end) character spans."""
    return [(str(g["doc_id"]), int(g["start"]), int(g["end"])) for g in q.get("gold") or []]


def usable_queries(
    queries: Sequence[dict[str, Any]], doc_ids: Collection[str],
    known: Container[str] | None = None,
) -> list[dict[str, Any]]:
    """`sort_queries`' usable queries."""
    return sort_queries(queries, doc_ids, known)[0]


def sort_queries(
    queries: Sequence[dict[str, Any]], doc_ids: Collection[str],
    known: Container[str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """(the queries that can be scored, why each other one cannot). DOC_IDS: the
    documents that can be searched (for example the featurized ones: a document without
    text has no units); KNOWN: every document given (default DOC_IDS). A usable query
    has gold evidence and names no document outside KNOWN; its `doc_ids` become strings,
    those of DOC_IDS (a document without units holds no evidence), or every document of
    DOC_IDS when it names none (as a query without doc_ids searches every document; never
    its gold's documents: the search would be told where the answer is). A query whose
    gold lies in a document outside KNOWN cannot be scored either."""
    known = doc_ids if known is None else known
    every: list[str] | None = None
    usable, dropped = [], []
    for q in queries:
        named = [str(d) for d in q.get("doc_ids") or []]
        missing = next((d for d in named if d not in known), None)
        lost = next((d for d, _, _ in gold_spans(q) if d not in known), None)
        if every is None and not named:
            every = sorted(doc_ids)
        docs = [d for d in named if d in doc_ids] if named else every
        why = ("has no gold evidence" if not gold_spans(q) else
               f"names document {missing!r}, which is not among the documents given"
               if missing is not None else
               f"has gold evidence in document {lost!r}, which is not among the documents "
               "given" if lost is not None else
               "has no document with text" if not docs else None)
        if why:
            dropped.append(f"qid {q.get('qid')!r} {why}")
        else:
            usable.append({**q, "doc_ids": docs})
    return usable, dropped


def scorable_queries(
    queries: Sequence[dict[str, Any]], doc_ids: Collection[str], *, queries_path: Any,
    docs_path: Any, known: Container[str] | None = None, log: Any = None,
) -> list[dict[str, Any]]:
    """`sorted_scorable`'s usable queries."""
    return sorted_scorable(queries, doc_ids, queries_path=queries_path, docs_path=docs_path,
                           known=known, log=log)[0]


def sorted_scorable(
    queries: Sequence[dict[str, Any]], doc_ids: Collection[str], *, queries_path: Any,
    docs_path: Any, known: Container[str] | None = None, log: Any = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """`sort_queries`' (usable, why each other one is not), the others said through LOG
    (when given; the first `WARNINGS_SHOWN`); or `DatasetError` naming QUERIES_PATH and
    why none is usable: no query has gold evidence, or their documents are not in
    DOCS_PATH (KNOWN) or have no text (DOC_IDS)."""
    usable, dropped = sort_queries(queries, doc_ids, known)
    if usable:
        if dropped and log is not None:
            log(f"warning: {len(dropped)} of {len(queries)} queries are not scored: "
                + "; ".join(dropped[:WARNINGS_SHOWN])
                + (f"; and {len(dropped) - WARNINGS_SHOWN} more" if len(dropped) >
                   WARNINGS_SHOWN else ""))
        return usable, dropped
    gold = [q for q in queries if gold_spans(q)]
    if not queries:
        why = "it holds no query"
    elif not gold:
        why = f"none of its {len(queries)} queries has gold evidence (\"gold\": [...])"
    else:
        known = doc_ids if known is None else known
        missing = next((str(d) for q in gold for d in [*(q.get("doc_ids") or []), *(
            g[0] for g in gold_spans(q))] if str(d) not in known), None)
        why = (f"the documents of its {len(gold)} queries with gold evidence are not all "
               f"in {docs_path} (e.g. {missing!r} is not): give the documents they were "
               "labelled on" if missing is not None else
               f"the documents of its {len(gold)} queries with gold evidence have no text "
               f"in {docs_path}")
    raise DatasetError(f"{queries_path}: no query can be scored: {why}")


def file_sha256(path: str | Path) -> str:
    """The first 16 hex digits of a file's SHA-256 (`config.json`'s data hashes)."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def trained_with(weights_file: str | Path, queries_path: str | Path) -> Path | None:
    """The `config.json` beside WEIGHTS_FILE (what `sproutrag train` wrote) when the
    queries file QUERIES_PATH, by content, is one it trained on; else None (no such
    file, or another set)."""
    config = Path(weights_file).parent / "config.json"
    try:
        sets = json.loads(config.read_text(encoding="utf-8"))["data"]["sets"]
        hashes = {str(x["queries_sha256"]) for x in sets}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return config if file_sha256(queries_path) in hashes else None
