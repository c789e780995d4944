"""What a search returns (`Hit`), what refuses a query (`QueryError`), and how a
selected node of a stored tree becomes a hit. (The checks of k and the search
parameters are in `sproutrag.params`.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sproutrag.errors import QueryError  # noqa: F401 - also importable from here
from sproutrag.search.tree_search import Selected
from sproutrag.storage.rows import StoredTree


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
