"""How a database was built: the `index_settings` table, and what readers make of it.

An index run records, before it writes any document, one row per index fingerprint
(`documents.index_fingerprint`): the encoder's id and content hash, the fingerprint of
the weights' alpha (what shaped the trees) and the query-time defaults of the weights
file it used (delta, margin, lexical weight, size penalty, leaf seeds). The row is
written only when it changed, so an unchanged run still writes nothing but its `runs`
row; rows no document carries any more are removed at the same time and again after
the run's writes (`remove_unused_infos`).

Readers (`Retriever`, `sproutrag query`, the `query-corpus` flow) take their search
defaults from the newest row among the fingerprints their documents carry, and refuse,
naming both sides, an encoder whose content differs from the one the vectors were made
with, or a weights file whose alpha is not the database's. A database written by
`Store` directly (tests, benchmarks) has no such rows: readers then use the encoder's
weights, as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from sproutrag.params import SearchParams
from sproutrag.schemas import tables
from sproutrag.storage.filters import in_filter
from sproutrag.storage.store import TEXT_INDEX, StaleIndexError, Store, text_analyzer_matches

TABLE = "index_settings"


@dataclass(frozen=True)
class SearchDefaults:
    """The search parameters a reader uses unless told otherwise, and where they came from."""

    params: SearchParams
    source: str

    @classmethod
    def of_weights(cls, weights: Any) -> SearchDefaults:
        return cls(weights.search, f"weights {weights.source}")


#: The columns of `index_settings` that `IndexInfo` holds as one `SearchParams`.
_SEARCH_COLUMNS = frozenset(SearchParams().learned())
#: Search columns `index_settings` gained after tables were first written (nullable).
ADDED_SEARCH_COLUMNS = frozenset({"doc_weight", "ancestor_weight", "doc_diversity"})


@dataclass(frozen=True)
class IndexInfo:
    """One row of `index_settings` (see schemas/tables.py); the learned search parameters'
    columns (delta, margin, lexical_weight, ...) are `search`."""

    index_fingerprint: str
    encoder: str
    encoder_sha256: str | None
    dim: int
    tree_fingerprint: str
    weights_fingerprint: str
    weights_source: str
    search: SearchParams
    settings_json: str
    run_id: str
    updated_at: datetime
    text_index_json: str | None = None  # null: a row from before it was recorded

    @classmethod
    def build(cls, *, fingerprint: str, encoder: Any, fields: dict[str, Any],
              run_id: str, text_index: dict[str, Any] | None = None) -> IndexInfo:
        """The row of an index run: FIELDS are what its fingerprint hashes (no secrets);
        TEXT_INDEX, the full-text index the table has (`built_text_index`; None: none), is
        recorded beside them (not fingerprinted: another analyzer rebuilds that index,
        not the documents)."""
        w = encoder.weights
        return cls(
            fingerprint, encoder.model_id, encoder.model_sha256, int(encoder.dim),
            w.tree_fingerprint(), w.fingerprint(), str(w.source), w.search,
            json.dumps(fields, sort_keys=True, default=str), run_id, datetime.now(UTC),
            None if text_index is None else json.dumps(text_index, sort_keys=True),
        )

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> IndexInfo:
        """ROW as read; a search column added in place after the row was written
        (`ADDED_SEARCH_COLUMNS`) reads null there: the parameter's default (off)."""
        rest = {k: v for k, v in row.items() if k not in _SEARCH_COLUMNS}
        learned = {k: v for k, v in row.items()
                   if k in _SEARCH_COLUMNS and not (v is None and k in ADDED_SEARCH_COLUMNS)}
        return cls(search=SearchParams.from_learned(learned), **rest)

    def same_settings(self, other: IndexInfo) -> bool:
        """Equal in everything but the run that wrote it and when."""
        skip = {"run_id", "updated_at"}
        return all(getattr(self, f.name) == getattr(other, f.name)
                   for f in fields(self) if f.name not in skip)

    def defaults(self) -> SearchDefaults:
        return SearchDefaults(self.search, f"the database (weights {self.weights_source})")

    def encoding(self) -> dict[str, Any]:
        """The fingerprinted settings (encoder fields, chunking, tree) as recorded."""
        return json.loads(self.settings_json)

    def text_index(self) -> dict[str, Any] | None:
        """The full-text index recorded (column, type, rows, analyzer), or None."""
        return json.loads(self.text_index_json) if self.text_index_json else None

    def to_row(self) -> dict[str, Any]:
        row = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "search"}
        return {**row, **self.search.learned()}


def read_index_infos(store: Store, fingerprints: Iterable[str] | None = None
                     ) -> dict[str, IndexInfo]:
    """index fingerprint -> row, for FINGERPRINTS (default: every row)."""
    tbl = store.table(TABLE)
    if tbl is None:
        return {}
    query = tbl.search()
    if fingerprints is not None:
        wanted = sorted(set(fingerprints))
        if not wanted:
            return {}
        query = query.where(in_filter("index_fingerprint", wanted))
    rows = query.limit(None).to_arrow().to_pylist()
    return {r["index_fingerprint"]: IndexInfo.from_row(r) for r in rows}


def document_fingerprints(store: Store) -> set[str]:
    docs = store.table("documents")
    if docs is None:
        return set()
    col = docs.search().select(["index_fingerprint"]).limit(None).to_arrow().column(0)
    return set(col.unique().to_pylist())


def record_index_info(store: Store, info: IndexInfo) -> bool:
    """Upsert INFO (only when it changed) and remove the rows no document carries;
    returns whether anything was written."""
    stored = read_index_infos(store)
    wrote = False
    current = stored.get(info.index_fingerprint)
    if current is None or not current.same_settings(info):
        row = pa.Table.from_pylist([info.to_row()], schema=tables.INDEX_SETTINGS)
        tbl = store.table(TABLE, create=True)
        _add_new_columns(tbl)
        (tbl.merge_insert("index_fingerprint")
         .when_matched_update_all().when_not_matched_insert_all().execute(row))
        wrote = True
    return remove_unused_infos(store, info.index_fingerprint, stored) or wrote


def remove_unused_infos(store: Store, keep: str,
                        stored: dict[str, IndexInfo] | None = None) -> bool:
    """Remove the rows of fingerprints no document carries, but KEEP's (the running
    index run's); returns whether any was removed. An index run calls it before it
    writes (`record_index_info`) and again after (its maintenance step): the documents it
    re-indexed no longer carry their old fingerprint then."""
    stored = read_index_infos(store) if stored is None else stored
    if set(stored) <= {keep}:  # the usual run: no other row, no scan of `documents`
        return False
    unused = sorted(set(stored) - document_fingerprints(store) - {keep})
    if unused:
        store.table(TABLE).delete(in_filter("index_fingerprint", unused))
    return bool(unused)


def built_text_index(store: Store) -> dict[str, Any] | None:
    """`TEXT_INDEX` when `nodes` has its full-text index with that analyzer, else None:
    what `index_settings.text_index_json` records (what is, not what was meant)."""
    found = store.text_index()
    return TEXT_INDEX if found is not None and text_analyzer_matches(
        found.index_details) else None


def update_text_index(store: Store, fingerprint: str) -> bool:
    """Record the full-text index `nodes` has now in the row of FINGERPRINT (after an
    index run's maintenance built it); returns whether the row changed."""
    tbl = store.table(TABLE)
    if tbl is None:
        return False
    built = built_text_index(store)
    value = None if built is None else json.dumps(built, sort_keys=True)
    current = read_index_infos(store, [fingerprint]).get(fingerprint)
    if current is None or current.text_index_json == value:
        return False
    row = pa.table({"index_fingerprint": [fingerprint], "text_index_json": [value]},
                   schema=pa.schema([tables.INDEX_SETTINGS.field("index_fingerprint"),
                                     tables.INDEX_SETTINGS.field("text_index_json")]))
    tbl.merge_insert("index_fingerprint").when_matched_update_all().execute(row)
    return True


def _add_new_columns(tbl) -> None:
    """Columns `index_settings` gained since TBL was created (nullable: `text_index_json`),
    added in place with nulls: one commit, no rewrite, the schema version unchanged."""
    have = set(tbl.schema.names)
    missing = [f for f in tables.INDEX_SETTINGS if f.name not in have]
    if missing:
        tbl.add_columns(missing)


def latest(infos: dict[str, IndexInfo]) -> IndexInfo | None:
    return max(infos.values(), key=lambda i: i.updated_at, default=None)


def search_defaults(infos: dict[str, IndexInfo], *, encoder: Any, weights: Any, uri: str
                    ) -> SearchDefaults:
    """The reader's defaults, after refusing what does not match the database.

    INFOS: the rows of the fingerprints the documents carry. The encoder must have the
    content the vectors were made with; WEIGHTS (a weights file the reader names, or
    None) must have the database's alpha and then give the defaults; without WEIGHTS the
    database's newest row does, and without rows the encoder's weights.
    """
    sha = getattr(encoder, "model_sha256", None)
    for info in infos.values():
        if info.encoder_sha256 and sha and info.encoder_sha256 != sha:
            raise StaleIndexError(
                f"database {uri!r} was indexed with encoder {info.encoder!r} of content "
                f"sha256 {info.encoder_sha256}; this query's encoder "
                f"{getattr(encoder, 'model_path', encoder.model_id)!r} has content {sha} "
                "(the model folder was written again, e.g. fine-tuned): query with the "
                "model the database was built with, or run `sproutrag index` with this "
                "one (it re-indexes every document)"
            )
    newest = latest(infos)
    if weights is not None:
        if newest is not None and weights.tree_fingerprint() != newest.tree_fingerprint:
            raise StaleIndexError(
                f"database {uri!r} was built with weights {newest.weights_source!r} (alpha "
                f"fingerprint {newest.tree_fingerprint}); this query names weights "
                f"{weights.source!r} (alpha fingerprint {weights.tree_fingerprint()}): "
                "leave encoding.weights unset to use the database's search settings, "
                "name the weights file it was indexed with, or index with these weights"
            )
        return SearchDefaults.of_weights(weights)
    if newest is not None:
        return newest.defaults()
    return SearchDefaults.of_weights(encoder.weights)
