"""LanceDB storage of documents, tree nodes and runs.

LanceDB commits one table at a time, so a document's version is chosen by its
`documents` row alone: `documents.tree_id` names the `nodes` rows of its current tree,
and readers join nodes to documents on (doc_id, tree_id). A batch is stored in up to
three commits, each atomic:

1. append the batch's new trees to `nodes` under fresh tree ids (no reader sees them:
   no documents row names them yet);
2. switch the documents: new documents are appended, and when the batch replaces stored
   documents one `merge_insert` (through the BTREE index on `documents.doc_id`) switches
   each row to its new text and tree: before it a reader sees the old version whole,
   after it the new one;
3. delete the replaced trees from `nodes` by their tree ids (through the BTREE index on
   `nodes.tree_id`); a batch of new documents has none to delete.

A batch of new documents therefore reads nothing from the tables, and a batch that
replaces documents looks their rows up through indexes: the cost of a batch does not
grow with the tables (`sproutrag.storage.maintenance` keeps fragments, indexes and
versions bounded while a run writes).

Deleting documents removes their `documents` rows first, then their nodes. A run killed
between commits leaves only nodes that no documents row names: invisible to readers, and
removed by `collect_garbage` at the start of the next run.

The Arrow rows of the tables are built and read back in `sproutrag.storage.rows`; filters on
user input (doc ids) are built in `sproutrag.storage.filters`; the cached table handles
(`Store.table`, `Store.refresh`, `Store.versions_pinned`) are those of its base,
`sproutrag.storage.handles.TableHandles`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC
from typing import Any

import pyarrow as pa

from sproutrag.errors import DatabaseNotFoundError, OldSchemaError, StaleIndexError  # noqa: F401 - also importable from here
from sproutrag.interrupt import crash_point
from sproutrag.schemas import tables
from sproutrag.storage import indexes, maintenance, tree_reads
from sproutrag.storage.filters import (
    doc_filter,
    in_filter,
    parts,
    replaced_trees,
    sql_quote,
)
from sproutrag.storage.garbage import TreeDamage, tree_damage
from sproutrag.storage.handles import TableHandles
from sproutrag.storage.indexes import (  # noqa: F401 - also importable from here
    ANN_MIN_ROWS,
    TEXT_ANALYZER,
    TEXT_INDEX,
    text_analyzer_matches,
)
from sproutrag.storage.rows import (
    IndexedDocument,
    StoredTree,
    document_rows,
    new_tree_id,
    nodes_rows,
)


class Store(TableHandles):
    """The SproutRAG tables in one LanceDB database (a folder or an s3:// URI)."""

    @classmethod
    def open_existing(cls, uri: str, **kwargs: Any) -> Store:
        """Open a database that must already hold SproutRAG tables; reads encoder and dim.

        A database of an older schema version is refused with the command that
        migrates it (`OldSchemaError`). `session`: a `lancedb.Session` (its cache bounds).
        """
        import lancedb

        local = "://" not in str(uri)
        if local and not os.path.exists(os.path.expanduser(uri)):  # connect() would create it
            raise DatabaseNotFoundError(
                f"database {uri} does not exist; run `sproutrag index CORPUS --db {uri}` first"
            )
        if local and not os.path.isdir(os.path.expanduser(uri)):
            raise DatabaseNotFoundError(
                f"database {uri} is not a folder (a file is there): give the folder "
                "`sproutrag index CORPUS --db DB` wrote")
        session = kwargs.pop("session", None)
        db = lancedb.connect(str(uri), storage_options=kwargs.get("storage_options"),
                             session=session)
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

    def indexed(self) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, index_fingerprint) of every stored document."""
        rows = self.stored_state().select(["doc_id", "content_hash", "index_fingerprint"])
        return dict(zip(rows.column(0).to_pylist(),
                        zip(rows.column(1).to_pylist(), rows.column(2).to_pylist())))

    def current_trees(self) -> dict[str, tuple[str, int]]:
        """doc_id -> (tree_id, n_chunks) of every document's current tree."""
        rows = self.stored_state().select(["doc_id", "tree_id", "n_chunks"]).to_pydict()
        return {d: (t, n) for d, t, n in zip(rows["doc_id"], rows["tree_id"], rows["n_chunks"])}

    def stored_state(self) -> pa.Table:
        """Every stored document's small columns (`tables.STATE_COLUMNS`: no text), one
        scan of `documents`; columns an older table lacks are nulls. Empty without the
        table. About 200 bytes a document."""
        tbl = self.table("documents")
        schema = tables.state_schema()
        if tbl is None:
            return schema.empty_table()
        have = [c for c in schema.names if c in tbl.schema.names]
        data = tbl.search().select(have).limit(None).to_arrow()
        columns = [data.column(f.name).cast(f.type) if f.name in have
                   else pa.nulls(data.num_rows, f.type) for f in schema]
        return pa.table(columns, schema=schema)

    def write(self, items: Sequence[IndexedDocument], fingerprint: str, *,
              stored: Collection[str] | None = None) -> int:
        """Store a batch of documents (new trees, switch, replaced trees out); returns the
        `nodes` rows written.

        STORED: the doc ids of ITEMS that `documents` holds now (what an index run's plan
        knows, under the run lock); the other documents must not be stored: they are
        appended without reading anything. None: looked up here (one indexed read of
        `documents`). A replaced document loses every other tree it has in `nodes` (its
        previous one, and any an interrupted run left), found through the BTREE indexes
        on `nodes.doc_id` and `nodes.tree_id`."""
        if not items:
            return 0
        batch = [i.doc.doc_id for i in items]
        stored = set(self._stored_ids(batch) if stored is None else stored)
        replaced = [d for d in batch if d in stored]
        tree_ids = {d: new_tree_id() for d in batch}
        nodes = nodes_rows(items, tree_ids)
        self.table("nodes", create=True).add(nodes)
        crash_point("nodes-written")
        rows = document_rows(items, fingerprint, tree_ids)
        docs = self.table("documents", create=True)
        if replaced:
            (docs.merge_insert("doc_id").when_matched_update_all()
             .when_not_matched_insert_all().execute(rows))
        else:
            docs.add(rows)
        crash_point("documents-written")
        for part in parts(replaced):
            self._delete_where(self.table("nodes"), replaced_trees(part, tree_ids))
        return nodes.num_rows

    def _stored_ids(self, doc_ids: Sequence[str]) -> list[str]:
        """Those of DOC_IDS that `documents` holds (an indexed lookup)."""
        tbl, out = self.table("documents"), []
        for part in parts(list(doc_ids)) if tbl is not None else ():
            found = tbl.search().where(doc_filter(part)).select(["doc_id"]).limit(None)
            out += found.to_arrow().column("doc_id").to_pylist()
        return out

    def update_sources(self, rows: pa.Table) -> int:
        """Update the listing columns (`source`, `source_size`, `modified_at`,
        `source_etag`) of stored documents whose text is unchanged (ROWS: doc_id and those
        columns), in one commit; the trees and texts stay. Returns rows updated."""
        tbl = self.table("documents")
        if tbl is None or rows.num_rows == 0:
            return 0
        result = tbl.merge_insert("doc_id").when_matched_update_all().execute(rows)
        return int(result.num_updated_rows)

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

    def collect_garbage(self, damage: TreeDamage | None = None) -> int:
        """Remove `nodes` rows of trees that no `documents` row names; returns how many.

        Only an interrupted run leaves such rows. DAMAGE: `run_check.tree_damage` of the
        tables now (None: computed here, on the tables' latest versions): it reads the
        row count of `nodes` only, unless `nodes` holds more or fewer rows than the
        current trees. Never without a `documents` table (an unread view of the documents
        would make every tree look unnamed), and never the trees of a document whose
        named tree is missing or incomplete (a restored or rolled-back `nodes`): the
        index run re-indexes that document, and its write removes them.
        """
        self.refresh(("documents", "nodes"))
        nodes = self.table("nodes")
        if nodes is None or self.table("documents") is None:
            return 0
        if damage is None:
            damage = tree_damage(nodes, self.stored_state())
        return sum(self._delete_where(nodes, in_filter("tree_id", part))
                   for part in parts(damage.stale))

    def ensure_vector_index(self, *, min_rows: int = indexes.ANN_MIN_ROWS) -> bool:
        """`indexes.ensure_vector_index` on `nodes` (False without the table)."""
        tbl = self.table("nodes")
        return tbl is not None and indexes.ensure_vector_index(tbl, min_rows=min_rows)

    def text_index(self) -> Any | None:
        """The full-text index of `nodes.text` (LanceDB's `IndexConfig`), or None."""
        tbl = self.table("nodes")
        return None if tbl is None else indexes.text_index(tbl)

    def ensure_text_index(self) -> bool:
        """`indexes.ensure_text_index` on `nodes` (False without the table)."""
        tbl = self.table("nodes")
        return tbl is not None and indexes.ensure_text_index(tbl)

    def protect_versions(self, run_id: str) -> None:
        """Tag the versions of `documents` and `nodes` that run RUN_ID starts from: kept
        by the pruning of this run and of the runs of the next `keep_versions_days`."""
        for name in ("documents", "nodes"):
            tbl = self.table(name)
            if tbl is not None:
                maintenance.protect_version(tbl, run_id)

    def written_tables(self) -> dict[str, Any]:
        """The tables an index run writes, that exist: name -> handle."""
        found = {name: self.table(name) for name in ("documents", "nodes")}
        return {name: tbl for name, tbl in found.items() if tbl is not None}

    def tidy(self, *, run_id: str, keep_versions_days: float,
             min_small: int = maintenance.SMALL_FRAGMENTS) -> dict[str, int]:
        """Between batches of run RUN_ID: compact a table whose small fragments reached
        MIN_SMALL, fold its new rows into its scalar indexes and prune its intermediate
        versions (`maintenance.tidy`); versions removed per table tidied."""
        return maintenance.tidy(self.written_tables(), run_id=run_id,
                                keep_days=keep_versions_days, min_small=min_small)

    def maintain(
        self, *, run_id: str, keep_versions_days: float, min_fragments: int,
        min_old_versions: int,
    ) -> dict[str, int]:
        """The end of index run RUN_ID: create the indexes that are missing (scalar,
        vector, full-text), compact `documents` and `nodes` when MIN_FRAGMENTS small
        fragments piled up, fold new rows into every index, and prune their versions to
        the version before the run, the final one and the start versions of the runs of
        the last KEEP_VERSIONS_DAYS (`maintenance.prune_versions`). `runs` and `results`
        (a query run's rows are one commit) are optimized once one holds MIN_FRAGMENTS
        fragments or MIN_OLD_VERSIONS versions older than the retention. Returns versions
        removed per table."""
        crash_point("maintain-start")
        indexes.ensure_scalar_indexes(self.written_tables())
        self.ensure_vector_index()
        self.ensure_text_index()
        crash_point("maintain-indexed")
        removed = {}
        for name, tbl in self.written_tables().items():
            if maintenance.small_fragments(tbl) >= min_fragments:
                maintenance.compact(tbl)
            indexes.fold_new_rows(tbl, scalar_only=False)
            n = maintenance.prune_versions(tbl, run_id=run_id, keep_days=keep_versions_days)
            if n:
                removed[name] = n
        for name in ("runs", "results"):  # appended to, a commit each: runs, query runs
            tbl = self.table(name)
            if tbl is not None and (n := maintenance.optimize_runs(
                    tbl, keep_days=keep_versions_days, min_fragments=min_fragments,
                    min_old_versions=min_old_versions)):
                removed[name] = n
        return removed

    def start_run(self, row: dict[str, Any]) -> None:
        """The `runs` row of a run that starts (status "running", no finished_at)."""
        self.table("runs", create=True).add(pa.Table.from_pylist([row], schema=tables.RUNS))

    def mark_killed(self, by_run: str) -> int:
        """Mark the `runs` rows still "running" as "killed" (call it holding the run lock:
        their runs ended without completing them); returns how many."""
        tbl = self.table("runs")
        if tbl is None or not tbl.count_rows("status = 'running'"):
            return 0
        running = tbl.search().where("status = 'running'").select(
            ["run_id", "started_at"]).limit(None).to_list()
        docs = self.table("documents")
        for row in running:  # what it stored stays: say how much (no row counts it)
            since = row["started_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            stored = 0 if docs is None else docs.count_rows(
                f"indexed_at >= TIMESTAMP '{since}'")
            why = (f"the run's process ended before it completed this row (killed); found "
                   f"by run {by_run}; the {stored} documents it had stored stay (indexed_at "
                   "after its start); its deletions are not counted")
            tbl.update(where=f"run_id = '{row['run_id']}'",
                       values={"status": "killed", "message": why})
        return len(running)

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
        return self.document_text_and_title(doc_id, tree_id)[0]

    def document_text_and_title(self, doc_id: str, tree_id: str) -> tuple[str, str | None]:
        """(text, title) of a document whose current tree is `tree_id` (KeyError
        otherwise), in one read; the title is None when not set."""
        found = self.document_texts({doc_id: tree_id})
        if doc_id not in found:
            raise KeyError(f"doc_id {doc_id!r} with tree {tree_id!r} is not in {self.uri!r}")
        return found[doc_id]

    def document_texts(self, trees: Mapping[str, str]) -> dict[str, tuple[str, str | None]]:
        """`tree_reads.document_texts` of `documents`: doc_id -> (text, title) of the
        documents of TREES (doc_id -> tree id) whose current tree is that one."""
        return tree_reads.document_texts(self.table("documents"), trees)

    def load_trees(self, trees: Mapping[str, str]) -> dict[str, StoredTree]:
        """`tree_reads.load_trees` of `nodes`: doc_id -> the tree of TREES (doc_id -> tree
        id), validated; a tree no longer stored is missing."""
        return tree_reads.load_trees(self.table("nodes"), trees)

    def load_tree(self, doc_id: str, tree_id: str | None = None) -> StoredTree:
        """Read one document's current tree (or the tree `tree_id`) into arrays, validated."""
        if tree_id is None:
            docs = self.table("documents")
            found = (docs.search().where(f"doc_id = {sql_quote(doc_id)}").select(["tree_id"])
                     .limit(1).to_list() if docs is not None else [])
            if not found:
                raise KeyError(f"doc_id {doc_id!r} is not in the database {self.uri!r}")
            tree_id = found[0]["tree_id"]
        found_trees = self.load_trees({doc_id: tree_id})
        if doc_id not in found_trees:
            raise KeyError(f"tree {tree_id!r} of doc_id {doc_id!r} is not in {self.uri!r}")
        return found_trees[doc_id]
