"""LanceDB storage of documents, tree nodes and runs.

LanceDB commits one table at a time, so a document's version is chosen by its
`documents` row alone: `documents.tree_id` names the `nodes` rows of its current tree,
and readers join nodes to documents on (doc_id, tree_id). A batch is stored in three
commits, each atomic:

1. append the batch's new trees to `nodes` under fresh tree ids (no reader sees them:
   no documents row names them yet);
2. one `merge_insert` on `documents` switches each row to its new text and tree: before
   it a reader sees the old version whole, after it the new one;
3. delete the batch's old trees from `nodes`.

Deleting documents removes their `documents` rows first, then their nodes. A run killed
between commits leaves only nodes that no documents row names: invisible to readers, and
removed by `collect_garbage` at the start of the next run.

The Arrow rows of the tables are built and read back in `sproutrag.storage.rows`; filters on
user input (doc ids) are built in `sproutrag.storage.filters`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from schemas import tables
from sproutrag.errors import DatabaseNotFoundError, OldSchemaError, StaleIndexError  # noqa: F401 - also importable from here
from sproutrag.interrupt import crash_point
from sproutrag.storage.filters import doc_filter, in_filter, parts, sql_quote
from sproutrag.storage.rows import (
    IndexedDocument,
    StoredTree,
    document_rows,
    new_tree_id,
    node_rows,
    stored_tree,
)

ANN_MIN_ROWS = 100_000  # nodes; below this an exhaustive vector scan is fast and exact


#: The analyzer of the full-text index over `nodes.text` (the first stage's lexical
#: half): LanceDB's English analyzer with its defaults spelled out, so a LanceDB release
#: that changed a default would not change an existing database's answers silently.
TEXT_ANALYZER = {"base_tokenizer": "simple", "language": "English", "lower_case": True,
                 "stem": True, "remove_stop_words": True, "ascii_folding": True,
                 "max_token_length": 40, "with_position": False}


#: What the index run records of that index in `index_settings.text_index_json`, so a
#: downstream job can build or query the same index from the tables alone.
TEXT_INDEX = {"column": "text", "index_type": "FTS", "rows": "leaves (left = -1)",
              "analyzer": TEXT_ANALYZER}


def text_analyzer_matches(details: dict[str, Any] | None,
                          analyzer: dict[str, Any] | None = None) -> bool:
    """Do an FTS index's details (`IndexConfig.index_details`) name ANALYZER (default
    `TEXT_ANALYZER`)?"""
    wanted = TEXT_ANALYZER if analyzer is None else analyzer
    return all((details or {}).get(k) == v for k, v in wanted.items())


class Store:
    """The SproutRAG tables in one LanceDB database (a folder or an s3:// URI)."""

    def __init__(
        self, uri: str, *, encoder_id: str, dim: int,
        storage_options: dict[str, str] | None = None, connection: Any = None,
    ) -> None:
        """CONNECTION: an open LanceDB connection to URI (None: connect here)."""
        import lancedb

        self.uri, self.encoder_id, self.dim = str(uri), encoder_id, dim
        self._db = connection if connection is not None else lancedb.connect(
            self.uri, storage_options=storage_options)
        self._tables: dict[str, Any] = {}  # name -> open handle (see `table`)
        self._schemas = {
            "documents": tables.DOCUMENTS,
            "nodes": tables.nodes_schema(dim),
            "runs": tables.RUNS,
            "results": tables.RESULTS,
            "index_settings": tables.INDEX_SETTINGS,
        }

    @classmethod
    def open_existing(cls, uri: str, **kwargs: Any) -> Store:
        """Open a database that must already hold SproutRAG tables; reads encoder and dim.

        A database of an older schema version is refused with the command that
        migrates it (`OldSchemaError`).
        """
        import lancedb

        local = "://" not in str(uri)
        if local and not os.path.exists(os.path.expanduser(uri)):  # connect() would create it
            raise DatabaseNotFoundError(
                f"database {uri} does not exist; run `sproutrag index CORPUS --db {uri}` first"
            )
        db = lancedb.connect(str(uri), storage_options=kwargs.get("storage_options"))
        try:
            nodes = db.open_table("nodes")
        except ValueError as exc:
            if "was not found" not in str(exc):
                raise
            raise DatabaseNotFoundError(
                f"no SproutRAG database at {uri!r} (no 'nodes' table): "
                "run `sproutrag index CORPUS --db DB` first"
            ) from None
        meta = nodes.schema.metadata or {}
        encoder = meta.get(b"sproutrag.encoder", b"?").decode()
        dim = int(meta.get(b"sproutrag.dim", b"0"))
        store = cls(uri, encoder_id=encoder, dim=dim, connection=db, **kwargs)  # one connection
        store._check("nodes", nodes.schema)
        store._tables["nodes"] = nodes
        store.table("documents")  # checks the schema version
        return store

    def table(self, name: str, *, create: bool = False):
        """The table NAME (None when absent, unless CREATE), opened once per `Store`.

        The handle is cached: it stays at the version it was opened (or last written
        through this `Store`) at until `refresh()`, so a reader sees one version per
        refresh and a call costs no round trip to the storage. A table that is absent is
        looked up again on every call.
        """
        tbl = self._tables.get(name)
        if tbl is not None:
            return tbl
        try:
            tbl = self._db.open_table(name)
        except ValueError as exc:
            if "was not found" not in str(exc):  # not "absent": a damaged table
                raise
            if not create:
                return None
            schema = tables.with_metadata(
                self._schemas[name], encoder_id=self.encoder_id, dim=self.dim
            )
            tbl = self._db.create_table(name, schema=schema)
        else:
            self._check(name, tbl.schema)
        self._tables[name] = tbl
        return tbl

    def refresh(self, names: Iterable[str] | None = None) -> None:
        """Move the cached handles of NAMES (default: all) to their tables' latest versions,
        whatever process wrote them: one version check per table, in the order given (a
        reader refreshes `documents` before `nodes`, so `nodes` is never older than the
        trees `documents` names). A table dropped or moved aside since is forgotten (the
        next `table()` call looks it up); one whose schema changed is checked again."""
        for name in list(self._tables) if names is None else names:
            tbl = self._tables.get(name)
            if tbl is None:
                continue
            before = tbl.version
            try:
                tbl.checkout_latest()
                after = tbl.version
            except (OSError, ValueError, RuntimeError):  # the table is gone
                del self._tables[name]
                continue
            if after != before:
                try:
                    self._check(name, tbl.schema)
                except ValueError:
                    del self._tables[name]
                    raise

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
        if found == wanted:
            return
        same_encoder = (found["encoder"], found["dim"]) == (wanted["encoder"], wanted["dim"])
        if same_encoder and found["schema_version"] in tables.MIGRATABLE_VERSIONS:
            raise OldSchemaError(
                f"table {name!r} in {self.uri!r} has schema version "
                f"{found['schema_version']}; this SproutRAG reads version "
                f"{tables.SCHEMA_VERSION}: run `sproutrag index CORPUS --db {self.uri}` once "
                "to migrate the database in place (that run re-indexes every document)"
            )
        raise StaleIndexError(
            f"table {name!r} in {self.uri!r} was built with {found}, this run uses "
            f"{wanted}: index into a new database, or re-index with the same encoder"
        )

    def indexed(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, index_fingerprint) of every stored document."""
        rows = self._document_columns(["doc_id", "content_hash", "index_fingerprint"])
        return {
            d: (h, f)
            for d, h, f in zip(rows["doc_id"], rows["content_hash"], rows["index_fingerprint"])
        }

    def current_trees(self) -> dict[str, tuple[str, int]]:
        """doc_id -> (tree_id, n_chunks) of every document's current tree."""
        rows = self._document_columns(["doc_id", "tree_id", "n_chunks"])
        return {d: (t, n) for d, t, n in zip(rows["doc_id"], rows["tree_id"], rows["n_chunks"])}

    def _document_columns(self, cols: list[str]) -> dict[str, list]:
        """These columns of every `documents` row (empty lists without the table)."""
        tbl = self.table("documents")
        if tbl is None:
            return {c: [] for c in cols}
        return tbl.search().select(cols).limit(None).to_arrow().to_pydict()

    def write(self, items: Sequence[IndexedDocument], fingerprint: str) -> int:
        """Store a batch of documents (new trees, switch, old trees out); returns nodes."""
        if not items:
            return 0
        tree_ids = {i.doc.doc_id: new_tree_id() for i in items}
        nodes = pa.concat_tables([node_rows(i, tree_ids[i.doc.doc_id]) for i in items])
        self.table("nodes", create=True).add(nodes)
        crash_point("nodes-written")
        (
            self.table("documents", create=True).merge_insert("doc_id")
            .when_matched_update_all().when_not_matched_insert_all()
            .execute(document_rows(items, fingerprint, tree_ids))
        )
        crash_point("documents-written")
        old = f"{doc_filter(tree_ids)} AND {in_filter('tree_id', tree_ids.values(), negate=True)}"
        self._delete_where(self.table("nodes"), old)
        return nodes.num_rows

    @staticmethod
    def _delete_where(tbl, predicate: str) -> int:
        """Delete matching rows; no commit (no new version) when nothing matches."""
        n = tbl.count_rows(predicate)
        if n:
            tbl.delete(predicate)
        return n

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Remove documents: their `documents` rows first (readers stop seeing them),
        then their nodes. A crash in between leaves nodes that no row names, which the
        next run's `collect_garbage` removes."""
        doc_ids = list(doc_ids)
        for name in ("documents", "nodes"):
            tbl = self.table(name)
            for part in parts(doc_ids) if tbl is not None else ():
                self._delete_where(tbl, doc_filter(part))
            if name == "documents":
                crash_point("documents-deleted")

    def collect_garbage(self) -> int:
        """Remove `nodes` rows of trees that no `documents` row names; returns how many.

        Only an interrupted run leaves such rows. When `nodes` holds exactly the rows of
        the current trees (2n - 1 per document) there is nothing to look for. Never
        without a `documents` table (an unread view of the documents would make every
        tree look unnamed), and never the trees of a document whose named tree is
        missing or incomplete (a restored or rolled-back `nodes`): the index run
        re-indexes that document, and its write removes them. Decided on the tables'
        latest versions (`refresh`), whatever this `Store` read before.
        """
        self.refresh(("documents", "nodes"))
        nodes = self.table("nodes")
        if nodes is None or self.table("documents") is None:
            return 0
        current = self.current_trees()
        if nodes.count_rows() == sum(2 * n - 1 for _, n in current.values()):
            return 0
        stored = (nodes.search().select(["doc_id", "tree_id"]).limit(None).to_arrow()
                  .group_by(["doc_id", "tree_id"]).aggregate([([], "count_all")]))
        sizes = {(d, t): n for d, t, n in zip(*stored.to_pydict().values())}
        broken = {d for d, (t, n) in current.items() if sizes.get((d, t)) != 2 * n - 1}
        named = {t for t, _ in current.values()}
        stale = sorted({t for d, t in sizes if t not in named and d not in broken})
        return sum(self._delete_where(nodes, in_filter("tree_id", part))
                   for part in parts(stale))

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

    def text_index(self) -> Any | None:
        """The full-text index of `nodes.text` (LanceDB's `IndexConfig`), or None."""
        tbl = self.table("nodes")
        if tbl is None:
            return None
        return next((i for i in tbl.list_indices()
                     if i.columns == ["text"] and i.index_type == "FTS"), None)

    def ensure_text_index(self) -> bool:
        """Create the full-text index of `nodes.text` with `TEXT_ANALYZER` (LanceDB's
        native FTS), or build it again when the one there was made with another analyzer
        (LanceDB records it in the index's details). New rows are searched before
        `optimize()` folds them in; deleted rows never match. Returns whether one exists."""
        tbl = self.table("nodes")
        if tbl is None or tbl.count_rows() == 0:
            return False
        found = self.text_index()
        if found is not None and text_analyzer_matches(found.index_details):
            return True
        from lancedb.index import FTS

        tbl.create_index("text", config=FTS(**TEXT_ANALYZER), replace=True)
        return True

    def maintain(
        self, *, keep_versions_days: float, min_fragments: int, min_old_versions: int
    ) -> dict[str, int]:
        """Optimize the tables that need it; returns versions removed per optimized table.

        `optimize()` compacts small files, folds new rows into the indexes and removes
        the versions older than `keep_versions_days` (never the latest). A call that
        finds files to compact commits new versions itself, so it runs only on a table
        that holds at least `min_fragments` fragments, or `min_old_versions` versions it
        would remove: a run that changed nothing writes nothing here.
        """
        from datetime import timedelta

        crash_point("maintain-start")
        self.ensure_vector_index()
        self.ensure_text_index()
        crash_point("maintain-indexed")
        keep = timedelta(days=keep_versions_days)
        removed = {}
        for name in ("documents", "nodes", "runs"):
            tbl = self.table(name)
            if tbl is None:
                continue
            versions = tbl.list_versions()
            cutoff = datetime.now() - keep  # list_versions gives naive local times
            old = sum(v["timestamp"] < cutoff for v in versions[:-1])  # removable
            fragments = tbl.stats()["fragment_stats"]["num_fragments"]
            if fragments < min_fragments and old < min_old_versions:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # retention 0 is allowed
                tbl.optimize(cleanup_older_than=keep)
            removed[name] = len(versions) - len(tbl.list_versions())
        return removed

    def start_run(self, row: dict[str, Any]) -> None:
        """The `runs` row of a run that starts (status "running", no finished_at)."""
        self.table("runs", create=True).add(pa.Table.from_pylist([row], schema=tables.RUNS))

    def finish_run(self, row: dict[str, Any]) -> None:
        """Replace the run's row with its final counts and status (one commit)."""
        (
            self.table("runs", create=True).merge_insert("run_id")
            .when_matched_update_all().when_not_matched_insert_all()
            .execute(pa.Table.from_pylist([row], schema=tables.RUNS))
        )

    def add_results(self, rows: pa.Table) -> None:
        """Append rows to the `results` table (created with the schema metadata)."""
        self.table("results", create=True).add(rows)

    def document_text(self, doc_id: str, tree_id: str) -> str:
        """The text of a document whose current tree is `tree_id` (KeyError otherwise)."""
        docs = self.table("documents")
        where = f"doc_id = {sql_quote(doc_id)} AND tree_id = {sql_quote(tree_id)}"
        found = (docs.search().where(where).select(["text"]).limit(1).to_list()
                 if docs is not None else [])
        if not found:
            raise KeyError(f"doc_id {doc_id!r} with tree {tree_id!r} is not in {self.uri!r}")
        return found[0]["text"]

    def load_tree(self, doc_id: str, tree_id: str | None = None) -> StoredTree:
        """Read one document's current tree (or the tree `tree_id`) into arrays, validated."""
        if tree_id is None:
            docs = self.table("documents")
            found = (docs.search().where(f"doc_id = {sql_quote(doc_id)}").select(["tree_id"])
                     .limit(1).to_list() if docs is not None else [])
            if not found:
                raise KeyError(f"doc_id {doc_id!r} is not in the database {self.uri!r}")
            tree_id = found[0]["tree_id"]
        tbl = self.table("nodes")
        where = f"doc_id = {sql_quote(doc_id)} AND tree_id = {sql_quote(tree_id)}"
        rows = tbl.search().where(where).limit(None).to_arrow() if tbl is not None else None
        if rows is None or rows.num_rows == 0:
            raise KeyError(f"tree {tree_id!r} of doc_id {doc_id!r} is not in {self.uri!r}")
        return stored_tree(doc_id, rows.sort_by("idx"))
