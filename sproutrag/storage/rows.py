"""Arrow rows of the tables: a document's tree and text as `nodes` and `documents` rows,
a query run's output as `results` rows, and a stored tree read back into arrays."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from sproutrag.doc_keys import doc_key
from sproutrag.documents import SourceDocument
from sproutrag.names import document_name, name_key
from sproutrag.schemas import tables
from sproutrag.trees.tree import Tree, validate_tree


@dataclass(frozen=True)
class IndexedDocument:
    """One document ready to store: its text, chunk spans and tree."""

    doc: SourceDocument
    spans: np.ndarray  # int64 (n, 2): char spans of the leaves 0..n-1
    tree: Tree


@dataclass(frozen=True)
class StoredTree:
    doc_id: str
    tree: Tree
    spans: np.ndarray  # (n, 2) leaf char spans
    texts: list[str]  # leaf texts


def new_tree_id() -> str:
    """A fresh id for every stored tree: a rewrite never reuses the current tree's id."""
    return uuid.uuid4().hex[:16]


def node_rows(item: IndexedDocument, tree_id: str) -> pa.Table:
    """The `nodes` rows of one document's tree (validated before writing)."""
    tree, doc_id, text = item.tree, item.doc.doc_id, item.doc.text
    validate_tree(tree, name=f"tree of {doc_id!r}")
    n, total = tree.n, 2 * tree.n - 1
    if len(item.spans) != n:
        raise ValueError(f"{doc_id!r}: {len(item.spans)} spans for a tree of {n} leaves")
    idx = np.arange(total, dtype=np.int32)
    starts = [int(s) for s in item.spans[:, 0]] + [None] * (n - 1)
    ends = [int(e) for e in item.spans[:, 1]] + [None] * (n - 1)
    leaf_text = [text[s:e] for s, e in item.spans.tolist()] + [None] * (n - 1)
    merge_sim = [None if np.isnan(v) else float(v) for v in tree.merge_sim]
    dim = tree.vectors.shape[1]
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array(np.ascontiguousarray(tree.vectors, dtype=np.float32).ravel()), dim
    )
    columns: dict[str, Any] = {
        "node_id": [f"{doc_id}:{i}" for i in range(total)],
        "doc_id": [doc_id] * total,
        "tree_id": [tree_id] * total,
        "idx": idx,
        "parent": tree.parent, "left": tree.left, "right": tree.right,
        "height": tree.height, "n_leaves": tree.n_leaves,
        "leaf_start": tree.leaf_start, "leaf_end": tree.leaf_end,
        "merge_sim": merge_sim, "start": starts, "end": ends, "text": leaf_text,
        "vector": vectors,
    }
    return pa.table(columns, schema=tables.nodes_schema(dim))


def document_rows(
    items: Sequence[IndexedDocument], fingerprint: str, tree_ids: dict[str, str]
) -> pa.Table:
    now = datetime.now(UTC)
    return pa.table(
        {
            "doc_id": [i.doc.doc_id for i in items],
            "source": [i.doc.source for i in items],
            "content_hash": [i.doc.content_hash for i in items],
            "text": [i.doc.text for i in items],
            "n_chars": [len(i.doc.text) for i in items],
            "n_chunks": [i.tree.n for i in items],
            "index_fingerprint": [fingerprint] * len(items),
            "indexed_at": [now] * len(items),
            "tree_id": [tree_ids[i.doc.doc_id] for i in items],
            "source_size": [i.doc.size for i in items],
            "modified_at": [i.doc.modified_at for i in items],
            "source_etag": [i.doc.etag for i in items],
            "title": [i.doc.title for i in items],
            "metadata_json": [i.doc.metadata for i in items],
            "metadata_hash": [i.doc.metadata_hash for i in items],
            **name_columns([i.doc for i in items]),
            "doc_key": [doc_key(i.doc.doc_id) for i in items],
        },
        schema=tables.DOCUMENTS,
    )


def name_columns(docs: Sequence[SourceDocument]) -> dict[str, list]:
    """`documents.name` and `name_key` of DOCS (`sproutrag.names`: the title, else the
    text's first line when heading-like)."""
    names = [document_name(d.text, d.title) for d in docs]
    return {"name": names, "name_key": [name_key(n) for n in names]}


def source_rows(docs: Sequence[SourceDocument]) -> pa.Table:
    """The listing columns of DOCS (`Store.update_sources`), and their names (a title
    may have changed; DOCS' texts may be only their first lines)."""
    return pa.table({
        "doc_id": [d.doc_id for d in docs], "source": [d.source for d in docs],
        "source_size": [d.size for d in docs], "modified_at": [d.modified_at for d in docs],
        "source_etag": [d.etag for d in docs], "title": [d.title for d in docs],
        "metadata_json": [d.metadata for d in docs],
        "metadata_hash": [d.metadata_hash for d in docs],
        **name_columns(docs),
    }, schema=tables.sources_schema())


def result_rows(rows: list[dict[str, Any]], *, run_id: str, k: int, mode: str,
                flow_run_id: str | None = None) -> pa.Table:
    now, out = datetime.now(UTC), []
    base = {"run_id": run_id, "mode": mode, "k": k, "created_at": now,
            "flow_run_id": flow_run_id}
    for row in rows:
        if "error" in row:
            out.append({**base, "qid": row["qid"], "rank": 0, "error": row["error"]})
        for rank, hit in enumerate(row["results"], start=1):
            out.append({**base, "qid": row["qid"], "rank": rank, **hit})
    return pa.Table.from_pylist(out, schema=tables.RESULTS)


def stored_tree(doc_id: str, rows: pa.Table) -> StoredTree:
    """One tree's `nodes` rows (sorted by idx) as arrays, validated."""
    n = (rows.num_rows + 1) // 2
    col = {name: rows.column(name).to_numpy(zero_copy_only=False) for name in (
        "left", "right", "parent", "height", "n_leaves", "leaf_start", "leaf_end")}
    merge_sim = rows.column("merge_sim").to_numpy(zero_copy_only=False).astype(np.float32)
    vectors = (
        rows.column("vector").combine_chunks().flatten().to_numpy()
        .reshape(rows.num_rows, -1).astype(np.float32)
    )
    tree = Tree.from_columns(**col, merge_sim=merge_sim, vectors=vectors)
    validate_tree(tree, name=f"stored tree of {doc_id!r}")
    spans = np.stack(
        [rows.column("start").to_numpy(zero_copy_only=False)[:n],
         rows.column("end").to_numpy(zero_copy_only=False)[:n]], axis=1
    ).astype(np.int64)
    texts = rows.column("text").to_pylist()[:n]
    return StoredTree(doc_id, tree, spans, texts)
