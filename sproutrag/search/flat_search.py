"""Flat mode, the baseline: cosine top-k over the current trees' leaves, no tree, no
words; LanceDB's vector search (`FirstStage.nearest_nodes`) does the ranking."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from sproutrag.search.first_stage import LEAF_FILTER, FirstStage
from sproutrag.search.hits import Hit
from sproutrag.search.stored_documents import StoredDocuments
from sproutrag.search.view import TablesView
from sproutrag.storage.filters import doc_filter, in_filter


class FlatSearch:
    """Flat mode over the rows FIRST reads, the trees DOCUMENTS names and VIEW's
    current trees."""

    def __init__(self, first: FirstStage, documents: StoredDocuments, view: TablesView
                 ) -> None:
        self.first, self.documents, self.view = first, documents, view

    def search(self, qvec: np.ndarray, k: int, doc_ids: Sequence[str] | None,
               allowed: Collection[str] | None = None, threshold: float | None = None,
               again: int = 3) -> list[Hit]:
        """The K leaves nearest QVEC (of DOC_IDS, or among ALLOWED), at least THRESHOLD
        when given. An index run may have replaced the trees this search's view names
        since it read them (their rows gone): then the search runs again on a fresh view,
        up to AGAIN more times (a view can be several batches old on a loaded machine)."""
        where = LEAF_FILTER
        current = self.view.current()
        if doc_ids:
            trees = self.documents.tree_ids(doc_ids)
            if not trees:
                return []
            where += f" AND {doc_filter(trees)} AND {in_filter('tree_id', trees.values())}"
            units = int(current.leaves_of(trees).sum())
        elif allowed is not None:
            units = int(current.leaves_of(allowed).sum())
        else:
            units = current.units  # no more rows to ask LanceDB for
        want = min(k, units)
        rows = self.nearest_leaves(qvec, want, where, allowed) if units else []
        if again and len(rows) < want:  # trees replaced under this view
            self.view.forget()
            return self.search(qvec, k, doc_ids, allowed, threshold, again=again - 1)
        hits = [
            Hit(r["doc_id"], f"{r['doc_id']}:{r['idx']}", 1.0 - float(r["_distance"]),
                [(int(r["start"]), int(r["end"]))], r["text"])
            for r in rows
        ]
        if threshold is not None:
            hits = [h for h in hits if h.score >= threshold]
        return hits

    def nearest_leaves(self, qvec: np.ndarray, k: int, where: str,
                       allowed: Collection[str] | None) -> list[dict[str, Any]]:
        """The K nearest leaves matching WHERE (and of the ALLOWED documents: asked for
        four times as many until K of them are found, or every row was)."""
        if allowed is None:
            return self.first.nearest_nodes(qvec, k, where)
        limit, units = 4 * k, self.view.current().units
        while True:
            rows = [r for r in self.first.nearest_nodes(qvec, limit, where)
                    if r["doc_id"] in allowed]
            if len(rows) >= k or limit >= units:
                return rows[:k]
            limit = min(4 * limit, units)


__all__ = ["FlatSearch"]
