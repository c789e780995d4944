"""The `results` table: a query run's output lines as rows (every query has a row; a
context's rows keep its budget, totals, nodes and cut flag), and a table written before
those columns existed gains them in place (toy store, no model)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from sproutrag.schemas import tables

from sproutrag.storage.rows import result_rows
from sproutrag.storage.store import Store
from tests.helpers import toy_document

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
    given = result_rows([CONTEXT_LINE, TOPK_LINE], run_id="r", k=3, mode="tree").to_pylist()
    assert [r["k"] for r in given] == [3, 3, 3]  # a k given bounds both kinds


def _old_schema() -> pa.Schema:
    """`results` as 0.11 wrote it: no context columns, k not nullable."""
    fields = [f.with_nullable(False) if f.name == "k" else f for f in tables.RESULTS
              if f.name not in tables.RESULTS_ADDED]
    return pa.schema(fields)


def test_an_older_results_table_gains_the_columns_in_place(store):
    store.write([toy_document("a", "one two three")], "fp")
    old = tables.with_metadata(_old_schema(), encoder_id="fake/encoder", dim=8)
    tbl = store._db.create_table("results", schema=old)
    tbl.add(pa.Table.from_pylist([{
        "run_id": "q0", "qid": "old", "rank": 1, "doc_id": "a", "node_id": "a:0",
        "score": 0.5, "spans": [[0, 3]], "text": "one", "error": None, "mode": "tree",
        "k": 5, "created_at": datetime.now(UTC), "flow_run_id": None}], schema=old))
    before = tbl.version

    reopened = Store.open_existing(store.uri)
    reopened.add_results(result_rows([CONTEXT_LINE], run_id="q1", k=None, mode="tree"))
    table = Store.open_existing(store.uri).table("results")
    assert table.schema.field("k").nullable
    assert set(tables.RESULTS_ADDED) <= set(table.schema.names)
    assert table.schema.metadata[b"sproutrag.schema_version"] == tables.SCHEMA_VERSION.encode()
    rows = {(r["qid"], r["rank"]): r for r in table.to_arrow().to_pylist()}
    assert rows[("old", 1)]["k"] == 5 and rows[("old", 1)]["node_ids"] is None
    assert rows[("old", 1)]["text"] == "one" and rows[("old", 1)]["cut"] is None
    assert rows[("c", 2)]["cut"] is True and rows[("c", 1)]["k"] is None
    # Two commits to upgrade, one to add: no row rewritten, and none next time.
    assert table.version == before + 3
    Store.open_existing(store.uri).add_results(
        result_rows([TOPK_LINE], run_id="q2", k=None, mode="tree"))
    assert Store.open_existing(store.uri).table("results").version == before + 4


def test_two_query_runs_upgrading_one_table_both_write(store):
    """Two runs that opened the older table before either upgraded it: the second's
    upgrade conflicts with the first's commit, reads the table again and goes on."""
    store.write([toy_document("a", "one two three")], "fp")
    old = tables.with_metadata(_old_schema(), encoder_id="fake/encoder", dim=8)
    store._db.create_table("results", schema=old)
    first, second = Store.open_existing(store.uri), Store.open_existing(store.uri)
    first.table("results"), second.table("results")  # both handles at the old version
    first.add_results(result_rows([CONTEXT_LINE], run_id="q1", k=None, mode="tree"))
    second.add_results(result_rows([TOPK_LINE], run_id="q2", k=None, mode="tree"))
    rows = Store.open_existing(store.uri).table("results").to_arrow().to_pylist()
    assert sorted((r["run_id"], r["rank"]) for r in rows) == [("q1", 1), ("q1", 2), ("q2", 1)]


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


def test_a_commit_conflict_on_results_does_not_fail_the_index_run(store, monkeypatch):
    """A query run that upgrades `results` while the index run compacts it commits first
    (Lance refuses the compaction): the index run leaves `results` to its next run."""
    from sproutrag.storage import maintenance

    store.write([toy_document("a", "one two three")], "fp")
    store.add_results(result_rows([TOPK_LINE], run_id="q", k=None, mode="tree"))
    real = maintenance.optimize_runs

    def conflicting(tbl, **kwargs):
        if tbl.name == "results":
            raise RuntimeError("lance error: Retryable commit conflict for version 3")
        return real(tbl, **kwargs)

    monkeypatch.setattr(maintenance, "optimize_runs", conflicting)
    assert "results" not in store.maintain(run_id="r1", keep_versions_days=0,
                                           min_fragments=1, min_old_versions=1)
    monkeypatch.setattr(maintenance, "optimize_runs",
                        lambda tbl, **kw: (_ for _ in ()).throw(RuntimeError("disk full")))
    with pytest.raises(RuntimeError, match="disk full"):  # anything else still fails
        store.maintain(run_id="r2", keep_versions_days=0, min_fragments=1,
                       min_old_versions=1)
