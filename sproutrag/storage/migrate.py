"""In-place migration of a database of an older schema version (1 to 6) to the current one.

Version 2 added `tree_id` to `documents` and `nodes` (readers join the two on
(doc_id, tree_id)) and `status` / `message` to `runs`, whose `finished_at` became
nullable (a run that is still going, or was killed, has none). Version 3 adds
`flow_run_id` to `runs` and `results`, gives `results` the schema metadata every table
carries, and a table `index_settings` (created by the next index run). Each table is
rewritten by one overwrite commit (LanceDB keeps the old version until it is pruned),
streamed batch by batch, so a crash leaves every table either wholly old or wholly
migrated and the next run migrates what is left. The trees of a version-1 database
carry the tree id "legacy:{doc_id}" in both tables. Call it under the index lock, before
anything else. `nodes` and `documents` are migrated last (`MIGRATION_ORDER`): readers
check those two, so a database half migrated is refused until a run finishes it.

The schema version is part of the index fingerprint, so the run that migrates then
re-indexes every document: this also repairs any document that version 1's two-commit
write left with nodes of one version and the text of another.

Version 4 adds the listing's facts to `documents` (`source_size`, `modified_at`,
`source_etag`). A version-3 table is migrated without rewriting a row: the new columns
are added with nulls and the schema metadata is updated (two small commits per table,
each idempotent, so a crash in between is finished by the next run); its trees stay
valid (the fingerprint names the trees' own schema version), so nothing is re-indexed.

Version 5 adds each document's name (`documents.name`, `name_key`; `sproutrag.names`).
A version-3 or -4 table gains them computed from its `text` and `title` (one more
commit, which reads those two columns and writes only the new ones).

Version 6 adds `documents.doc_key` (`sproutrag.doc_keys`), computed from `doc_id` by one
more commit in the same way. Version 7 adds `documents.metadata`, `metadata_json` as a
JSON column (filters read its fields), computed by one more commit from `metadata_json`.
Version 7 also gives `results` the question and the columns of a context, with nulls,
and makes its `k` nullable (one more commit: a column that the current schema lets be
null, and the table does not, is relaxed in place).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.doc_keys import doc_keys
from sproutrag.interrupt import crash_point
from sproutrag.names import document_name, name_key
from sproutrag.schemas import tables

LEGACY_PREFIX = "legacy:"


def _tree_id(batch: pa.RecordBatch) -> pa.Array:
    """documents and nodes: the one tree of each document is "legacy:{doc_id}"."""
    return pc.binary_join_element_wise(LEGACY_PREFIX, batch.column("doc_id"), "")


def _names(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`documents.name` and `name_key` of a batch of `text` (and `title`, when the table
    has it)."""
    texts = batch.column("text").to_pylist()
    titles = (batch.column("title").to_pylist() if "title" in batch.schema.names
              else [None] * len(texts))
    names = [document_name(t, title) for t, title in zip(texts, titles, strict=True)]
    return pa.RecordBatch.from_arrays(
        [pa.array(names, pa.string()), pa.array([name_key(n) for n in names], pa.int64())],
        schema=pa.schema([tables.DOCUMENTS.field("name"), tables.DOCUMENTS.field("name_key")]))


#: Columns a migration fills with something else than nulls: (table, column) -> values.
_FILLERS: dict[tuple[str, str], Callable[[pa.RecordBatch], pa.Array]] = {
    ("nodes", "tree_id"): _tree_id,
    ("documents", "tree_id"): _tree_id,
    ("runs", "status"): lambda b: pa.array(["completed"] * b.num_rows, pa.string()),
}


def _doc_keys(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`documents.doc_key` of a batch of `doc_id`."""
    keys = pa.array(doc_keys(batch.column("doc_id").to_pylist()), pa.int64())
    return pa.RecordBatch.from_arrays(
        [keys], schema=pa.schema([tables.DOCUMENTS.field("doc_key")]))


def _metadata(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`documents.metadata` of a batch of `metadata_json` (nulls when the table has none)."""
    field = tables.DOCUMENTS.field("metadata")
    values = (batch.column("metadata_json").to_pylist()
              if "metadata_json" in batch.schema.names else [None] * batch.num_rows)
    return pa.RecordBatch.from_arrays([pa.array(values, field.type)],
                                      schema=pa.schema([field]))


#: Columns computed from a table's rows (table -> [(columns, batch -> batch of them, the
#: columns they are computed from)]): a rewrite fills them, an in-place migration adds
#: each group by one more commit.
_COMPUTED = {"documents": [(("name", "name_key"), _names, ("text", "title")),
                           (("doc_key",), _doc_keys, ("doc_id",)),
                           (("metadata",), _metadata, ("metadata_json",))]}

_BASE = {"documents": tables.DOCUMENTS, "runs": tables.RUNS, "results": tables.RESULTS,
         "index_settings": tables.INDEX_SETTINGS}


def _target_schema(name: str, encoder: str, dim: int) -> pa.Schema:
    schema = _BASE[name] if name in _BASE else tables.nodes_schema(dim)
    return tables.with_metadata(schema, encoder_id=encoder, dim=dim)


def _batches(tbl, name: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for batch in tbl.search().limit(None).to_batches():
        have = set(batch.schema.names)
        extra = {}
        for computed, compute, _ in _COMPUTED.get(name, ()):
            if not set(computed) <= have:
                extra.update(zip(computed, compute(batch).columns, strict=True))
        columns = [
            batch.column(f.name) if f.name in have
            else extra[f.name] if f.name in extra
            else _FILLERS[(name, f.name)](batch) if (name, f.name) in _FILLERS
            else pa.nulls(batch.num_rows, f.type)
            for f in schema
        ]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _add_in_place(tbl, name: str, encoder: str, dim: int) -> None:
    """A rows-compatible table: add the missing (nullable) columns with nulls, relax the
    columns the current schema lets be null, add the computed ones (`_COMPUTED`) a commit
    per group, then write the current schema metadata; no row is rewritten."""
    import lance

    have = set(tbl.schema.names)
    groups = _COMPUTED.get(name, [])
    computed = {c for cols, _, _ in groups for c in cols}
    target = _target_schema(name, encoder, dim)
    missing = [f for f in target if f.name not in have and f.name not in computed]
    if missing:
        tbl.add_columns(missing)
    stored = tbl.schema
    for f in target:
        if f.nullable and f.name in have and not stored.field(f.name).nullable:
            tbl.alter_columns({"path": f.name, "nullable": True})
    for cols, compute, sources in groups:
        if set(cols) <= set(tbl.schema.names):
            continue  # added by an earlier, interrupted migration
        read = [c for c in sources if c in tbl.schema.names]
        udf = lance.batch_udf(output_schema=pa.schema([target.field(c) for c in cols]))
        tbl.to_lance().add_columns(udf(compute), read_columns=read)
        tbl.checkout_latest()
    meta = tables.table_metadata(encoder_id=encoder, dim=dim)
    tbl.to_lance().update_schema_metadata({k.decode(): v.decode() for k, v in meta.items()})
    tbl.checkout_latest()


def schema_version(tbl) -> str:
    return (tbl.schema.metadata or {}).get(b"sproutrag.schema_version", b"?").decode()


#: The tables in the order they are migrated: `nodes` and `documents`, which readers check,
#: last, so that a database an index run was killed while migrating stays refused until
#: the next run finishes (readers served a version-2 database's trees as current).
MIGRATION_ORDER = ("runs", "results", "index_settings", "documents", "nodes")


def needs_migration(tbl) -> bool:
    """An older version, or (results of version 2) no SproutRAG metadata at all."""
    return schema_version(tbl) in (*tables.MIGRATABLE_VERSIONS, "?")


def migrate(uri: str, *, storage_options: dict[str, str] | None = None) -> dict[str, str]:
    """Migrate every table of an older schema version in place; returns table -> the
    version it had ("?": results without metadata). Only versions outside
    `tables.ROWS_COMPATIBLE_VERSIONS` change the index fingerprint (a re-index)."""
    import lancedb

    db = lancedb.connect(str(uri), storage_options=storage_options)
    names = db.list_tables().tables
    if "nodes" not in names:
        return {}
    meta = db.open_table("nodes").schema.metadata or {}
    encoder = meta.get(b"sproutrag.encoder", b"?").decode()
    dim = int(meta.get(b"sproutrag.dim", b"0"))
    done: dict[str, str] = {}
    for name in MIGRATION_ORDER:
        if name not in names:
            continue
        tbl = db.open_table(name)
        if not needs_migration(tbl):
            continue
        done[name] = schema_version(tbl)
        if done[name] in tables.ROWS_COMPATIBLE_VERSIONS:
            _add_in_place(tbl, name, encoder, dim)
            crash_point(f"migrated-{name}")
            continue
        if name == "index_settings":  # created at version 3: never older
            continue
        schema = _target_schema(name, encoder, dim)
        reader = pa.RecordBatchReader.from_batches(schema, _batches(tbl, name, schema))
        db.create_table(name, data=reader, schema=schema, mode="overwrite")
        crash_point(f"migrated-{name}")
    return done
