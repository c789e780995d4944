"""Labelled datasets on disk: JSON Lines round trip, gold spans, usable queries."""

from __future__ import annotations

import json
import re

import pytest

from sproutrag.errors import DatasetError
from sproutrag.learn.datasets import (
    gold_spans,
    read_jsonl,
    scorable_queries,
    sort_queries,
    usable_queries,
    write_jsonl,
)


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
        {"qid": 4, "gold": [{"doc_id": "b", "start": 1, "end": 2}, *gold]},  # no doc_ids
    ]
    got = usable_queries(queries, {"a": None, "b": None, "c": None})
    assert [q["qid"] for q in got] == [1, 4]
    assert got[1]["doc_ids"] == ["a", "b", "c"]  # every document, not its gold's


def test_sort_queries_says_why_a_query_is_not_scored():
    gold = [{"doc_id": "a", "start": 0, "end": 4}]
    queries = [
        {"qid": "ok", "doc_ids": ["a", "empty"], "gold": gold},  # searched in "a" alone
        {"qid": "nogold", "doc_ids": ["a"], "gold": []},
        {"qid": "missing", "doc_ids": ["a", "z"], "gold": gold},
        {"qid": "lost", "gold": [{"doc_id": "y", "start": 0, "end": 1}]},
        {"qid": "blank", "doc_ids": ["empty"], "gold": [{"doc_id": "empty", "start": 0,
                                                          "end": 1}]},
    ]
    usable, dropped = sort_queries(queries, {"a"}, known={"a", "empty"})
    assert [(q["qid"], q["doc_ids"]) for q in usable] == [("ok", ["a"])]
    assert dropped == [
        "qid 'nogold' has no gold evidence",
        "qid 'missing' names document 'z', which is not among the documents given",
        "qid 'lost' has gold evidence in document 'y', which is not among the documents given",
        "qid 'blank' has no document with text"]
    said = []
    kw = {"queries_path": "q.jsonl", "docs_path": "d.jsonl"}
    assert scorable_queries(queries, {"a"}, known={"a", "empty"}, log=said.append, **kw)
    assert said == ["warning: 4 of 5 queries are not scored: " + "; ".join(dropped)]


@pytest.mark.parametrize("line, why", [
    ('{"doc_id": "a", "text": ', "line 2 is not a JSON object (Expecting value at column"),
    ('[1, 2]', "line 2 is not a JSON object (a list)"),
    (b'{"doc_id": "\xff"}', "line 2 is not UTF-8 text"),
])
def test_a_malformed_line_is_named_by_file_and_line(tmp_path, line, why):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"doc_id": "a", "text": "x"}\n'
                     + (line if isinstance(line, bytes) else line.encode()) + b"\n")
    with pytest.raises(DatasetError, match="^" + re.escape(f"{path} {why}")):
        read_jsonl(path)


def test_no_scorable_query_is_an_error_naming_the_reason():
    gold = [{"doc_id": "a", "start": 0, "end": 4}]
    kw = {"queries_path": "q.jsonl", "docs_path": "d.jsonl"}
    assert scorable_queries([{"qid": 1, "gold": gold}], {"a"}, **kw)[0]["doc_ids"] == ["a"]
    with pytest.raises(DatasetError, match="q.jsonl: no query can be scored: the documents "
                       "of its 1 queries with gold evidence are not all in d.jsonl "
                       "\\(e.g. 'a' is not\\)"):
        scorable_queries([{"qid": 1, "gold": gold}], {"b"}, **kw)
    with pytest.raises(DatasetError, match="no query can be scored: the documents of its 1 "
                       "queries with gold evidence are not all in d.jsonl \\(e.g. 'x' is"):
        scorable_queries([{"qid": 1, "gold": [{"doc_id": "x", "start": 0, "end": 1}]}],
                         {"a"}, **kw)  # no doc_ids, and its gold lies elsewhere
    with pytest.raises(DatasetError, match="none of its 1 queries has gold evidence"):
        scorable_queries([{"qid": 1, "gold": []}], {"a"}, **kw)
    with pytest.raises(DatasetError, match="it holds no query"):
        scorable_queries([], {"a"}, **kw)


def test_trained_with_names_the_config_whose_training_sets_hold_the_queries(tmp_path):
    from sproutrag.learn.datasets import file_sha256, trained_with
    from sproutrag.learn.report import scored

    queries, other = tmp_path / "train.queries.jsonl", tmp_path / "dev.queries.jsonl"
    queries.write_text('{"qid": 1}\n', encoding="utf-8")
    other.write_text('{"qid": 2}\n', encoding="utf-8")
    model = tmp_path / "model"
    model.mkdir()
    weights = model / "weights.json"
    assert trained_with(weights, queries) is None  # no config.json beside the weights
    (model / "config.json").write_text(json.dumps({"data": {"sets": [
        {"queries": "elsewhere/train.queries.jsonl", "queries_sha256": file_sha256(queries)}
    ]}}), encoding="utf-8")
    assert trained_with(weights, queries) == model / "config.json"  # by content, not name
    assert trained_with(weights, other) is None
    (model / "config.json").write_text("{not json", encoding="utf-8")
    assert trained_with(weights, queries) is None
    line = scored({"n_queries": 3, "n_docs": 2, "trained_on_queries": "m/config.json"})
    assert line.startswith("Scored 3 queries over 2 documents.")
    assert "**These queries trained the weights** (m/config.json names them)" in line
