"""Whether a table of a database is one this SproutRAG reads: its schema metadata (schema
version, encoder, dim) against the store's. A table of an older schema version that can
be migrated gets the command that migrates it (`OldSchemaError`); any other difference is
a database built for another encoder or format (`StaleIndexError`)."""

from __future__ import annotations

import pyarrow as pa

from sproutrag.errors import OldSchemaError, StaleIndexError
from sproutrag.schemas import tables


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
    if same_encoder and found["schema_version"] in tables.MIGRATABLE_VERSIONS:
        raise OldSchemaError(
            f"table {name!r} in {uri!r} has schema version {found['schema_version']}; this "
            f"SproutRAG reads version {tables.SCHEMA_VERSION}: run `sproutrag index CORPUS "
            f"--db {uri}` once to migrate the database in place (from versions 1 and 2 that "
            "run re-indexes every document; from 3 to 6 it only adds columns)"
        )
    raise StaleIndexError(
        f"table {name!r} in {uri!r} was built with {found}, this run uses {wanted}: index "
        "into a new database, or re-index with the same encoder"
    )
