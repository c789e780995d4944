"""A document's metadata: a JSONL line's other fields, a file's path, size and time, stored
in `documents` beside its text; a change of metadata alone updates the row in place and
re-encodes nothing (no `nodes` row written)."""

from __future__ import annotations

import json
import os
import time

import pytest

from sproutrag.names import name_key
from sproutrag.storage.store import Store
from tests.helpers import TEXTS, run_index, write_files, write_jsonl

pytestmark = pytest.mark.model

LINES = [
    {"doc_id": "a", "text": "The supplier delivers within 30 days. Payment is due in 45 days.",
     "title": "Supply terms", "source": "crm", "year": 2025, "tags": ["supply", "terms"]},
    {"doc_id": "b", "text": "Staff may work remotely three days a week. Managers approve it."},
]


def _rows(db) -> dict[str, dict]:
    docs = Store.open_existing(str(db)).table("documents").to_arrow().to_pylist()
    return {r["doc_id"]: r for r in docs}


def test_jsonl_fields_are_metadata_and_a_metadata_change_re_encodes_nothing(
        prefect_harness, tmp_path):
    corpus, db = tmp_path / "c.jsonl", tmp_path / "db"
    write_jsonl(corpus, LINES)
    run_index(corpus, db)
    rows = _rows(db)
    assert rows["a"]["title"] == "Supply terms"
    assert json.loads(rows["a"]["metadata_json"]) == {
        "source": "crm", "tags": ["supply", "terms"], "title": "Supply terms", "year": 2025}
    assert rows["b"]["title"] is None and rows["b"]["metadata_json"] is None
    # names: the title; none for a text whose first line is a sentence
    assert (rows["a"]["name"], rows["a"]["name_key"]) == ("supply terms",
                                                         name_key("supply terms"))
    assert (rows["b"]["name"], rows["b"]["name_key"]) == (None, None)
    nodes = Store.open_existing(str(db)).table("nodes")
    before = (nodes.version, nodes.count_rows(), rows["a"]["tree_id"])

    write_jsonl(corpus, [{**LINES[0], "year": 2026, "title": "Supply terms (2026)"},
                         LINES[1]])
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_unchanged"], run["n_nodes"]) == (0, 2, 0)
    # a job that follows changes learns of it from the run (it was counted unchanged only)
    assert "metadata updated in place for 1 unchanged documents (a)" in run["message"]
    rows = _rows(db)
    assert rows["a"]["title"] == "Supply terms (2026)"
    assert json.loads(rows["a"]["metadata_json"])["year"] == 2026
    assert rows["a"]["name"] == "supply terms"  # the trailing parenthesis dropped
    # The JSON column follows the in-place update, and a filter reads its fields.
    assert json.loads(rows["a"]["metadata"])["year"] == 2026 and rows["b"]["metadata"] is None
    from sproutrag.search.retriever import QueryError, Retriever

    retriever = Retriever(str(db))
    for where in ("json_get_int(metadata, 'year') = 2026",
                  "json_array_contains(metadata, '$.tags', 'supply')"):
        hits = retriever.search("when is payment due", k=3, where=where)
        assert hits and {h.doc_id for h in hits} == {"a"}, where
    with pytest.raises(QueryError, match="no document matches"):
        retriever.search("when is payment due", k=3,
                         where="json_get_int(metadata, 'year') = 2025")
    write_jsonl(corpus, [{k: v for k, v in LINES[0].items() if k != "title"}, LINES[1]])
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_nodes"]) == (0, 0)
    rows = _rows(db)  # no title now, and the first line is a sentence: no name
    assert (rows["a"]["title"], rows["a"]["name"], rows["a"]["name_key"]) == (None, None, None)
    nodes = Store.open_existing(str(db)).table("nodes")
    assert (nodes.version, nodes.count_rows(), rows["a"]["tree_id"]) == before


#: A text of one line over 100 characters with a space as its 101st: cut there and
#: stripped, the update of its moved line gave it a name its text does not have.
LONG_LINE = {"doc_id": "c", "text": "x" * 99 + "y and then the sentence goes on well "
                                    "past the length of any name. It ends here."}


def test_a_moved_jsonl_line_gets_its_new_source_and_is_not_re_encoded(
        prefect_harness, tmp_path):
    from sproutrag.storage.check import check_database

    corpus, db = tmp_path / "c.jsonl", tmp_path / "db"
    gone = {"doc_id": "z", "text": "An early line that is removed before the next run."}
    write_jsonl(corpus, [gone, *LINES, LONG_LINE])
    run_index(corpus, db)
    assert _rows(db)["b"]["source"] == f"{corpus}:3"
    trees = {d: r["tree_id"] for d, r in _rows(db).items() if d != "z"}

    write_jsonl(corpus, [*LINES, LONG_LINE])  # every line moves up one
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_deleted"], run["n_unchanged"], run["n_nodes"]) == (
        0, 1, 3, 0)
    assert "metadata updated" not in (run["message"] or "")  # moved lines, same fields
    rows = _rows(db)
    assert {d: r["source"] for d, r in rows.items()} == {"a": f"{corpus}:1",
                                                        "b": f"{corpus}:2",
                                                        "c": f"{corpus}:3"}
    assert (rows["c"]["name"], rows["c"]["name_key"]) == (None, None)
    assert check_database(str(db)).healthy
    assert {d: r["tree_id"] for d, r in rows.items()} == trees  # not re-encoded


def test_a_file_s_path_size_and_time_are_stored(prefect_harness, tmp_path):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    when = time.time() - 3600
    for path in corpus.rglob("*.*"):
        os.utime(path, (when, when))
    run_index(corpus, db)
    for doc_id, row in _rows(db).items():
        path = corpus / doc_id
        assert row["source"] == f"{corpus}/{doc_id}"
        assert row["source_size"] == path.stat().st_size
        assert abs(row["modified_at"].timestamp() - path.stat().st_mtime) < 1e-3
        assert row["metadata_json"] is None and row["source_etag"] is None


def test_queries_filter_on_documents_columns(prefect_harness, tmp_path):
    from tests.helpers import run_cli

    corpus, db = tmp_path / "c.jsonl", tmp_path / "db"
    write_jsonl(corpus, LINES)
    run_index(corpus, db)
    ok = run_cli("query", "--db", str(db), "--where", "title = 'Supply terms'",
                 "--k", "3", "When is payment due?")
    assert ok.returncode == 0, ok.stderr
    assert "a:" in ok.stdout and "b:" not in ok.stdout
    bad = run_cli("query", "--db", str(db), "--where", "colour = 'red'", "payment")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "colour" in bad.stderr
    queries, out = tmp_path / "q.jsonl", tmp_path / "r.jsonl"
    write_jsonl(queries, [
        {"qid": "1", "query": "remote work", "where": "metadata_json IS NULL"},
        {"qid": "2", "query": "remote work", "where": "title = 'Supply terms'"},
        {"qid": "3", "query": "remote work", "where": "title = 'none such'"},
    ])
    batch = run_cli("query", "--db", str(db), "--queries", str(queries), "--out", str(out))
    assert batch.returncode == 3, batch.stderr
    rows = {r["qid"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert {h["doc_id"] for h in rows["1"]["results"]} == {"b"}
    assert {h["doc_id"] for h in rows["2"]["results"]} == {"a"}
    assert "no document matches the filter" in rows["3"]["error"]
