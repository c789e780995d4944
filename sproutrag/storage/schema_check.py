"""Whether a table of a database is one this SproutRAG reads: its schema metadata (schema
version, encoder, dim) against the store's. A table of an older schema version that can
be migrated gets the command that migrates it (`OldSchemaError`); any other difference is
a database built for another encoder or format (`StaleIndexError`)."""

from __future__ import annotations

import pyarrow as pa

from sproutrag.errors import OldSchemaError, StaleIndexError
from sproutrag.schemas import tables

#: What migrates a database of an older schema version (URI: the database).
MIGRATE_ADVICE = (
    "run `sproutrag index CORPUS --db {uri}` once to migrate the database in place (from "
    "versions 1 and 2 that run re-indexes every document; from 3 to 6 it adds columns and "
    "re-indexes only the documents indexed with settings whose default changed since: "
    "CHANGELOG.md names them, e.g. 0.11.0's sentence rules)")


def check_table_schema(uri: str, name: str, schema: pa.Schema, *, encoder_id: str,
                       dim: int) -> None:
    """Raise unless table NAME of the database at URI, with SCHEMA, was written by this
    schema version for the encoder ENCODER_ID of DIM dimensions."""
    meta = schema.metadata or {}
    found = {
        "schema_version": meta.get(b"sproutrag.schema_version", b"?").decode(),
        "encoder": meta.get(b"sproutrag.encoder", b"?").decode(),
        "dim": meta.get(b"sproutrag.dim", b"?").decode(),
    }
    wanted = {"schema_version": tables.SCHEMA_VERSION, "encoder": encoder_id, "dim": str(dim)}
    if found == wanted:
        return
    same_encoder = (found["encoder"], found["dim"]) == (wanted["encoder"], wanted["dim"])
    untagged = name == "results" and not meta  # version 2 gave `results` no metadata
    if untagged or same_encoder and found["schema_version"] in tables.MIGRATABLE_VERSIONS:
        version = "2" if untagged else found["schema_version"]
        raise OldSchemaError(
            f"table {name!r} in {uri!r} has schema version {version}; this SproutRAG "
            f"reads version {tables.SCHEMA_VERSION}: {MIGRATE_ADVICE.format(uri=uri)}")
    raise StaleIndexError(
        f"table {name!r} in {uri!r} was built with {found}, this run uses {wanted}: index "
        "into a new database, or re-index with the same encoder"
    )
