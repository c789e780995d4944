"""The indexes an index run keeps on its tables (LanceDB's own; each derived from the rows,
so rebuilding one loses nothing).

* BTREE scalar indexes on `documents.doc_id`, `nodes.tree_id` and `nodes.doc_id`: the
  store finds a replaced document's row and trees through them (`ensure_scalar_indexes`).
* A cosine IVF_SQ vector index on `nodes.vector` once `nodes` holds `ANN_MIN_ROWS` rows:
  below that an exhaustive scan is fast and exact. About sqrt(rows) partitions; trained
  again once the table grew `RETRAIN_GROWTH` times past the rows it was trained on
  (`ensure_vector_index`; the rows and partitions are recorded in the dataset's config).
* A full-text index on `nodes.text` with `TEXT_ANALYZER` (`ensure_text_index`).

Rows appended after an index was built are still found (LanceDB scans them) until
`fold_new_rows` adds them to the index (the vector index's in delta indexes, merged every
`MAX_VECTOR_DELTAS` folds). An index that cannot be read, or one of a kind
whose answers are wrong (`WRONG_INDEXES`), is dropped at an index run's start
(`drop_damaged`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

ANN_MIN_ROWS = 100_000  # nodes; below this an exhaustive vector scan is fast and exact
#: The vector index is trained again once its table holds this many times the rows it was
#: trained on (twice the partitions then suit it: `vector_partitions`).
RETRAIN_GROWTH = 4
#: The vector index's folds (`fold_new_rows`) each add a delta segment holding only the
#: new rows until it has this many segments, then merge them all into one. Merging at
#: every fold rewrote the whole index (a fifth of `nodes`' bytes) at every run, a copy
#: each kept version held: over a week of nights at 300,000 rows the database averaged
#: 2.58x its live rows, 1.66x with 4; a search through 4 segments takes 1.18x the time of
#: one (docs/results.md, "The vector index folded in deltas").
MAX_VECTOR_DELTAS = 4
#: The key of the `nodes` Lance dataset's config under which `build_vector_index`
#: records its index: JSON {"rows": rows trained on, "partitions": IVF partitions,
#: "index": the index's name}.
VECTOR_INDEX_CONFIG = "sproutrag.vector_index"

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
#: Kinds of index whose answers are wrong in the Lance this project pins (pylance 9.0.0):
#: the end of its `type_url` -> why. Lance's JSON index (a BTREE over one path of a JSON
#: column, e.g. one a user builds on `documents.metadata`) finds no row for some of the
#: values it holds (docs/decisions.md), so a `--where` filter through it would lose
#: documents. SproutRAG builds none; `sproutrag check` reports one and an index run drops it.
WRONG_INDEXES = {"JsonIndexDetails": "a JSON index, which finds no row for some of its "
                                     "values in Lance 9.0.0: filters through it lose "
                                     "documents"}
#: The BITMAP indexes of columns with few values that searches filter on: table ->
#: columns. `nodes.left`: flat mode keeps the leaves (left = -1), about half the rows;
#: without the index every query evaluated that filter row by row (0.1-0.5 s at 1.2M rows).
BITMAP_INDEXES = {"nodes": ("left",)}


def text_analyzer_matches(details: dict[str, Any] | None,
                          analyzer: dict[str, Any] | None = None) -> bool:
    """Do an FTS index's details (`IndexConfig.index_details`) name ANALYZER (default
    `TEXT_ANALYZER`)?"""
    wanted = TEXT_ANALYZER if analyzer is None else analyzer
    return all((details or {}).get(k) == v for k, v in wanted.items())


def ensure_scalar_indexes(tables: Mapping[str, Any]) -> list[str]:
    """Create the BTREE indexes of `SCALAR_INDEXES` and the BITMAP ones of
    `BITMAP_INDEXES` missing from the non-empty TABLES (name -> table); returns
    "table.column" of those created."""
    from lancedb.index import Bitmap, BTree

    made = []
    for wanted, config in ((SCALAR_INDEXES, BTree), (BITMAP_INDEXES, Bitmap)):
        for name, columns in wanted.items():
            tbl = tables.get(name)
            if tbl is None or tbl.count_rows() == 0:
                continue
            have = {tuple(i.columns) for i in tbl.list_indices()}
            for column in columns:
                if (column,) not in have:
                    tbl.create_index(column, config=config(), replace=True)
                    made.append(f"{name}.{column}")
    return made


def fold_new_rows(tbl: Any, *, scalar_only: bool = True) -> bool:
    """Add the rows appended since the last fold to TBL's indexes: the BTREE ones only,
    or every index (the full-text and vector ones too). No retraining: new vectors join
    the partitions the index was trained with, in a delta index of their own until the
    vector index has `MAX_VECTOR_DELTAS` (then every delta is merged into one). Returns
    whether a commit was made (none when every index covers every row)."""
    found = [i for i in tbl.list_indices()
             if (not scalar_only or i.index_type == "BTree") and i.num_unindexed_rows]
    if not found:
        return False
    tbl.checkout_latest()
    others = [i.name for i in found if i.columns != ["vector"]]
    if others:
        tbl.to_lance().optimize.optimize_indices(index_names=others)
    vector = next((i.name for i in found if i.columns == ["vector"]), None)
    if vector is not None:
        tbl.checkout_latest()
        segments = tbl.index_stats(vector).num_indices or 1
        merge = segments if segments >= MAX_VECTOR_DELTAS else 0  # 0: a delta of its own
        tbl.to_lance().optimize.optimize_indices(index_names=[vector],
                                                 num_indices_to_merge=merge)
    tbl.checkout_latest()
    return True


def vector_partitions(rows: int) -> int:
    """The IVF partitions of a vector index trained on ROWS rows: about sqrt(ROWS)
    (LanceDB's guidance; its own default is about ROWS / 8192), at least 1."""
    return max(1, round(math.sqrt(max(rows, 0))))


def vector_index_record(tbl: Any) -> dict[str, int] | None:
    """The record of the vector index on TBL's `vector` that `build_vector_index` keeps in
    the Lance dataset's config (`VECTOR_INDEX_CONFIG`): {"rows": the rows it was trained
    on, "partitions": its IVF partitions}. None without an index, or for an index built
    before the record existed (with LanceDB's default partitions, about rows / 8192).
    The record names the index it describes: one built again under that name by other
    means than `build_vector_index` (the project builds none so) keeps a stale record;
    dropping the index (or the config key) has the next index run build it again."""
    found = next((i for i in tbl.list_indices() if i.columns == ["vector"]), None)
    raw = None if found is None else tbl.to_lance().config().get(VECTOR_INDEX_CONFIG)
    record = json.loads(raw) if raw else {}
    if found is None or record.get("index") != found.name or not record.get("partitions"):
        return None
    return {"rows": int(record["rows"]), "partitions": int(record["partitions"])}


def build_vector_index(tbl: Any) -> dict[str, Any]:
    """(Re)build the cosine IVF_SQ index on TBL's `vector` with `vector_partitions` of
    the rows it holds now, then record them in the dataset's config
    (`VECTOR_INDEX_CONFIG`); returns the record ({"rows", "partitions"}).

    The index replaces the one there in one commit: a reader searches the old index (or
    the new one) throughout. Costs one k-means training over a sample of the rows (256
    per partition) and one pass assigning every row to a partition.
    """
    from lancedb.index import IvfSq

    rows = tbl.count_rows()
    record = {"rows": rows, "partitions": vector_partitions(rows)}
    tbl.create_index("vector", config=IvfSq(distance_type="cosine",
                                              num_partitions=record["partitions"]),
                     replace=True)
    name = next(i.name for i in tbl.list_indices() if i.columns == ["vector"])
    tbl.checkout_latest()
    tbl.to_lance().update_config({VECTOR_INDEX_CONFIG: json.dumps({**record, "index": name})})
    tbl.checkout_latest()
    return record


def probe(tbl: Any, index: Any) -> str | None:
    """Why INDEX (an `IndexConfig` of TBL) cannot be used, or None: one tiny query that
    reads it (a lost or damaged index file fails every query that uses the index)."""
    from sproutrag.errors import short_error
    from sproutrag.storage.filters import sql_quote

    column = index.columns[0]
    try:
        if index.index_type == "FTS":
            query = tbl.search("probe", query_type="fts", fts_columns=column)
        elif index.index_type in ("BTree", "Bitmap", "LabelList"):
            first = tbl.search().select([column]).limit(1).to_list()  # a value it holds:
            if not first:  # its lookup opens the index's data; an empty table has none
                return None
            value = first[0][column]
            literal = value if isinstance(value, int) else sql_quote(str(value))
            query = tbl.search().where(f"{column} = {literal}")
        else:  # a vector index
            dim = tbl.schema.field(column).type.list_size
            query = tbl.search([0.0] * dim, vector_column_name=column)
        query.limit(1).to_list()
    except Exception as exc:  # noqa: BLE001 - whatever the read raises is the damage
        return short_error(exc)
    return None


def damaged_indexes(tbl: Any) -> dict[str, str]:
    """The indexes of TBL that cannot be used: index name -> why (`probe`)."""
    found = {i.name: probe(tbl, i) for i in tbl.list_indices()}
    return {name: why for name, why in found.items() if why}


def wrong_indexes(tbl: Any) -> dict[str, str]:
    """The indexes of TBL whose answers are wrong in the Lance this project pins: index
    name -> why (`WRONG_INDEXES`). LanceDB's `list_indices` does not list them; Lance's
    `describe_indices` does."""
    try:
        described = tbl.to_lance().describe_indices()
    except Exception:  # noqa: BLE001 - a table Lance cannot describe has none we know
        return {}
    return {d.name: why for d in described for kind, why in WRONG_INDEXES.items()
            if d.type_url.endswith(kind)}


def drop_damaged(tbl: Any) -> dict[str, str]:
    """Drop TBL's damaged indexes and those that answer wrongly (derived data: an index
    run builds its own again, and until then reads scan instead of failing); returns
    index name -> what was wrong ("cannot be read: ..." or "gives wrong answers: ...")."""
    dropped = {**{n: f"cannot be read: {why}" for n, why in damaged_indexes(tbl).items()},
               **{n: f"gives wrong answers: {why}" for n, why in wrong_indexes(tbl).items()}}
    for name in dropped:
        tbl.drop_index(name)
    return dropped


def ensure_vector_index(tbl: Any, *, min_rows: int = ANN_MIN_ROWS,
                        growth: float = RETRAIN_GROWTH) -> bool:
    """Keep a cosine IVF_SQ index on TBL's `vector` that suits its size.

    Created once TBL holds MIN_ROWS rows (below that an exhaustive scan is fast, and
    exact); built again (`build_vector_index`, partitions for the new size) once TBL
    holds more than GROWTH times the rows the index was trained on, and once for an
    index without a record (`vector_index_record`). Between two builds new rows join the
    partitions the index was trained with (`fold_new_rows`), which grow with them, and
    so does the share of the rows a query scans. Returns whether an index exists now.
    """
    rows = tbl.count_rows()
    record = vector_index_record(tbl)
    exists = record is not None or any(i.columns == ["vector"] for i in tbl.list_indices())
    if rows == 0 or (not exists and rows < min_rows):
        return exists
    if record is None or rows > growth * record["rows"]:
        build_vector_index(tbl)
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
