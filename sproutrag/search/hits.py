"""What a search returns (`Hit`), what refuses a query (`QueryError`, `check_query_text`,
`check_doc_ids`, `check_queries`), and how a selected node of a stored tree becomes a hit.
(The checks of k and the search parameters are in `sproutrag.params`.)"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sproutrag.blank import shows_nothing
from sproutrag.errors import QueryError  # noqa: F401 - also importable from here
from sproutrag.search.tree_search import Selected
from sproutrag.storage.rows import StoredTree


def check_query_text(query: object) -> str:
    """QUERY when it is text to search for: a string holding something besides whitespace,
    NUL and zero-width characters (`blank.shows_nothing`), without a lone surrogate (what
    a byte that is not UTF-8 becomes in a command-line argument, or a JSON "\\ud800");
    `QueryError` naming the problem otherwise."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if shows_nothing(query):  # white space, NUL, zero-width characters: as a document
        raise QueryError("query is empty: give a question or statement to search for")
    bad = next((i for i, ch in enumerate(query) if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        raise QueryError(f"query is not valid text: a lone surrogate U+{ord(query[bad]):04X} "
                         f"at character {bad} (bytes that are not UTF-8?): give the question "
                         "as UTF-8 text")
    return query


def text_id(value: Any) -> str | None:
    """A string, or an integer as its decimal string; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return None


def has_surrogate(text: str) -> bool:
    """TEXT holds a lone surrogate (it cannot be written as UTF-8)."""
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def as_list(name: str, value: Any, what: str, *, example: Any = repr) -> list[Any]:
    """VALUE, argument NAME (a list of WHAT), as a list; `QueryError` for a string (it
    would be taken a character at a time: the error shows it in a list, written by
    EXAMPLE), a mapping or a value that is not iterable."""
    if isinstance(value, str | bytes):
        raise QueryError(f"{name} must be a list of {what}, got the string {value!r} "
                         f"(write [{example(value)}])")
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise QueryError(f"{name} must be a list of {what}, got {type(value).__name__}")
    return list(value)


def check_doc_ids(value: Any, name: str = "doc_ids") -> list[str] | None:
    """VALUE (argument NAME) as a list of doc ids: None stays None, integers become their
    decimal strings (as the JSONL corpus stores integer doc_ids). `QueryError` for a
    string (not split into characters), an empty list, anything but a list, tuple or
    other iterable, and an id that is neither a string nor an integer (naming it)."""
    if value is None:
        return None
    value = as_list(name, value, "doc ids", example=lambda v: json.dumps(_as_text(v)))
    if not value:
        raise QueryError(f"{name} is empty: leave it out to search every document")
    ids = [text_id(v) for v in value]
    bad = [i for i, d in enumerate(ids) if d is None]
    if bad:
        raise QueryError(f"{name} must hold strings, got {value[bad[0]]!r} at position "
                         f"{bad[0]}")
    bad = [i for i, d in enumerate(ids) if has_surrogate(d)]
    if bad:
        raise QueryError(f"{name}[{bad[0]}] is not valid text (a lone surrogate: bytes "
                         "that are not UTF-8?)")
    return ids


def check_queries(queries: Any, doc_ids: Any) -> tuple[list[str], list[list[str] | None]]:
    """QUERIES (a list of questions) and DOC_IDS (one list of ids, or None, per question;
    None: none for any), each checked (`check_query_text`, `check_doc_ids`): a
    `QueryError` names the first bad question or list."""
    queries = as_list("queries", queries, "questions")
    for n, query in enumerate(queries):
        try:
            check_query_text(query)
        except QueryError as exc:
            raise QueryError(f"query {n}: {exc}") from None
    scopes = (as_list("doc_ids", doc_ids, "doc-id lists (one per query, or None)")
              if doc_ids is not None else [None] * len(queries))
    if len(scopes) != len(queries):
        raise QueryError(f"doc_ids: {len(scopes)} lists for {len(queries)} queries")
    return queries, [check_doc_ids(ids, f"doc_ids[{n}]") for n, ids in enumerate(scopes)]


def _as_text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@dataclass(frozen=True)
class Hit:
    """One result of `Retriever.search`: a node of DOC_ID's tree (NODE_ID, "doc:index"),
    its SCORE (tree mode's fused score; cosine in flat mode), the character SPANS of its
    evidence units in the document's text and their TEXT."""

    doc_id: str
    node_id: str
    score: float
    spans: list[tuple[int, int]]  # the node's evidence units, in document order
    text: str  # their texts joined by newlines

    def to_dict(self) -> dict[str, Any]:
        """The hit as a JSON-ready dict (a batch output line's result; score rounded to 6
        places)."""
        return {
            "doc_id": self.doc_id, "node_id": self.node_id, "score": round(self.score, 6),
            "spans": [list(s) for s in self.spans], "text": self.text,
        }


def node_text(st: StoredTree, node: int) -> str:
    """The texts of a node's leaves, joined by newlines (what a reranker reads)."""
    return "\n".join(st.texts[i] for i in np.sort(st.tree.leaves_of(node)))


def hit_of(st: StoredTree, sel: Selected) -> Hit:
    """The `Hit` of a selected node: its evidence units' spans and texts."""
    spans = [(int(st.spans[i, 0]), int(st.spans[i, 1])) for i in sel.leaves]
    text = "\n".join(st.texts[i] for i in sel.leaves)
    return Hit(st.doc_id, f"{st.doc_id}:{sel.node}", sel.score, spans, text)
