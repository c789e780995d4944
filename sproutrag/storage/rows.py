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
import pyarrow.compute as pc

from sproutrag.doc_keys import doc_key
from sproutrag.documents import SourceDocument
from sproutrag.names import document_name, name_key
from sproutrag.schemas import tables
from sproutrag.trees.many import validate_trees
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
    return nodes_rows([item], {item.doc.doc_id: tree_id})


def nodes_rows(items: Sequence[IndexedDocument], tree_ids: dict[str, str]) -> pa.Table:
    """The `nodes` rows of every document's tree, in the order of ITEMS (each tree
    validated before writing, all at once: `validate_trees`); TREE_IDS: doc_id -> the
    tree's id. Columns are built for the whole batch (per document, building a table was
    most of an index run's writer time on small documents)."""
    if not items:
        raise ValueError("nodes_rows needs at least one document")
    trees = [i.tree for i in items]
    validate_trees(trees, [f"tree of {i.doc.doc_id!r}" for i in items])
    for i in items:
        if len(i.spans) != i.tree.n:
            raise ValueError(f"{i.doc.doc_id!r}: {len(i.spans)} spans for a tree of "
                             f"{i.tree.n} leaves")
    dims = {t.vectors.shape[1] for t in trees}
    if len(dims) != 1:
        raise ValueError(f"the trees of one batch have vectors of {sorted(dims)} dimensions")
    dim = dims.pop()
    n = np.fromiter((t.n for t in trees), dtype=np.int64, count=len(trees))
    totals = 2 * n - 1
    which = np.repeat(np.arange(len(items)), totals)
    idx = (np.arange(len(which)) - np.repeat(np.cumsum(totals) - totals, totals)).astype(
        np.int32)
    leaf = idx < n[which]
    doc_ids = pa.array([i.doc.doc_id for i in items], pa.string()).take(which)
    spans = np.zeros((len(which), 2), dtype=np.int64)
    spans[leaf] = np.concatenate([np.asarray(i.spans, dtype=np.int64).reshape(-1, 2)
                                  for i in items])
    texts: list[str | None] = []
    for i in items:
        texts += [i.doc.text[a:b] for a, b in i.spans.tolist()]
        texts += [None] * (i.tree.n - 1)
    merge_sim = np.concatenate([t.merge_sim for t in trees])
    vectors = np.concatenate([np.ascontiguousarray(t.vectors, dtype=np.float32) for t in trees])

    def flat(col: str) -> np.ndarray:
        return np.concatenate([getattr(t, col) for t in trees])

    columns: dict[str, Any] = {
        "node_id": pc.binary_join_element_wise(doc_ids, pa.array(idx).cast(pa.string()), ":"),
        "doc_id": doc_ids,
        "tree_id": pa.array([tree_ids[i.doc.doc_id] for i in items], pa.string()).take(which),
        "idx": idx,
        **{c: flat(c) for c in ("parent", "left", "right", "height", "n_leaves",
                                "leaf_start", "leaf_end")},
        "merge_sim": pa.array(merge_sim, mask=np.isnan(merge_sim)),
        "start": pa.array(spans[:, 0], mask=~leaf), "end": pa.array(spans[:, 1], mask=~leaf),
        "text": pa.array(texts, pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
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
            "metadata": [i.doc.metadata for i in items],
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
        "metadata": [d.metadata for d in docs],
    }, schema=tables.sources_schema())


def result_rows(rows: list[dict[str, Any]], *, run_id: str, k: int | None, mode: str,
                default_k: int = 5, flow_run_id: str | None = None,
                queries: Sequence[str | None] | None = None) -> pa.Table:
    """The `results` rows of a query run's output lines (`run_queries`): a row per hit,
    and one row of rank 0 for a line with no hit (its `error`, or none: nothing fitted or
    matched), so every query of the run has a row. A context's line (it has
    `used_chars` or a budget: a failed one has no totals) gives its rows the budget, the
    totals, each span's `node_ids` and `cut` and K as given; a top-k line K, or
    DEFAULT_K when K is None. QUERIES: each line's question, by position
    (`batch.query_texts`)."""
    now, out = datetime.now(UTC), []
    base = {"run_id": run_id, "mode": mode, "created_at": now, "flow_run_id": flow_run_id}
    texts = queries if queries is not None else [None] * len(rows)
    for row, text in zip(rows, texts, strict=True):
        context = not {"used_chars", "budget_chars", "budget_tokens"}.isdisjoint(row)
        line = {**base, "qid": row["qid"], "query": text,
                "k": k if k is not None or context else default_k}
        if context:
            line |= {name: row.get(name) for name in (
                "budget_chars", "budget_tokens", "used_chars", "used_tokens")}
        if "error" in row or not row["results"]:
            out.append({**line, "rank": 0, "error": row.get("error")})
        for rank, hit in enumerate(row["results"], start=1):
            extra = {"node_ids": hit.get("node_ids"), "cut": bool(hit.get("cut"))} \
                if context else {"node_ids": None, "cut": None}
            out.append({**line, "rank": rank, **hit, **extra})
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
