"""What a search returns (`Hit`), what refuses a query (`QueryError`, `check_query_text`),
and how a selected node of a stored tree becomes a hit. (The checks of k and the search
parameters are in `sproutrag.params`.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sproutrag.errors import QueryError  # noqa: F401 - also importable from here
from sproutrag.search.tree_search import Selected
from sproutrag.storage.rows import StoredTree


def check_query_text(query: object) -> str:
    """QUERY when it is text to search for: a string holding something besides whitespace
    and NUL characters, without a lone surrogate (what a byte that is not UTF-8 becomes
    in a command-line argument, or a JSON "\\ud800"); `QueryError` naming the problem
    otherwise."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if not query.replace("\x00", "").strip():
        raise QueryError("query is empty: give a question or statement to search for")
    bad = next((i for i, ch in enumerate(query) if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:
        raise QueryError(f"query is not valid text: a lone surrogate U+{ord(query[bad]):04X} "
                         f"at character {bad} (bytes that are not UTF-8?): give the question "
                         "as UTF-8 text")
    return query


@dataclass(frozen=True)
class Hit:
    doc_id: str
    node_id: str
    score: float
    spans: list[tuple[int, int]]  # the node's evidence units, in document order
    text: str  # their texts joined by newlines

    def to_dict(self) -> dict[str, Any]:
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
