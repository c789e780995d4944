"""The `results` table: a query run's output lines as rows (every query has a row, with
its question; a context's rows keep its budget, totals, nodes and cut flag), a version-6
table migrated in place, many query runs compacted (toy store, no model)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from sproutrag.schemas import tables

from sproutrag.storage.rows import result_rows
from sproutrag.storage.store import Store
from tests.helpers import make_schema_3, toy_document

CONTEXT_LINE = {
    "qid": "c", "used_chars": 52, "budget_chars": 60,
    "results": [
        {"doc_id": "a", "node_id": "a:3", "node_ids": ["a:3", "a:2"], "score": 2.0,
         "spans": [[10, 40]], "text": "x" * 30},
        {"doc_id": "b", "node_id": "b:0", "node_ids": ["b:0"], "score": 1.0,
         "spans": [[0, 22]], "text": "y" * 22, "cut": True},
    ],
}
TOPK_LINE = {"qid": "t", "results": [
    {"doc_id": "a", "node_id": "a:5", "score": 0.5, "spans": [[0, 3], [9, 12]],
     "text": "one\ntwo"}]}
FAILED_LINE = {"qid": "f", "results": [], "error": "none of the doc_ids ['z'] is in the database"}
EMPTY_CONTEXT = {"qid": "e", "results": [], "used_chars": 0, "budget_chars": 1}


def test_every_line_becomes_rows_and_a_context_keeps_what_made_it():
    rows = result_rows([CONTEXT_LINE, TOPK_LINE, FAILED_LINE, EMPTY_CONTEXT], run_id="r",
                       k=None, default_k=5, mode="tree",
                       queries=["what?", "who?", None, "when?"]).to_pylist()
    assert [(r["qid"], r["rank"], r["query"]) for r in rows] == [
        ("c", 1, "what?"), ("c", 2, "what?"), ("t", 1, "who?"), ("f", 0, None),
        ("e", 0, "when?")]
    first, cut, topk, failed, empty = rows
    assert (first["node_ids"], first["cut"], cut["node_ids"], cut["cut"]) == (
        ["a:3", "a:2"], False, ["b:0"], True)
    for row in (first, cut):
        assert (row["budget_chars"], row["budget_tokens"], row["used_chars"],
                row["used_tokens"], row["k"]) == (60, None, 52, None, None)
    assert (topk["k"], topk["node_ids"], topk["cut"], topk["used_chars"],
            topk["budget_chars"], topk["spans"]) == (5, None, None, None, None,
                                                     [[0, 3], [9, 12]])
    assert (failed["error"], failed["k"], failed["doc_id"]) == (
        FAILED_LINE["error"], 5, None)
    # A context nothing fitted is a row too: no error, no hit, its budget and 0 used.
    assert (empty["error"], empty["doc_id"], empty["used_chars"], empty["budget_chars"]) == (
        None, None, 0, 1)
    # A context that failed (`run_queries` gives it its budget): a context's row, no k.
    [bad] = result_rows([{**FAILED_LINE, "budget_chars": 400}], run_id="r", k=None,
                        default_k=5, mode="tree").to_pylist()
    assert (bad["rank"], bad["k"], bad["budget_chars"], bad["used_chars"], bad["error"]) == (
        0, None, 400, None, FAILED_LINE["error"])
    given = result_rows([CONTEXT_LINE, TOPK_LINE], run_id="r", k=3, mode="tree").to_pylist()
    assert [r["k"] for r in given] == [3, 3, 3]  # a k given bounds both kinds


#: The columns `results` gained at schema version 7.
ADDED_AT_7 = ("query", "budget_chars", "budget_tokens", "used_chars", "used_tokens",
              "node_ids", "cut")


def _old_schema() -> pa.Schema:
    """`results` as schema version 6 wrote it: no question or context columns, k not
    nullable."""
    fields = [f.with_nullable(False) if f.name == "k" else f for f in tables.RESULTS
              if f.name not in ADDED_AT_7]
    return pa.schema(fields)


def test_a_version_6_results_table_gains_the_columns_in_place(store):
    """The index run's migration to version 7 adds the columns with nulls and relaxes
    `k`, rewriting no row; a query run then writes contexts to it."""
    from sproutrag.storage.migrate import migrate

    store.write([toy_document("a", "one two three")], "fp")
    old = tables.with_metadata(_old_schema(), encoder_id="fake/encoder", dim=8)
    tbl = store._db.create_table("results", schema=old)
    tbl.add(pa.Table.from_pylist([{
        "run_id": "q0", "qid": "old", "rank": 1, "doc_id": "a", "node_id": "a:0",
        "score": 0.5, "spans": [[0, 3]], "text": "one", "error": None, "mode": "tree",
        "k": 5, "created_at": datetime.now(UTC), "flow_run_id": None}], schema=old))
    make_schema_3(store.uri, "6")
    files = set(Path(store.uri).rglob("results.lance/data/*.lance"))
    assert migrate(store.uri)["results"] == "6" and "results" not in migrate(store.uri)
    assert files <= set(Path(store.uri).rglob("results.lance/data/*.lance"))

    opened = Store.open_existing(store.uri)
    opened.add_results(result_rows([CONTEXT_LINE], run_id="q1", k=None, mode="tree",
                                   queries=["what?"]))
    table = Store.open_existing(store.uri).table("results")
    assert table.schema.field("k").nullable and set(ADDED_AT_7) <= set(table.schema.names)
    assert table.schema.metadata[b"sproutrag.schema_version"] == tables.SCHEMA_VERSION.encode()
    rows = {(r["qid"], r["rank"]): r for r in table.to_arrow().to_pylist()}
    old_row = rows[("old", 1)]
    assert (old_row["k"], old_row["text"], old_row["node_ids"], old_row["cut"],
            old_row["query"]) == (5, "one", None, None, None)
    assert rows[("c", 2)]["cut"] is True and rows[("c", 1)]["k"] is None
    assert rows[("c", 1)]["query"] == "what?"


def test_an_index_runs_maintenance_compacts_the_results_of_many_query_runs(store):
    """Each query run appends one commit to `results`; the index run's maintenance
    compacts them once they reach its threshold, as it does `runs`, and keeps the rows."""
    store.write([toy_document("a", "one two three")], "fp")
    for n in range(8):
        store.add_results(result_rows([TOPK_LINE], run_id=f"q{n}", k=None, mode="tree"))
    tbl = store.table("results")
    assert tbl.stats()["fragment_stats"]["num_fragments"] == 8
    removed = store.maintain(run_id="r1", keep_versions_days=0, min_fragments=8,
                             min_old_versions=100)
    tbl = Store.open_existing(store.uri).table("results")
    assert removed["results"] >= 8 and len(tbl.list_versions()) == 1
    assert tbl.stats()["fragment_stats"]["num_fragments"] == 1
    assert sorted(r["run_id"] for r in tbl.to_arrow().to_pylist()) == [
        f"q{n}" for n in range(8)]
