"""LanceDB's full-text index of `nodes` as the first stage reads it: the best rows for a
question's words (`text_query`; `TextSearch` when a thread runs it), the documents whose
leaves write a name (`documents_writing`), and the warning, once a process, that the
index is missing or cannot be read (the first stage then ranks by vectors alone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from sproutrag.errors import short_error

#: The full-text hits `documents_writing` reads to tell which documents write a name.
WRITING_HITS = 64
#: The rows past its limit `best_rows` reads first, and how many times its limit it
#: reads at most, to take a tie at the cut whole.
TIE_SLACK, TIE_ROWS = 16, 16

log = logging.getLogger(__name__)
_warned: set[str] = set()


def warn_once(key: str, message: str, logger: logging.Logger = log) -> None:
    """Log MESSAGE as a warning (by LOGGER) the first time KEY is warned about in this
    process."""
    if key not in _warned:
        _warned.add(key)
        logger.warning("%s", message)


def index_damaged(exc: BaseException) -> bool:
    """Is EXC a read of an index's files that failed (a lost or damaged index)?"""
    text = str(exc)
    return "_indices" in text or ("lance" in text.lower() and "index" in text.lower())


def warn_text_index_unreadable(exc: BaseException) -> None:
    """Warn once that the full-text index of `nodes` cannot be read (EXC: its files)."""
    warn_once("text", f"the full-text index of nodes cannot be read ({short_error(exc)}): "
              "corpus-wide queries rank documents by their vectors alone until an index run "
              "builds it again")


class TextSearch(NamedTuple):
    """A full-text search of `nodes` split where threads may split it: RUN, LanceDB's
    query (any thread), and FINISH, reading its rows' documents (the searching thread:
    the current trees of its view)."""

    run: Callable[[], Any]
    finish: Callable[[Any], list[str]]


def text_ranking(search: TextSearch, found: Callable[[], Any]) -> list[str]:
    """SEARCH's documents from FOUND() (its rows: `search.run` here or a thread's
    result); [] (warned once) when the full-text index cannot be read."""
    try:
        rows = found()
    except (RuntimeError, OSError, ValueError) as exc:
        if not index_damaged(exc):
            raise
        warn_text_index_unreadable(exc)
        return []
    return search.finish(rows)


def text_query(nodes: Any, query: Any, columns: list[str], limit: int) -> Any:
    """The LIMIT best rows of `nodes` for QUERY (text, or a LanceDB full-text query such as
    `MatchQuery`) by its full-text index, best first
    (`best_rows`: rows tied at the cut taken by row id): COLUMNS, their scores and row
    ids, or the scores and row ids alone (a search that reads no row: 5.8 -> 2.5 ms a
    question at 60k rows, 9.0 -> 4.2 ms at 1.2M, `bench/query.py --throughput`).
    (Lance's own Python search is not used: it analyses the query's words otherwise
    than the index LanceDB built: "University" finds 4 leaves there, 38 here.)"""
    return best_rows(lambda rows: nodes.search(query, query_type="fts").limit(rows)
                     .with_row_id(True).select([*columns, "_score"]).to_arrow(), limit)


def best_rows(search: Callable[[int], Any], limit: int) -> Any:
    """The LIMIT best rows of a full-text SEARCH (called with a number of rows; its
    table has `_score` and `_rowid`), best first and the same in every process: rows of
    equal score are ranked by row id. LanceDB cuts a tie at its limit wherever its
    scan of a table of several fragments met the rows (templated texts tie by the
    dozen: 41 of a question's 80 best leaves had one score, and two processes got two
    sets). So `TIE_SLACK` rows more than LIMIT are asked for, and twice as many
    while the last row still ties the LIMIT-th (up to `TIE_ROWS` times LIMIT: past that
    the tie is cut among those)."""
    rows = limit + TIE_SLACK
    while True:
        found = search(rows)
        scores = found["_score"].to_numpy(zero_copy_only=False)
        if (len(found) < rows or len(found) <= limit or rows >= TIE_ROWS * limit
                or scores.min() < np.sort(scores)[-limit]):  # below the LIMIT-th best
            break
        rows = min(2 * rows, TIE_ROWS * limit)
    return found.sort_by([("_score", "descending"), ("_rowid", "ascending")]).slice(0, limit)


def documents_writing(nodes: Any, entity: str, rows: int, current: Any) -> list[str]:
    """The documents of CURRENT (`Current`: the current trees) whose leaves in NODES write
    ENTITY (words joined by one space, as `sproutrag.names.mention_words` normalises a
    text: accents folded on both sides) as whole words, among the ROWS best leaves of the
    full-text index that hold every word of it, as the question spells it or without its
    accents (the index stems before it folds: "Nestle" finds no leaf that writes
    "Nestlé"); [] (warned once) when the index cannot be read."""
    import pyarrow as pa
    from lancedb.query import FullTextOperator, MatchQuery

    from sproutrag.names import folded, mention_words

    try:
        found = pa.concat_tables([
            text_query(nodes, MatchQuery(spelt, "text", operator=FullTextOperator.AND),
                       ["doc_id", "tree_id", "text"], rows)
            for spelt in dict.fromkeys((entity, folded(entity)))])
    except (RuntimeError, OSError, ValueError) as exc:
        if not index_damaged(exc):
            raise
        warn_text_index_unreadable(exc)
        return []
    docs, phrase = found["doc_id"].to_pylist(), f" {folded(entity)} "
    now = current.is_current(docs, found["tree_id"].to_pylist())
    return list(dict.fromkeys(
        d for d, text, ok in zip(docs, found["text"].to_pylist(), now.tolist(), strict=True)
        if ok and text and phrase in mention_words(text)))


__all__ = ["WRITING_HITS", "TextSearch", "documents_writing", "index_damaged", "text_query",
           "text_ranking", "warn_once", "warn_text_index_unreadable"]
