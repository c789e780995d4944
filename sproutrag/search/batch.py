"""Batches of queries, shared by `sproutrag query --queries` and the `query-corpus` flow.

A batch is a JSONL file of `{"qid", "query", "doc_ids"?, "where"?, "budget_chars"?,
"budget_tokens"?}` lines (or the rows of a Parquet file); its results are a JSONL file of
`{"qid", "results"[, "used_chars", "used_tokens", "budget_chars", "budget_tokens"][,
"error"]}` lines (with a budget, the line's own or the run's, `results` is a context:
`Retriever.context`), written by `write_jsonl` (the one JSONL writer: `sproutrag query`,
the flow's `write_results` task and `sproutrag.learn.devsets`). Every entry is checked
before any search, the same way for both callers: a line that is not JSON, a query that is not
text, `doc_ids` that is not a list of ids (a bare string would otherwise be searched as
its characters), a qid that is neither a string nor an integer, or a qid already used
in the batch. Such an entry gets its output line with empty `results` and an `error`; the
rest of the batch runs. A field that is a run's setting ("k") or looks misspelt
("doc_id") is ignored, as every unknown field is (the command-line contract), but with a
logged warning (`misspelled_field`). Integer qids and doc ids are taken as their decimal strings (as
discovery takes integer JSONL doc_ids).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sproutrag.errors import SproutragError, os_errno
from sproutrag.params import DEFAULT, MODES, SELECTIONS, check_count, count_problem
from sproutrag.search.hits import check_doc_ids, check_query_text, has_surrogate, text_id
from sproutrag.search.retriever import Mode, QueryError, Retriever

log = logging.getLogger(__name__)

#: How the error of a query that hit a bug begins (its traceback is logged): a caller
#: tells such a query from one that could not run as given.
INTERNAL = "internal error: a bug, not the query (traceback in the log)"


def _storage_error(exc: BaseException) -> bool:
    """A read of the database failed (a lost file, a full or read-only disk)."""
    return isinstance(exc, OSError | RuntimeError) and (
        "lance" in str(exc).lower() or os_errno(exc) is not None)


def has_internal_errors(rows: Iterable[dict[str, Any]]) -> bool:
    """Whether any output row is a query that hit a bug."""
    return any(str(r.get("error", "")).startswith(INTERNAL) for r in rows)


@dataclass(frozen=True)
class Entry:
    """One entry of a batch: its line (or row) number and what the line held."""

    line: int
    value: Any = None
    error: str | None = None  # the line could not be read


@dataclass(frozen=True)
class Query:
    """A checked entry: runnable when `error` is None."""

    qid: str
    query: str = ""
    doc_ids: list[str] | None = None
    error: str | None = None
    where: str | None = None  # a SQL filter over `documents` columns
    budget_chars: int | None = None  # a context of at most this many characters
    budget_tokens: int | None = None  # ... and tokens
    refused_budgets: tuple[str, ...] = ()  # the line's budgets that are not valid


def check_query_parameters(*, k: int | None, beam: int, mode: str,
                           budget_chars: int | None = None,
                           budget_tokens: int | None = None,
                           selection: str | None = None) -> None:
    """Refuse bad query-run parameters before any work (QueryError, a ValueError, naming
    the parameter and its limits)."""
    if selection is not None and selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}; got "
                         f"{selection!r}")
    if k is not None:
        check_count("k", k)
    check_count("beam", beam, limits="beam_width")
    for name, value in (("budget_chars", budget_chars), ("budget_tokens", budget_tokens)):
        if value is not None:
            check_count(name, value)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")


def parse_lines(lines: Iterable[str | bytes]) -> list[Entry]:
    """JSONL lines -> entries (blank lines skipped; a line that is not JSON is an entry
    with its error)."""
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(Entry(n, json.loads(line)))
        except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
            why = f"{exc.msg} at column {exc.colno}" if isinstance(
                exc, json.JSONDecodeError) else "not UTF-8"
            out.append(Entry(n, error=f"line {n} is not a JSON object ({why})"))
    return out


#: The fields a batch line may give; others (a labelled set's "gold", "type") are
#: ignored, with a warning when `misspelled_field` takes them for a misspelling.
LINE_FIELDS = ("qid", "query", "doc_ids", "where", "budget_chars", "budget_tokens")
#: Settings of the whole run that a line cannot set: a line giving one gets a warning.
RUN_FIELDS = ("k", "mode", "beam", "beam_width", "selection", "tokenizer", "cutoff")


def misspelled_field(row: dict[str, Any]) -> str | None:
    """What ROW gives that is ignored though it looks meant, or None: a field that is a
    run's setting (a line's "k") or that looks like a misspelt `LINE_FIELDS` name
    ("doc_id" on a line without "doc_ids": the query searches every document)."""
    import difflib

    for name in row:
        if name in LINE_FIELDS or not isinstance(name, str):
            continue
        if name in RUN_FIELDS:
            return (f"{name!r} is a setting of the whole run (`sproutrag query --{name}`, "
                    "the flow's parameter), not of a line: ignored")
        close = difflib.get_close_matches(name.lower(), LINE_FIELDS, n=1, cutoff=0.8)
        if close and close[0] not in row:  # beside the field itself: a field of its own
            return (f"unknown field {name!r}, ignored: did you mean {close[0]!r}? (a "
                    f"line's fields: {', '.join(LINE_FIELDS)})")
    return None


def _check(entry: Entry, seen: dict[str, int]) -> Query:
    fallback = f"line-{entry.line}"
    if entry.error is not None:
        return Query(fallback, error=entry.error)
    row = entry.value
    if not isinstance(row, dict):
        return Query(fallback, error=f"line {entry.line}: a query must be a JSON object "
                     f"{{qid, query, doc_ids?}}, got {type(row).__name__}")
    qid = text_id(row["qid"]) if "qid" in row else fallback
    if qid is None:
        return Query(fallback, error=f"line {entry.line}: qid must be a string or an "
                     f"integer, got {type(row['qid']).__name__}")
    if has_surrogate(qid):
        return Query(fallback, error=f"line {entry.line}: qid is not valid text (a lone "
                     "surrogate: bytes that are not UTF-8?)")
    if qid in seen:
        return Query(qid, error=f"duplicate qid {qid!r} (first on line {seen[qid]}): qids "
                     "must be unique in a batch")
    seen[qid] = entry.line
    stray = misspelled_field(row)
    if stray:  # the contract ignores unknown fields: said, not refused
        log.warning("query %s (line %d): %s", qid, entry.line, stray)
    where = row.get("where")
    if where is not None and (not isinstance(where, str) or not where.strip()):
        return Query(qid, error="where must be a non-empty string: a SQL filter over the "
                     "documents table's columns")
    budgets = {name: row.get(name) for name in ("budget_chars", "budget_tokens")}
    refused = tuple(name for name, value in budgets.items()
                    if value is not None and count_problem(name, value))
    valid = {name: None if name in refused else value for name, value in budgets.items()}
    try:  # a line that fails keeps its valid budget: its output line says which held
        query = check_query_text(row.get("query", ""))
        doc_ids = check_doc_ids(row.get("doc_ids"))
        for name in refused:
            check_count(name, budgets[name])  # raises, worded as the API's
    except QueryError as exc:
        return Query(qid, error=str(exc), refused_budgets=refused, **valid)
    return Query(qid, query, doc_ids, where=where, **valid)


def query_texts(entries: Sequence[Entry | Any]) -> list[str | None]:
    """The question of each entry as its line gave it (None: no text, or text with a lone
    surrogate, which no table can store), in order: `run_queries` answers an entry a
    line, in the same order."""
    out = []
    for e in entries:
        row = e.value if isinstance(e, Entry) else e
        text = row.get("query") if isinstance(row, dict) else None
        out.append(text if isinstance(text, str) and not has_surrogate(text) else None)
    return out


def check_batch(entries: Sequence[Entry | Any]) -> list[Query]:
    """Check every entry (plain values are taken as entries numbered from 1)."""
    seen: dict[str, int] = {}
    return [_check(e if isinstance(e, Entry) else Entry(n, e), seen)
            for n, e in enumerate(entries, start=1)]


#: Units of a search without a budget when k is not given.
DEFAULT_K = 5


def run_queries(
    retriever: Retriever,
    queries: Sequence[Entry | Any],
    *,
    k: int | None = DEFAULT_K,
    mode: Mode = "tree",
    budget_chars: int | None = None,
    budget_tokens: int | None = None,
    selection: str | None = None,
    tokenizer: str | None = None,
    cutoff: Any = DEFAULT,
) -> list[dict[str, Any]]:
    """Run a batch of `{qid, query, doc_ids?, where?, budget_chars?, budget_tokens?}`; an
    entry that cannot run gets `error`. With a budget (the line's, else BUDGET_CHARS /
    BUDGET_TOKENS) a line's results are a context (`Retriever.context`: SELECTION,
    TOKENIZER, CUTOFF (DEFAULT: the context's own; None: fill the budget); K, when not
    None, still bounds its units); without one, the K best units (`DEFAULT_K` when
    None)."""
    from sproutrag.interrupt import crash_point

    out = []
    for q in check_batch(queries):
        chars = q.budget_chars if q.budget_chars is not None else budget_chars
        tokens = q.budget_tokens if q.budget_tokens is not None else budget_tokens
        if q.error is not None:
            out.append(_failed(q.qid, q.error, chars, tokens, q.refused_budgets))
            continue
        try:
            if chars is not None or tokens is not None:
                extra = {} if cutoff is DEFAULT else {"cutoff": cutoff}
                ctx = retriever.context(q.query, budget_chars=chars, budget_tokens=tokens,
                                        k=k, doc_ids=q.doc_ids, where=q.where, mode=mode,
                                        selection=selection, **extra,
                                        tokenizer=tokenizer if tokens is not None else None)
                out.append({"qid": q.qid, **ctx.to_dict()})
            else:
                hits = retriever.search(q.query, k=k if k is not None else DEFAULT_K,
                                        doc_ids=q.doc_ids, mode=mode, where=q.where)
                out.append({"qid": q.qid, "results": [h.to_dict() for h in hits]})
        except SproutragError as exc:  # the query cannot run as given
            out.append(_failed(q.qid, str(exc), chars, tokens))
        except Exception as exc:  # noqa: BLE001 - a bug: its traceback logged, the rest runs
            if _storage_error(exc):  # the database's, not the query's: the caller says
                raise  # which table is damaged (`storage.check.explain_damage`)
            log.exception("query %s: internal error", q.qid)
            out.append(_failed(q.qid, f"{INTERNAL} ({type(exc).__name__}: {exc})", chars,
                               tokens))
        crash_point("query-answered")
    return out


def _failed(qid: str, error: str, chars: int | None, tokens: int | None,
            refused: tuple[str, ...] = ()) -> dict[str, Any]:
    """The output line of a query that could not run: a context's (a budget was given,
    the line's or the run's) carries its budgets, as its answer would have; a budget the
    line gave and got wrong (REFUSED) is null there, not the run's."""
    budgets = {name: value for name, value in (("budget_chars", chars),
                                               ("budget_tokens", tokens)) if value is not None}
    return {"qid": qid, "results": [], **budgets, **dict.fromkeys(refused), "error": error}


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]], *,
                fs: Any = None) -> int:
    """Write ROWS to PATH as JSON lines (UTF-8, non-ASCII characters as they are); returns
    the number of lines. PATH is a local file (its folder created) unless FS, an fsspec
    filesystem (s3://), is given: then PATH is that filesystem's path."""
    if fs is None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    else:
        fh = fs.open(path, "w", encoding="utf-8")
    n = 0
    with fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
