"""Labelled datasets on disk: JSON Lines round trip, gold spans, usable queries."""

from __future__ import annotations

from sproutrag.learn.datasets import gold_spans, read_jsonl, usable_queries, write_jsonl


def test_jsonl_round_trip_keeps_unicode_and_skips_blank_lines(tmp_path):
    rows = [{"doc_id": "a", "text": "Café, naïve — 東京"}, {"doc_id": 2, "text": ""}]
    path = tmp_path / "new" / "dev.docs.jsonl"
    write_jsonl(path, rows)
    assert "東京" in path.read_text(encoding="utf-8")  # not \\u-escaped
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n  \n")
    assert read_jsonl(path) == rows


def test_gold_spans_are_typed_triples():
    q = {"gold": [{"doc_id": 7, "start": "3", "end": 9}]}
    assert gold_spans(q) == [("7", 3, 9)]
    assert gold_spans({"query": "no gold"}) == []


def test_usable_queries_need_gold_and_every_document():
    gold = [{"doc_id": "a", "start": 0, "end": 4}]
    queries = [
        {"qid": 1, "doc_ids": ["a"], "gold": gold},
        {"qid": 2, "doc_ids": ["a", "missing"], "gold": gold},  # a document not featurized
        {"qid": 3, "doc_ids": ["a"], "gold": []},  # nothing to score
        {"qid": 4, "gold": [{"doc_id": "b", "start": 1, "end": 2}, *gold]},  # ids from gold
    ]
    got = usable_queries(queries, {"a": None, "b": None})
    assert [q["qid"] for q in got] == [1, 4]
    assert got[1]["doc_ids"] == ["a", "b"]
