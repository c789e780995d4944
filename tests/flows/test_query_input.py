"""A batch with bad entries: the CLI and the query-corpus flow give each its own error
line and run the rest, identically; the `results` table carries string qids, each line's
question, the schema metadata and the flow run's id."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.helpers import CLI, ROOT

pytestmark = pytest.mark.model

LINES = [
    json.dumps({"qid": 1, "query": "How many days does the customer have to dispute an invoice?"}),
    json.dumps({"qid": "ints", "query": "termination for convenience", "doc_ids": [1, 2]}),
    json.dumps({"qid": "nulls", "query": "termination", "doc_ids": [None]}),
    json.dumps({"qid": "bare", "query": "stipend", "doc_ids": "policies/remote_work_faq.md"}),
    '{"qid": "broken", "query": ',
    json.dumps({"qid": 1, "query": "a duplicate of the first"}),
    json.dumps({"qid": "ok", "query": "stipend", "doc_ids": ["policies/remote_work_faq.md"]}),
    '{"qid": "surrogate", "query": "abc \\ud800 def"}',  # JSON can hold what UTF-8 cannot
]


def _strip_scores(rows: list[dict]) -> list[dict]:
    return [{**r, "results": [{k: v for k, v in h.items() if k != "score"}
                              for h in r["results"]]} for r in rows]


def test_bad_entries_fail_alone_the_same_way_in_the_cli_and_the_flow(sample_index, tmp_path):
    import lancedb
    from sproutrag.flows.query_corpus import query_corpus

    from sproutrag.ingest.run_summary import QueriesFailedError

    db = str(tmp_path / "db")  # a copy: the shared sample database stays as it is
    shutil.copytree(sample_index[0], db)
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    cli_out, flow_out = tmp_path / "cli.jsonl", tmp_path / "flow.jsonl"
    proc = subprocess.run(
        [*CLI, "query", "--db", db, "--queries", str(queries),
         "--out", str(cli_out)], capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    with pytest.raises(QueriesFailedError) as failed:  # the flow goes on to the end
        query_corpus(queries=str(queries), db=db, out=str(flow_out))
    summary = failed.value.row
    assert (summary["n_queries"], summary["n_failed"]) == (8, 6)
    cli = [json.loads(x) for x in cli_out.read_text().splitlines()]
    flow = [json.loads(x) for x in flow_out.read_text().splitlines()]
    assert _strip_scores(cli) == _strip_scores(flow)
    assert [r["qid"] for r in cli] == ["1", "ints", "nulls", "bare", "line-5", "1", "ok",
                                       "surrogate"]
    errors = {n: r.get("error", "") for n, r in enumerate(cli)}
    assert cli[0]["results"] and cli[6]["results"] and not errors[0] and not errors[6]
    assert "none of the doc_ids ['1', '2']" in errors[1]
    assert "doc_ids must hold strings" in errors[2]
    assert "got the string" in errors[3] and "not a JSON object" in errors[4]
    assert "duplicate qid '1'" in errors[5]
    assert "not valid text: a lone surrogate U+D800" in errors[7]

    table = lancedb.connect(db).open_table("results")
    meta = table.schema.metadata
    assert meta[b"sproutrag.schema_version"] == b"7" and meta[b"sproutrag.dim"] == b"384"
    rows = table.to_arrow().to_pylist()
    mine = [r for r in rows if r["run_id"] == summary["run_id"]]
    assert {r["qid"] for r in mine} == {"1", "ints", "nulls", "bare", "line-5", "ok",
                                        "surrogate"}
    assert {r["flow_run_id"] for r in mine} == {summary["flow_run_id"]} != {None}
    # Top-k rows: the run's k (5, not given), no context columns; each its question as
    # its line gave it (the broken line has none, nor the one no table can store).
    assert {(r["k"], r["budget_chars"], r["used_chars"], r["cut"]) for r in mine} == {
        (5, None, None, None)}
    asked = {(r["qid"], r["rank"] > 0, r["query"]) for r in mine}
    assert asked == {("1", True, json.loads(LINES[0])["query"]),
                     ("1", False, "a duplicate of the first"),
                     ("ints", False, "termination for convenience"),
                     ("nulls", False, "termination"), ("bare", False, "stipend"),
                     ("line-5", False, None), ("ok", True, "stipend"),
                     ("surrogate", False, None)}


def test_bad_parameters_fail_the_flow_before_any_work(prefect_harness, tmp_path):
    from sproutrag.flows.query_corpus import query_corpus

    with pytest.raises(ValueError, match="k must be an integer between 1 and 2147483647, got 0"):
        query_corpus(queries=str(tmp_path / "none.jsonl"), db=str(tmp_path / "db"), k=0)
    with pytest.raises(ValueError, match="k must be an integer between 1 and 2147483647"):
        query_corpus(queries=str(tmp_path / "none.jsonl"), db=str(tmp_path / "db"),
                     k=5_000_000_000)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="would overwrite the queries"):
        query_corpus(queries=str(queries), db=str(tmp_path / "db"), out=str(queries))
    assert queries.read_text(encoding="utf-8") == '{"qid": "a", "query": "x"}\n'
    assert not (tmp_path / "db").exists()
    from sproutrag.errors import DatasetError

    with pytest.raises(DatasetError, match="^queries .*none.jsonl: no such file"):
        query_corpus(queries=str(tmp_path / "none.jsonl"), db=str(tmp_path / "db"))
