"""In-place migration of a database of schema version 1 to the current version (2).

Version 2 adds `tree_id` to `documents` and `nodes` (readers join the two on
(doc_id, tree_id)) and `status` / `message` to `runs`, whose `finished_at` becomes
nullable (a run that is still going, or was killed, has none). Each table is rewritten
by one overwrite commit (LanceDB keeps the old version until it is pruned), streamed
batch by batch, so a crash leaves every table either wholly old or wholly migrated and
the next run migrates what is left. The trees of a migrated database carry the tree id
"legacy:{doc_id}" in both tables. Call it under the index lock, before anything else.

The schema version is part of the index fingerprint, so the run that migrates then
re-indexes every document: this also repairs any document that version 1's two-commit
write left with nodes of one version and the text of another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables
from sproutrag.interrupt import crash_point

LEGACY_PREFIX = "legacy:"


def _tree_id(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    """documents and nodes: the one tree of each document is "legacy:{doc_id}"."""
    return {"tree_id": pc.binary_join_element_wise(LEGACY_PREFIX, batch.column("doc_id"), "")}


def _runs(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    n = batch.num_rows
    return {"status": pa.array(["completed"] * n, pa.string()),
            "message": pa.nulls(n, pa.string())}


_NEW_COLUMNS: dict[str, Callable[[pa.RecordBatch], dict[str, pa.Array]]] = {
    "nodes": _tree_id, "documents": _tree_id, "runs": _runs,
}


def _target_schema(name: str, old: pa.Schema) -> pa.Schema:
    meta = old.metadata or {}
    encoder = meta.get(b"sproutrag.encoder", b"?").decode()
    dim = int(meta.get(b"sproutrag.dim", b"0"))
    base = {"documents": tables.DOCUMENTS, "runs": tables.RUNS}.get(name)
    schema = base if base is not None else tables.nodes_schema(dim)
    return tables.with_metadata(schema, encoder_id=encoder, dim=dim)


def _batches(tbl, name: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    add = _NEW_COLUMNS[name]
    for batch in tbl.search().limit(None).to_batches():
        columns = {**{c: batch.column(c) for c in batch.schema.names}, **add(batch)}
        yield pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


def schema_version(tbl) -> str:
    return (tbl.schema.metadata or {}).get(b"sproutrag.schema_version", b"?").decode()


def migrate(uri: str, *, storage_options: dict[str, str] | None = None) -> list[str]:
    """Migrate every table of an older schema version in place; returns their names."""
    import lancedb

    db = lancedb.connect(str(uri), storage_options=storage_options)
    done = []
    for name in ("nodes", "documents", "runs"):
        if name not in db.list_tables().tables:
            continue
        tbl = db.open_table(name)
        if schema_version(tbl) not in tables.MIGRATABLE_VERSIONS:
            continue
        schema = _target_schema(name, tbl.schema)
        reader = pa.RecordBatchReader.from_batches(schema, _batches(tbl, name, schema))
        db.create_table(name, data=reader, schema=schema, mode="overwrite")
        done.append(name)
        crash_point(f"migrated-{name}")
    return done
