"""The indexes an index run keeps on its tables (LanceDB's own; each derived from the rows,
so rebuilding one loses nothing).

* BTREE scalar indexes on `documents.doc_id`, `nodes.tree_id` and `nodes.doc_id`: the
  store finds a replaced document's row and trees through them (`ensure_scalar_indexes`).
* A cosine IVF_SQ vector index on `nodes.vector` once `nodes` holds `ANN_MIN_ROWS` rows:
  below that an exhaustive scan is fast and exact (`ensure_vector_index`).
* A full-text index on `nodes.text` with `TEXT_ANALYZER` (`ensure_text_index`).

Rows appended after an index was built are still found (LanceDB scans them) until
`fold_new_rows` adds them to the index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

#: The scalar (BTREE) indexes the store looks rows up through: table -> columns.
SCALAR_INDEXES = {"documents": ("doc_id",), "nodes": ("tree_id", "doc_id")}


def text_analyzer_matches(details: dict[str, Any] | None,
                          analyzer: dict[str, Any] | None = None) -> bool:
    """Do an FTS index's details (`IndexConfig.index_details`) name ANALYZER (default
    `TEXT_ANALYZER`)?"""
    wanted = TEXT_ANALYZER if analyzer is None else analyzer
    return all((details or {}).get(k) == v for k, v in wanted.items())


def ensure_scalar_indexes(tables: Mapping[str, Any]) -> list[str]:
    """Create the BTREE indexes of `SCALAR_INDEXES` missing from the non-empty TABLES
    (name -> table); returns "table.column" of those created."""
    from lancedb.index import BTree

    made = []
    for name, columns in SCALAR_INDEXES.items():
        tbl = tables.get(name)
        if tbl is None or tbl.count_rows() == 0:
            continue
        have = {tuple(i.columns) for i in tbl.list_indices()}
        for column in columns:
            if (column,) not in have:
                tbl.create_index(column, config=BTree(), replace=True)
                made.append(f"{name}.{column}")
    return made


def fold_new_rows(tbl: Any, *, scalar_only: bool = True) -> bool:
    """Add the rows appended since the last fold to TBL's indexes: the BTREE ones only,
    or every index (the full-text and vector ones too). No retraining: new vectors join
    the partitions the index was trained with. Returns whether a commit was made (none
    when every index covers every row)."""
    names = [i.name for i in tbl.list_indices()
             if (not scalar_only or i.index_type == "BTree") and i.num_unindexed_rows]
    if names:
        tbl.checkout_latest()
        tbl.to_lance().optimize.optimize_indices(index_names=names)
        tbl.checkout_latest()
    return bool(names)


def ensure_vector_index(tbl: Any, *, min_rows: int = ANN_MIN_ROWS) -> bool:
    """Create a cosine IVF_SQ index on TBL's `vector` once it holds MIN_ROWS rows.

    Below MIN_ROWS an exhaustive scan is fast (and exact); above it the index keeps the
    first stage of a query in milliseconds. Returns whether an index exists now.
    """
    if any(i.columns == ["vector"] for i in tbl.list_indices()):
        return True
    if tbl.count_rows() < min_rows:
        return False
    from lancedb.index import IvfSq

    tbl.create_index("vector", config=IvfSq(distance_type="cosine"))
    return True


def text_index(tbl: Any) -> Any | None:
    """The full-text index of TBL's `text` (LanceDB's `IndexConfig`), or None."""
    return next((i for i in tbl.list_indices()
                 if i.columns == ["text"] and i.index_type == "FTS"), None)


def ensure_text_index(tbl: Any) -> bool:
    """Create the full-text index of TBL's `text` with `TEXT_ANALYZER` (LanceDB's native
    FTS), or build it again when the one there was made with another analyzer (LanceDB
    records it in the index's details). Deleted rows never match. Returns whether one
    exists (none on an empty table)."""
    if tbl.count_rows() == 0:
        return False
    found = text_index(tbl)
    if found is not None and text_analyzer_matches(found.index_details):
        return True
    from lancedb.index import FTS

    tbl.create_index("text", config=FTS(**TEXT_ANALYZER), replace=True)
    return True
