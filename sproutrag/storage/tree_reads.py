"""Reading stored documents back: the texts and the trees of given (doc_id, tree id)s.

A reader names the tree it wants with each document (what `documents.tree_id` said when
its view was taken), so a document replaced meanwhile is missing from the answer rather
than read half old, half new. `Store.document_texts` and `Store.load_trees` call these
on the store's table handles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sproutrag.errors import InvalidTreeError
from sproutrag.storage.filters import doc_filter, in_filter, parts
from sproutrag.storage.rows import StoredTree, stored_tree

#: Trees `load_trees` reads in one query (a search reads 8-20 new documents' trees at
#: once; a long document's tree is 1-6 MB of rows).
TREE_READ_DOCS = 64


def _where(trees: Mapping[str, str], ids: list[str]) -> str:
    """The filter of the rows of IDS' trees named by TREES (doc_id -> tree id)."""
    return f"{doc_filter(ids)} AND {in_filter('tree_id', [trees[d] for d in ids])}"


def document_texts(docs: Any, trees: Mapping[str, str]) -> dict[str, tuple[str, str | None]]:
    """doc_id -> (text, title) of the documents of TREES (doc_id -> tree id) whose
    current tree is that one, from the `documents` table DOCS (None: absent), in one read
    per 500 documents (a few ms for eight, against a few ms each one by one); a document
    replaced meanwhile is missing. The title is None when not set, or when the table
    predates the column (a schema 4 table written before `title` was added to it)."""
    out: dict[str, tuple[str, str | None]] = {}
    if docs is None or not trees:
        return out
    columns = [c for c in ("doc_id", "tree_id", "text", "title") if c in docs.schema.names]
    for ids in parts(list(trees)):
        for row in docs.search().where(_where(trees, ids)).select(columns).limit(None).to_list():
            if trees.get(row["doc_id"]) == row["tree_id"]:
                out[row["doc_id"]] = (row["text"], row.get("title"))
    return out


def load_trees(nodes: Any, trees: Mapping[str, str]) -> dict[str, StoredTree]:
    """doc_id -> the tree of TREES (doc_id -> tree id), validated, from the `nodes` table
    NODES (None: absent), in one read per `TREE_READ_DOCS` documents (a search's first
    reads of new documents: one query, not one a document; the part bounds the rows held
    twice, as Arrow and as trees); a tree no longer stored (replaced and removed
    meanwhile) is missing."""
    out: dict[str, StoredTree] = {}
    if nodes is None or not trees:
        return out
    for ids in parts(list(trees), TREE_READ_DOCS):
        rows = nodes.search().where(_where(trees, ids)).limit(None).to_arrow()
        rows = rows.sort_by([("doc_id", "ascending"), ("tree_id", "ascending"),
                             ("idx", "ascending")])
        keys = list(zip(rows.column("doc_id").to_pylist(), rows.column("tree_id").to_pylist(),
                        strict=True))
        start = 0
        for end in range(1, len(keys) + 1):
            if end < len(keys) and keys[end] == keys[start]:
                continue
            d, t = keys[start]
            if trees.get(d) == t:  # not another document's tree of the same id
                try:
                    out[d] = stored_tree(d, rows.slice(start, end - start))
                except InvalidTreeError as exc:  # the caller names the database
                    exc.doc_id = d
                    raise
            start = end
    return out
