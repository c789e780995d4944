"""Query batches are checked entry by entry, the same for the CLI and the flow."""

from __future__ import annotations

import json
import re

import pytest

from sproutrag.search.batch import Entry, check_batch, parse_lines, run_queries
from sproutrag.search.hits import QueryError, check_query_text


def test_each_bad_entry_gets_its_own_error_and_the_rest_runs():
    lines = [
        json.dumps({"qid": 7, "query": "integer qid"}),
        json.dumps({"qid": "a", "query": "ints as doc ids", "doc_ids": [1, 2]}),
        json.dumps({"qid": "b", "query": "null doc id", "doc_ids": [None]}),
        json.dumps({"qid": "c", "query": "a bare string", "doc_ids": "d1"}),
        "{not json",
        "",
        json.dumps({"qid": "a", "query": "duplicate"}),
        json.dumps({"qid": 1.5, "query": "float qid"}),
        json.dumps(["a", "list"]),
        json.dumps({"qid": "e", "query": 3}),
        json.dumps({"query": "no qid", "doc_ids": []}),
    ]
    checked = check_batch(parse_lines(line + "\n" for line in lines))
    by_qid = {q.qid: q for q in checked}
    assert [q.qid for q in checked] == ["7", "a", "b", "c", "line-5", "a", "line-8",
                                        "line-9", "e", "line-11"]
    assert by_qid["7"].error is None and by_qid["7"].query == "integer qid"
    assert checked[1].error is None and checked[1].doc_ids == ["1", "2"]
    assert "doc_ids must hold strings, got None at position 0" in checked[2].error
    assert 'got the string \'d1\' (write ["d1"])' in checked[3].error
    assert checked[4].error.startswith("line 5 is not a JSON object")
    assert "duplicate qid 'a' (first on line 2)" in checked[5].error
    assert "qid must be a string or an integer, got float" in checked[6].error
    assert "a query must be a JSON object" in checked[7].error
    assert "query must be a string, got int" in checked[8].error
    assert "doc_ids is empty" in checked[9].error


def test_a_misspelt_field_or_a_runs_setting_on_a_line_is_ignored_with_a_warning(caplog):
    """A line's "doc_id" searches every document, its "k" is not the run's: both are
    ignored, as the command-line contract ignores every unknown field, but said in a
    warning; a labelled set's own fields ("gold", "id" beside "qid") say nothing."""
    import logging

    lines = [{"qid": "t", "query": "traffic", "doc_id": ["m1"]},
             {"qid": "u", "query": "traffic", "k": 0},
             {"qid": "v", "query": "traffic", "budget_char": 300},
             {"qid": "w", "query": "x", "doc_ids": ["m1"], "gold": [], "id": 3, "type": "y"}]
    with caplog.at_level(logging.WARNING, logger="sproutrag.search"):
        checked = check_batch(lines)
    assert [q.error for q in checked] == [None] * 4 and checked[3].doc_ids == ["m1"]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3
    assert "query t (line 1): unknown field 'doc_id', ignored: did you mean 'doc_ids'?" in said[0]
    assert "'k' is a setting of the whole run" in said[1] and "ignored" in said[1]
    assert "did you mean 'budget_chars'?" in said[2]


@pytest.mark.parametrize("query, why", [
    ("", "query is empty"), ("  \n\t", "query is empty"), ("\x00\x00", "query is empty"),
    (" \x00 ", "query is empty"), ("\u200b\ufeff", "query is empty"),
    ("abc \ud800 def", "lone surrogate U+D800 at character 4"),
    ("bad \udcff utf8", "lone surrogate U+DCFF at character 4"),
])
def test_queries_that_are_not_text_are_refused(query, why):
    with pytest.raises(QueryError, match=re.escape(why)):
        check_query_text(query)
    [checked] = check_batch([{"qid": "q", "query": query}])
    assert why in checked.error
    assert check_query_text("a \x00 question?") == "a \x00 question?"


def test_surrogates_in_qids_and_doc_ids_fail_their_line_only():
    lines = ['{"qid": "a\\ud800", "query": "fine"}',
             '{"qid": "b", "query": "fine", "doc_ids": ["x\\udc80"]}',
             '{"qid": "c", "query": "abc \\ud800 def"}', '{"qid": "d", "query": "fine"}']
    checked = check_batch(parse_lines(line + "\n" for line in lines))
    assert [q.qid for q in checked] == ["line-1", "b", "c", "d"]
    assert "qid is not valid text" in checked[0].error
    assert "doc_ids[0] is not valid text" in checked[1].error
    assert "lone surrogate U+D800" in checked[2].error and checked[3].error is None


def test_run_queries_reports_per_entry_and_searches_the_good_ones():
    class Recorder:
        def __init__(self):
            self.calls = []

        def search(self, query, *, k, doc_ids, mode, where):
            self.calls.append((query, doc_ids, where))
            return []

    rec = Recorder()
    rows = run_queries(rec, [Entry(1, {"qid": 1, "query": "x", "doc_ids": [3]}),
                             Entry(2, error="line 2 is not a JSON object (x)"),
                             {"qid": 1, "query": "again"}])
    assert rec.calls == [("x", ["3"], None)]
    assert rows[0] == {"qid": "1", "results": []}
    assert rows[1]["qid"] == "line-2" and "not a JSON object" in rows[1]["error"]
    assert rows[2]["qid"] == "1" and "duplicate qid" in rows[2]["error"]


def test_a_line_that_fails_in_a_context_run_carries_its_budget():
    """With a budget (the run's, or the line's own) a failed line says so, as its context
    would have: the `results` table then records it as a context, not a top-k query."""
    class Failing:
        def context(self, query, **kwargs):
            raise QueryError("none of the doc_ids ['z'] is in the database")

    rows = run_queries(Failing(), [{"qid": 4, "query": 17},
                                   {"qid": 5, "query": "x", "budget_tokens": 90},
                                   {"qid": 6, "query": "x", "budget_chars": 0},
                                   {"qid": 7, "query": "x", "budget_chars": 0,
                                    "budget_tokens": 50}],
                       budget_chars=400)
    assert [{k: v for k, v in r.items() if k != "error"} for r in rows] == [
        {"qid": "4", "results": [], "budget_chars": 400},
        {"qid": "5", "results": [], "budget_chars": 400, "budget_tokens": 90},
        {"qid": "6", "results": [], "budget_chars": None},  # its own budget was the error
        {"qid": "7", "results": [], "budget_chars": None,
         "budget_tokens": 50}]  # its valid budget kept, not the run's
    assert "doc_ids ['z']" in rows[1]["error"] and "budget_chars" in rows[2]["error"]
    plain = run_queries(Failing(), [{"qid": 4, "query": 17}])
    assert set(plain[0]) == {"qid", "results", "error"}  # a top-k query's line, as before
