"""LanceDB storage of documents, tree nodes and runs.

A batch of documents is written with one `merge_insert` on `nodes` (insert new rows,
update changed ones and delete the documents' old rows in the same commit), then one on
`documents`. Each commit is atomic, so a reader sees each document's tree either wholly
old or wholly new; a run killed between the two commits leaves a `documents` row with
the old hash, and the next run redoes that document.
"""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from schemas import tables
from sproutrag.corpus import SourceDocument
from sproutrag.tree import Tree, validate_tree

ANN_MIN_ROWS = 100_000  # nodes; below this an exhaustive vector scan is fast and exact


class StaleIndexError(ValueError):
    """The database was built with another encoder or schema version."""


class DatabaseNotFoundError(FileNotFoundError):
    """No SproutRAG database at the given location."""


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


def _crash_point(name: str) -> None:
    """Test hook: SPROUTRAG_CRASH_AT=<name> kills the process here (crash-safety tests)."""
    if os.environ.get("SPROUTRAG_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def sql_quote(value: str) -> str:
    """A SQL string literal: single quotes doubled, so user input cannot end the literal."""
    if "\x00" in value:
        raise ValueError(f"doc_id {value!r} contains a NUL character")
    return "'" + value.replace("'", "''") + "'"


def doc_filter(doc_ids: Iterable[str]) -> str:
    return "doc_id IN (" + ", ".join(sql_quote(d) for d in doc_ids) + ")"


def node_rows(item: IndexedDocument) -> pa.Table:
    """The `nodes` rows of one document (validated before writing)."""
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
        "idx": idx,
        "parent": tree.parent, "left": tree.left, "right": tree.right,
        "height": tree.height, "n_leaves": tree.n_leaves,
        "leaf_start": tree.leaf_start, "leaf_end": tree.leaf_end,
        "merge_sim": merge_sim, "start": starts, "end": ends, "text": leaf_text,
        "vector": vectors,
    }
    return pa.table(columns, schema=tables.nodes_schema(dim))


def document_rows(items: Sequence[IndexedDocument], fingerprint: str) -> pa.Table:
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
        },
        schema=tables.DOCUMENTS,
    )


class Store:
    """The SproutRAG tables in one LanceDB database (a folder or an s3:// URI)."""

    def __init__(
        self, uri: str, *, encoder_id: str, dim: int,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        import lancedb

        self.uri, self.encoder_id, self.dim = str(uri), encoder_id, dim
        self._db = lancedb.connect(self.uri, storage_options=storage_options)
        self._schemas = {
            "documents": tables.DOCUMENTS,
            "nodes": tables.nodes_schema(dim),
            "runs": tables.RUNS,
        }

    @classmethod
    def open_existing(cls, uri: str, **kwargs: Any) -> Store:
        """Open a database that must already hold SproutRAG tables; reads encoder and dim."""
        import lancedb

        db = lancedb.connect(str(uri), storage_options=kwargs.get("storage_options"))
        if "nodes" not in db.list_tables().tables:
            raise DatabaseNotFoundError(
                f"no SproutRAG database at {uri!r} (no 'nodes' table): "
                "run `sproutrag index CORPUS --db DB` first"
            )
        meta = db.open_table("nodes").schema.metadata or {}
        encoder = meta.get(b"sproutrag.encoder", b"?").decode()
        dim = int(meta.get(b"sproutrag.dim", b"0"))
        return cls(uri, encoder_id=encoder, dim=dim, **kwargs)

    def table(self, name: str, *, create: bool = False):
        if name in self._db.list_tables().tables:
            tbl = self._db.open_table(name)
            self._check(name, tbl.schema)
            return tbl
        if not create:
            return None
        schema = tables.with_metadata(
            self._schemas[name], encoder_id=self.encoder_id, dim=self.dim
        )
        return self._db.create_table(name, schema=schema)

    def _check(self, name: str, schema: pa.Schema) -> None:
        meta = schema.metadata or {}
        found = {
            "schema_version": meta.get(b"sproutrag.schema_version", b"?").decode(),
            "encoder": meta.get(b"sproutrag.encoder", b"?").decode(),
            "dim": meta.get(b"sproutrag.dim", b"?").decode(),
        }
        wanted = {
            "schema_version": tables.SCHEMA_VERSION,
            "encoder": self.encoder_id,
            "dim": str(self.dim),
        }
        if found != wanted:
            raise StaleIndexError(
                f"table {name!r} in {self.uri!r} was built with {found}, this run uses "
                f"{wanted}: index into a new database, or re-index with the same encoder"
            )

    def indexed(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, index_fingerprint) of every stored document."""
        tbl = self.table("documents")
        if tbl is None:
            return {}
        cols = ["doc_id", "content_hash", "index_fingerprint"]
        rows = tbl.search().select(cols).limit(None).to_arrow().to_pydict()
        return {
            d: (h, f)
            for d, h, f in zip(rows["doc_id"], rows["content_hash"], rows["index_fingerprint"])
        }

    def write(self, items: Sequence[IndexedDocument], fingerprint: str) -> int:
        """Store a batch of documents atomically per table; returns the number of nodes."""
        if not items:
            return 0
        nodes = pa.concat_tables([node_rows(i) for i in items])
        ids = [i.doc.doc_id for i in items]
        (
            self.table("nodes", create=True).merge_insert("node_id")
            .when_matched_update_all().when_not_matched_insert_all()
            .when_not_matched_by_source_delete(doc_filter(ids))
            .execute(nodes)
        )
        _crash_point("nodes-written")
        (
            self.table("documents", create=True).merge_insert("doc_id")
            .when_matched_update_all().when_not_matched_insert_all()
            .execute(document_rows(items, fingerprint))
        )
        return nodes.num_rows

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Remove documents: their nodes first, then their `documents` rows.

        A crash in between leaves a `documents` row without nodes, which the next run
        deletes again (the document is no longer in the corpus).
        """
        for k in range(0, len(doc_ids), 500):
            part = doc_ids[k : k + 500]
            for name in ("nodes", "documents"):
                tbl = self.table(name)
                if tbl is not None:
                    tbl.delete(doc_filter(part))

    def orphans(self) -> list[str]:
        """doc_ids that have nodes but no `documents` row (left by an interrupted run)."""
        nodes, docs = self.table("nodes"), self.table("documents")
        if nodes is None:
            return []
        have = set(self.indexed()) if docs is not None else set()
        ids = nodes.search().select(["doc_id"]).limit(None).to_arrow().column("doc_id")
        import pyarrow.compute as pc

        return sorted(set(pc.unique(ids).to_pylist()) - have)

    def ensure_vector_index(self, *, min_rows: int = ANN_MIN_ROWS) -> bool:
        """Create a cosine IVF_SQ index on `nodes.vector` once the table is large enough.

        Below `min_rows` an exhaustive scan is fast (and exact); above it the index keeps
        the first stage of a query in milliseconds. New rows are still searched before
        `optimize()` folds them in. Returns whether an index exists now.
        """
        tbl = self.table("nodes")
        if tbl is None:
            return False
        if any(i.columns == ["vector"] for i in tbl.list_indices()):
            return True
        if tbl.count_rows() < min_rows:
            return False
        from lancedb.index import IvfSq

        tbl.create_index("vector", config=IvfSq(distance_type="cosine"))
        tbl.create_scalar_index("doc_id", replace=True)
        return True

    def maintain(self, *, keep_versions_days: float) -> dict[str, int]:
        """Compact files, update indexes, drop versions older than the retention period."""
        from datetime import timedelta

        self.ensure_vector_index()
        removed = {}
        for name in ("documents", "nodes", "runs"):
            tbl = self.table(name)
            if tbl is None:
                continue
            before = len(tbl.list_versions())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # retention 0 is allowed
                tbl.optimize(cleanup_older_than=timedelta(days=keep_versions_days))
            removed[name] = before - len(tbl.list_versions())
        return removed

    def add_run(self, row: dict[str, Any]) -> None:
        self.table("runs", create=True).add(pa.Table.from_pylist([row], schema=tables.RUNS))

    def load_tree(self, doc_id: str) -> StoredTree:
        """Read one document's tree back into arrays (validated)."""
        tbl = self.table("nodes")
        rows = (
            tbl.search().where(f"doc_id = {sql_quote(doc_id)}").limit(None).to_arrow()
            if tbl is not None else None
        )
        if rows is None or rows.num_rows == 0:
            raise KeyError(f"doc_id {doc_id!r} is not in the database {self.uri!r}")
        rows = rows.sort_by("idx")
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
