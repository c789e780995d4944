"""Arrow schemas of the Parquet intermediates and the LanceDB tables (defined once).

The LanceDB tables are a public contract (README, "Tables"): bump SCHEMA_VERSION on
any change. Table metadata carries schema_version, the encoder id and the vector
dimension, so a reader detects a table built with another encoder.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = "7"  # 2: tree_id (documents, nodes); status, message (runs)
#                       3: flow_run_id (runs, results); results metadata; index_settings
#                       4: source_size, modified_at, source_etag, title, metadata_json,
#                          metadata_hash (documents)
#                       5: name, name_key (documents)
#                       6: doc_key (documents)
#                       7: metadata (documents: metadata_json as a JSON column); query,
#                          budget_chars, budget_tokens, used_chars, used_tokens,
#                          node_ids, cut (results), whose k became nullable
#: Versions an index run migrates in place (storage/migrate.py).
MIGRATABLE_VERSIONS = ("1", "2", "3", "4", "5", "6")
#: Versions whose trees and vectors are those of today: migrating them adds columns and
#: re-writes schema metadata only, never the rows (no re-index).
ROWS_COMPATIBLE_VERSIONS = ("3", "4", "5", "6")
#: The layout of the stored trees and vectors (`nodes`): the part of the schema that the
#: index fingerprint names. It changes only when stored trees must be rebuilt.
TREE_SCHEMA_VERSION = "3"

# --- Parquet intermediates (one file per batch of documents) -----------------------

CHUNKS = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("idx", pa.int32(), nullable=False),  # chunk position in the document
        pa.field("start", pa.int64(), nullable=False),  # char offset, text[start:end]
        pa.field("end", pa.int64(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
    ]
)


def embeddings_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("idx", pa.int32(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
        ]
    )


RELATIONS = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("i", pa.int32(), nullable=False),  # chunk idx, i < j
        pa.field("j", pa.int32(), nullable=False),
        pa.field("m", pa.float32(), nullable=False),  # symmetrised aggregated attention
    ]
)

# --- LanceDB tables -----------------------------------------------------------------

DOCUMENTS = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),  # sha256 of the text
        pa.field("text", pa.string(), nullable=False),
        pa.field("n_chars", pa.int64(), nullable=False),
        pa.field("n_chunks", pa.int32(), nullable=False),
        pa.field("index_fingerprint", pa.string(), nullable=False),
        pa.field("indexed_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("tree_id", pa.string(), nullable=False),  # the current tree's nodes rows
        # What the corpus listing said of the document when it was read (the fast path of
        # an incremental run: a file whose size and modification time, or an S3 object
        # whose size and ETag, equal these is unchanged without being read). Null: not
        # known (a JSONL line has no modification time; a file modified within seconds of
        # being read is re-read by the next run).
        pa.field("source_size", pa.int64(), nullable=True),  # bytes: file, object or line
        pa.field("modified_at", pa.timestamp("us", tz="UTC"), nullable=True),
        pa.field("source_etag", pa.string(), nullable=True),  # S3 objects
        # What the source says of the document besides its text: a JSONL line's fields
        # other than doc_id and text, as a JSON object (sorted keys); its "title" field
        # (a string) also fills `title`. Not part of the content hash: a change of
        # metadata alone updates these columns in place, nothing is re-indexed.
        pa.field("title", pa.string(), nullable=True),
        pa.field("metadata_json", pa.string(), nullable=True),
        pa.field("metadata_hash", pa.string(), nullable=True),  # of metadata_json
        # The name other documents call this one by (`sproutrag.search.links`): `title`,
        # else the text's first line when heading-like, lower-cased words joined by one
        # space, a trailing parenthesis dropped; null: none. A corpus-wide search follows
        # names written in the question or its best unit; it finds documents by
        # `name_key` (`sproutrag.names.name_key`: 4 bytes of BLAKE2b of its first word in
        # the high half, of the whole name in the low half, signed).
        pa.field("name", pa.string(), nullable=True),
        pa.field("name_key", pa.int64(), nullable=True),
        # The doc_id's 64-bit key (`sproutrag.doc_keys.doc_key`: 8 bytes of its BLAKE2b
        # digest, signed), by which a query process finds a document among the current
        # ones without a dict of every doc_id (version 6; never null once written).
        pa.field("doc_key", pa.int64(), nullable=True),
        # `metadata_json` as Lance's JSON type (stored as JSONB), so that a filter can
        # read a field: `json_get_string(metadata, 'customer') = 'acme'`,
        # `json_get_int(metadata, 'year') >= 2024` (version 7; null when metadata_json is).
        pa.field("metadata", pa.json_(pa.utf8()), nullable=True),
    ]
)

#: The columns of `documents` an index run reads to plan (`Store.stored_state`): no text.
STATE_COLUMNS = ("doc_id", "content_hash", "index_fingerprint", "tree_id", "n_chunks",
                 "source_size", "modified_at", "source_etag", "metadata_hash", "source")
#: What an unchanged document's listing may update in place (`Store.update_sources`).
SOURCE_COLUMNS = ("doc_id", "source", "source_size", "modified_at", "source_etag", "title",
                  "metadata_json", "metadata_hash", "name", "name_key", "metadata")


def state_schema() -> pa.Schema:
    """The schema of `Store.stored_state` (every column nullable: older tables)."""
    return pa.schema([DOCUMENTS.field(c).with_nullable(True) for c in STATE_COLUMNS])


def sources_schema() -> pa.Schema:
    """The rows of `Store.update_sources`."""
    return pa.schema([DOCUMENTS.field(c) for c in SOURCE_COLUMNS])


def nodes_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("node_id", pa.string(), nullable=False),  # "{doc_id}:{idx}"
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("tree_id", pa.string(), nullable=False),  # join with documents.tree_id
            pa.field("idx", pa.int32(), nullable=False),  # scipy linkage numbering
            pa.field("parent", pa.int32(), nullable=False),  # -1 for the root
            pa.field("left", pa.int32(), nullable=False),  # -1 for leaves
            pa.field("right", pa.int32(), nullable=False),
            pa.field("height", pa.int32(), nullable=False),  # 0 for leaves
            pa.field("n_leaves", pa.int32(), nullable=False),
            pa.field("leaf_start", pa.int32(), nullable=False),
            pa.field("leaf_end", pa.int32(), nullable=False),
            pa.field("merge_sim", pa.float32(), nullable=True),  # null for leaves
            pa.field("start", pa.int64(), nullable=True),  # leaves only
            pa.field("end", pa.int64(), nullable=True),
            pa.field("text", pa.string(), nullable=True),  # leaves only
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
        ]
    )


RUNS = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("corpus", pa.string(), nullable=False),
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("finished_at", pa.timestamp("us", tz="UTC"), nullable=True),  # null: running
        pa.field("n_new", pa.int32(), nullable=False),
        pa.field("n_changed", pa.int32(), nullable=False),
        pa.field("n_deleted", pa.int32(), nullable=False),
        pa.field("n_unchanged", pa.int32(), nullable=False),
        pa.field("n_failed", pa.int32(), nullable=False),
        pa.field("n_chunks", pa.int64(), nullable=False),
        pa.field("n_nodes", pa.int64(), nullable=False),
        pa.field("n_chars", pa.int64(), nullable=False),
        pa.field("failures_json", pa.string(), nullable=False),  # [{"doc_id", "reason"}]
        pa.field("timings_json", pa.string(), nullable=False),  # {"stage": seconds}
        pa.field("seconds", pa.float64(), nullable=False),
        pa.field("index_fingerprint", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),  # RUN_STATUSES
        pa.field("message", pa.string(), nullable=True),  # why it failed / stopped, notes
        pa.field("flow_run_id", pa.string(), nullable=True),  # the Prefect flow run
    ]
)

#: `runs.status`: written as "running" when a run starts, then completed by the run; a
#: row still "running" when the next run takes the lock belongs to a run that was killed,
#: and that run marks it "killed".
RUN_STATUSES = ("running", "completed", "failed", "interrupted", "killed")


def table_metadata(*, encoder_id: str, dim: int) -> dict[bytes, bytes]:
    """Schema metadata stored with every LanceDB table."""
    return {
        b"sproutrag.schema_version": SCHEMA_VERSION.encode(),
        b"sproutrag.encoder": encoder_id.encode(),
        b"sproutrag.dim": str(dim).encode(),
    }


def with_metadata(schema: pa.Schema, *, encoder_id: str, dim: int) -> pa.Schema:
    return schema.with_metadata(table_metadata(encoder_id=encoder_id, dim=dim))


RESULTS = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),  # the query run (random id)
        pa.field("qid", pa.string(), nullable=False),
        pa.field("rank", pa.int32(), nullable=False),  # 1-based; 0 for a failed query
        pa.field("doc_id", pa.string(), nullable=True),
        pa.field("node_id", pa.string(), nullable=True),
        pa.field("score", pa.float32(), nullable=True),
        pa.field("spans", pa.list_(pa.list_(pa.int64(), 2)), nullable=True),
        pa.field("text", pa.string(), nullable=True),
        pa.field("error", pa.string(), nullable=True),  # why the query could not run
        pa.field("mode", pa.string(), nullable=False),
        # The bound on units: the query's k (5 when not given), or a context's k when
        # one was given, else null (a context bounded by its budget alone).
        pa.field("k", pa.int32(), nullable=True),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("flow_run_id", pa.string(), nullable=True),  # the Prefect flow run
        # Version 7 (older rows null; k nullable since then).
        pa.field("query", pa.string(), nullable=True),  # the question (null: not text)
        # A context (a query with a budget); null on a top-k query's rows.
        pa.field("budget_chars", pa.int32(), nullable=True),
        pa.field("budget_tokens", pa.int32(), nullable=True),
        pa.field("used_chars", pa.int32(), nullable=True),  # the context's, on each row
        pa.field("used_tokens", pa.int32(), nullable=True),
        pa.field("node_ids", pa.list_(pa.string()), nullable=True),  # the span's, best first
        pa.field("cut", pa.bool_(), nullable=True),  # the span ends inside a unit it cut
    ]
)

#: How the index was built, one row per index fingerprint the documents carry: the
#: encoder's identity and the weights' alpha (which shaped the trees), and the
#: query-time defaults of the weights file the run used (readers default to them).
INDEX_SETTINGS = pa.schema(
    [
        pa.field("index_fingerprint", pa.string(), nullable=False),  # documents' column
        pa.field("encoder", pa.string(), nullable=False),  # model id (as in the metadata)
        pa.field("encoder_sha256", pa.string(), nullable=True),  # model content hash
        pa.field("dim", pa.int32(), nullable=False),
        pa.field("tree_fingerprint", pa.string(), nullable=False),  # the weights' alpha
        pa.field("weights_fingerprint", pa.string(), nullable=False),  # the whole file
        pa.field("weights_source", pa.string(), nullable=False),  # its path (or "uniform")
        pa.field("delta", pa.float64(), nullable=False),
        pa.field("margin", pa.float64(), nullable=True),  # null: no relative cutoff
        pa.field("lexical_weight", pa.float64(), nullable=False),
        pa.field("size_penalty", pa.float64(), nullable=False),
        pa.field("seed_leaves", pa.bool_(), nullable=False),
        pa.field("settings_json", pa.string(), nullable=False),  # the fingerprinted fields
        pa.field("run_id", pa.string(), nullable=False),  # the run that wrote the row
        pa.field("updated_at", pa.timestamp("us", tz="UTC"), nullable=False),
        # The full-text index the run keeps on nodes.text: JSON {"column", "index_type",
        # "rows", "analyzer"}; null in a row written before it was recorded (added in
        # place to an older table: no schema version change, no re-index).
        pa.field("text_index_json", pa.string(), nullable=True),
        # The hierarchy's search parameters (`SearchParams`): added in place like
        # text_index_json, null in older rows (read as the default, 0: off).
        pa.field("doc_weight", pa.float64(), nullable=True),
        pa.field("ancestor_weight", pa.float64(), nullable=True),
        pa.field("doc_diversity", pa.float64(), nullable=True),
    ]
)
