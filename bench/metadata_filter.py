"""A `where` filter on a metadata field: the JSON column against the text column.

    .venv/bin/python bench/metadata_filter.py [--sizes 10000 100000 1000000]

For each size N, a `documents`-like LanceDB table of N rows (doc_id, tree_id,
`metadata_json` and `metadata` as the index run writes them: `{"customer", "year",
"tags"}`, 1,000 customers) is written to a temporary folder. Then the filters a query
runs (`TablesView.matching`: the matching doc_id and tree_id) are timed, median of 5:

* reference: `metadata_json LIKE '%"customer": "c42"%'`, the only way before 0.12.0;
* `json_get_string(metadata, 'customer') = 'c42'` (the same documents);
* `json_get_int(metadata, 'year') = 2024 AND json_array_contains(metadata, '$.tags',
  'nda')`, which no LIKE can say exactly.

Prints the times, the ratio of each to the reference at the same size, and the table's
bytes with and without the JSON column. Then the migration that adds the column: a
version-6 database (every `documents` column but `metadata`, the same metadata, short
texts; an empty `nodes`) migrated in place by `storage.migrate.migrate`, timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sproutrag.schemas import tables  # noqa: E402

from bench.scale import disk_bytes  # noqa: E402

FILTERS = {
    "LIKE on metadata_json (reference)": "metadata_json LIKE '%\"customer\": \"c42\"%'",
    "json_get_string": "json_get_string(metadata, 'customer') = 'c42'",
    "json_get_int AND json_array_contains":
        "json_get_int(metadata, 'year') = 2024 AND json_array_contains(metadata, '$.tags', "
        "'nda')",
}


def _rows(n: int) -> pa.Table:
    texts = [json.dumps({"customer": f"c{i % 1000}", "year": 2015 + i % 10,
                         "tags": ["nda"] if i % 3 == 0 else ["msa", "sow"]}, sort_keys=True)
             for i in range(n)]
    schema = pa.schema([tables.DOCUMENTS.field(c) for c in
                        ("doc_id", "tree_id", "metadata_json", "metadata")])
    return pa.table({"doc_id": [f"doc-{i}" for i in range(n)],
                     "tree_id": [f"t{i}" for i in range(n)], "metadata_json": texts,
                     "metadata": texts}, schema=schema)


def _median_ms(tbl, where: str) -> tuple[float, int]:
    times, found = [], 0
    for _ in range(5):
        t0 = time.perf_counter()
        found = tbl.search().where(where).select(["doc_id", "tree_id"]).limit(None) \
            .to_arrow().num_rows
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, found


def measure(n: int) -> None:
    import lancedb

    with tempfile.TemporaryDirectory() as tmp:
        tbl = lancedb.connect(tmp).create_table("documents", data=_rows(n))
        file_format = tbl.to_lance().data_storage_version
        ref = None
        for label, where in FILTERS.items():
            ms, found = _median_ms(tbl, where)
            ref = ref or ms
            print(f"{n:>9,} rows  {label:<38} {ms:9.1f} ms  {ms / ref:5.2f}x  "
                  f"({found:,} documents)")
        lancedb.connect(tmp).create_table("text_only",
                                          data=_rows(n).drop_columns(["metadata"]))
        with_json, text_only = (disk_bytes(tmp, names=(t,)) for t in ("documents", "text_only"))
        print(f"{n:>9,} rows  table files {with_json / 1e6:.1f} MB with the JSON column, "
              f"{text_only / 1e6:.1f} MB without ({with_json / text_only:.2f}x; format "
              f"{file_format})")


def measure_migration(n: int) -> None:
    import lancedb

    from sproutrag.storage.migrate import migrate

    meta = {**tables.table_metadata(encoder_id="bench/encoder", dim=4),
            b"sproutrag.schema_version": b"6"}
    rows = _rows(n)
    columns = {"doc_id": rows["doc_id"], "tree_id": rows["tree_id"],
               "metadata_json": rows["metadata_json"],
               "source": pa.array([f"corpus.jsonl:{i}" for i in range(n)]),
               "content_hash": pa.array(["0" * 64] * n), "text": pa.array(["a text."] * n),
               "n_chars": pa.array([7] * n, pa.int64()), "n_chunks": pa.array([1] * n, pa.int32()),
               "index_fingerprint": pa.array(["fp"] * n),
               "indexed_at": pa.array([0] * n, pa.timestamp("us", tz="UTC"))}
    old = pa.schema([f for f in tables.DOCUMENTS if f.name != "metadata"], metadata=meta)
    data = pa.table({f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in old},
                    schema=old)
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(tmp)
        db.create_table("nodes", schema=pa.schema(list(tables.nodes_schema(4)), metadata=meta))
        db.create_table("documents", data=data, schema=old)
        t0 = time.perf_counter()
        done = migrate(tmp)
        seconds = time.perf_counter() - t0
        filled = db.open_table("documents").count_rows("metadata IS NOT NULL")
    print(f"{n:>9,} rows  migrated from {done['documents']} in {seconds:.2f} s "
          f"({filled:,} rows with metadata)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    sizes = ap.parse_args().sizes
    for n in sizes:
        measure(n)
    for n in sizes:
        measure_migration(n)


if __name__ == "__main__":
    main()
