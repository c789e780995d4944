"""Querying the indexed sample corpus: API, CLI and flow agree; flat = brute force."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from sproutrag.retrieval import QueryError, Retriever
from sproutrag.store import Store
from tests.conftest import ROOT

pytestmark = pytest.mark.model

QUESTION = "How many days does the customer have to dispute an invoice?"


@pytest.fixture(scope="module")
def retriever(sample_index):
    return Retriever(sample_index[0])


def _all_leaves(db: str):
    rows = Store.open_existing(db).table("nodes").to_arrow()
    leaves = rows.filter(rows.column("left").to_numpy() == -1)
    vecs = leaves.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, 384)
    return leaves.to_pydict(), vecs


def test_flat_mode_equals_brute_force_over_leaves(retriever, sample_index):
    data, vecs = _all_leaves(sample_index[0])
    q = retriever.encoder.encode_texts([QUESTION])[0]
    cos = vecs @ q / np.linalg.norm(vecs, axis=1) / np.linalg.norm(q)
    best = np.argsort(-cos)[:5]
    hits = retriever.search(QUESTION, k=5, mode="flat")
    assert [h.node_id for h in hits] == [data["node_id"][i] for i in best]
    assert np.allclose([h.score for h in hits], cos[best], atol=1e-4)


def test_tree_mode_respects_budget_and_spans(retriever, sample_index):
    for k in (1, 3, 5):
        hits = retriever.search(QUESTION, k=k)
        units = [s for h in hits for s in h.spans]
        assert 0 < len(units) <= k
        assert len(set(units)) == len(units)
        for h in hits:
            doc = Store.open_existing(sample_index[0]).table("documents")
            text = doc.search().where(f"doc_id = '{h.doc_id}'").to_list()[0]["text"]
            assert h.text == "\n".join(text[s:e] for s, e in h.spans)
            assert h.spans == sorted(h.spans)


def test_doc_ids_restrict_and_are_escaped(retriever):
    hits = retriever.search(QUESTION, k=5, doc_ids=["policies/remote_work_faq.md"])
    assert hits and {h.doc_id for h in hits} == {"policies/remote_work_faq.md"}
    flat = retriever.search(QUESTION, k=5, mode="flat", doc_ids=["one_sentence.txt"])
    assert {h.doc_id for h in flat} == {"one_sentence.txt"}
    with pytest.raises(QueryError, match="none of the doc_ids"):
        retriever.search(QUESTION, doc_ids=["x' OR '1'='1", "it's \" quoted"])


def test_bad_queries(retriever):
    with pytest.raises(QueryError, match="empty"):
        retriever.search("   ")
    with pytest.raises(QueryError, match="k must be"):
        retriever.search(QUESTION, k=0)
    long = " ".join(["confidential information"] * 2000)
    assert retriever.search(long, k=2)  # truncated to the model window, still answers


def test_cli_api_and_flow_give_identical_results(retriever, sample_index, tmp_path):
    from flows.query_corpus import query_corpus

    db = sample_index[0]
    queries = tmp_path / "q.jsonl"
    lines = [
        {"qid": "a", "query": QUESTION},
        {"qid": "b", "query": "termination for convenience",
         "doc_ids": ["master_services_agreement.txt"]},
        {"qid": "c", "query": ""},
        {"qid": "d", "query": "x", "doc_ids": ["no-such-doc"]},
    ]
    queries.write_text("\n".join(json.dumps(q) for q in lines), encoding="utf-8")
    cli_out, flow_out = tmp_path / "cli.jsonl", tmp_path / "flow.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "sproutrag", "query", "--db", db, "--queries", str(queries),
         "--out", str(cli_out)], capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 3, proc.stderr  # two queries failed
    result = query_corpus(queries=str(queries), db=db, out=str(flow_out))
    assert result["n_failed"] == 2
    cli_rows = [json.loads(x) for x in cli_out.read_text().splitlines()]
    flow_rows = [json.loads(x) for x in flow_out.read_text().splitlines()]
    api = [
        [h.to_dict() for h in retriever.search(q["query"], doc_ids=q.get("doc_ids"))]
        for q in lines[:2]
    ]
    assert cli_rows == flow_rows
    assert [r["results"] for r in cli_rows[:2]] == api
    assert "error" in cli_rows[2] and "error" in cli_rows[3] and cli_rows[3]["results"] == []
    import lancedb

    res = lancedb.connect(db).open_table("results").to_arrow().to_pydict()
    assert set(res["qid"]) == {"a", "b", "c", "d"}
    assert res["rank"].count(0) == 2
