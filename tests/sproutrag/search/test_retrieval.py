"""Querying the indexed sample corpus: API, CLI and flow agree; flat = brute force."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pyarrow.compute as pc
import pytest

from sproutrag.search.retriever import QueryError, Retriever
from sproutrag.storage.store import Store
from tests.helpers import CLI, ROOT

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
    stipend = "How much is the monthly internet stipend for people working from home?"
    hits = retriever.search(stipend, k=5, doc_ids=["policies/remote_work_faq.md"])
    assert hits and {h.doc_id for h in hits} == {"policies/remote_work_faq.md"}
    assert any("$35" in h.text for h in hits)
    # A question the document cannot answer: the shipped search fills the budget with
    # that document's best units (precision is over k, so a short answer is no better);
    # an explicit threshold drops what does not reach it, in both modes.
    hits = retriever.search(QUESTION, k=5, doc_ids=["policies/remote_work_faq.md"])
    assert {h.doc_id for h in hits} == {"policies/remote_work_faq.md"}
    assert sum(len(h.spans) for h in hits) == 5
    strict = Retriever(retriever.store.uri, encoder=retriever.encoder, threshold=0.6)
    assert strict.search(QUESTION, k=5, doc_ids=["policies/remote_work_faq.md"]) == []
    assert strict.search(QUESTION, k=5, mode="flat",
                         doc_ids=["policies/remote_work_faq.md"]) == []
    flat = retriever.search(QUESTION, k=5, mode="flat", doc_ids=["one_sentence.txt"])
    assert {h.doc_id for h in flat} == {"one_sentence.txt"}
    with pytest.raises(QueryError, match="none of the doc_ids"):
        retriever.search(QUESTION, doc_ids=["x' OR '1'='1", "it's \" quoted"])


def test_bad_queries(retriever):
    with pytest.raises(QueryError, match="empty"):
        retriever.search("   ")
    with pytest.raises(QueryError, match="k must be"):
        retriever.search(QUESTION, k=0)
    # Far longer than the model window: truncated like sentence-transformers (256 tokens:
    # CLS + 127 repetitions of two word pieces + SEP), so it answers as its prefix does.
    long = " ".join(["confidential information"] * 2000)
    prefix = " ".join(["confidential information"] * 127)
    loose = Retriever(retriever.store.uri, encoder=retriever.encoder, threshold=0.0)
    hits = loose.search(long, k=2)
    assert hits and [h.node_id for h in hits] == [h.node_id for h in loose.search(prefix, k=2)]


def test_cli_api_and_flow_give_identical_results(retriever, sample_index, tmp_path):
    from sproutrag.flows.query_corpus import query_corpus

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
        [*CLI, "query", "--db", db, "--queries", str(queries),
         "--out", str(cli_out)], capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 3, proc.stderr  # two queries failed
    from sproutrag.ingest.run_summary import QueriesFailedError

    with pytest.raises(QueriesFailedError) as failed:  # the flow run ends Failed
        query_corpus(queries=str(queries), db=db, out=str(flow_out))
    assert failed.value.row["n_failed"] == 2
    cli_rows = [json.loads(x) for x in cli_out.read_text().splitlines()]
    flow_rows = [json.loads(x) for x in flow_out.read_text().splitlines()]
    api = [
        [h.to_dict() for h in retriever.search(q["query"], doc_ids=q.get("doc_ids"))]
        for q in lines[:2]
    ]
    # Same hits in the same order; scores may differ in the last float32 bits between
    # processes (torch picks its summation order by thread count).
    assert _without_scores(cli_rows) == _without_scores(flow_rows)
    assert _without_scores([r["results"] for r in cli_rows[:2]]) == _without_scores(api)
    for a, b in zip(cli_rows[:2], api):
        assert np.allclose([h["score"] for h in a["results"]], [h["score"] for h in b], atol=1e-5)
    assert "error" in cli_rows[2] and "error" in cli_rows[3] and cli_rows[3]["results"] == []
    import lancedb

    table = lancedb.connect(db).open_table("results").to_arrow()
    run = failed.value.row["run_id"]  # other tests' query runs share the sample database
    res = table.filter(pc.equal(table.column("run_id"), run)).to_pydict()
    assert set(res["qid"]) == {"a", "b", "c", "d"}
    assert res["rank"].count(0) == 2


def _without_scores(obj):
    """A copy of query output with every hit's "score" removed (nested lists/dicts)."""
    if isinstance(obj, list):
        return [_without_scores(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _without_scores(v) for k, v in obj.items() if k != "score"}
    return obj


def test_in_memory_first_stage_equals_lancedb_search(retriever):
    lance = Retriever(retriever.store.uri, encoder=retriever.encoder, n_docs=3, memory_rows=0)
    memory = Retriever(retriever.store.uri, encoder=retriever.encoder, n_docs=3)
    questions = [QUESTION, "Where did the survey team find otter spraint?",
                 "How much is the monthly internet stipend?", "Which law governs the NDA?"]
    for q in questions:
        v = retriever.encoder.encode_texts([q])[0]
        assert memory.choose_documents(v, None) == lance.choose_documents(v, None)
        assert memory.first._matrix[1] is not None and lance.first._matrix[1] is None
        assert [h.to_dict() for h in memory.search(q, k=3)] == \
            [h.to_dict() for h in lance.search(q, k=3)]


def test_missing_database_and_other_encoder_are_refused(retriever, tmp_path):
    from types import SimpleNamespace

    from sproutrag.storage.store import DatabaseNotFoundError, StaleIndexError

    with pytest.raises(DatabaseNotFoundError, match="nowhere does not exist; run `sproutrag"):
        Retriever(str(tmp_path / "nowhere"), encoder=retriever.encoder)
    assert not (tmp_path / "nowhere").exists()  # a query creates no folder
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatabaseNotFoundError, match="no SproutRAG database"):
        Retriever(str(tmp_path / "empty"), encoder=retriever.encoder)
    other = SimpleNamespace(model_id="other/model", dim=384, weights=retriever.encoder.weights)
    with pytest.raises(StaleIndexError, match="index fingerprint [0-9a-f]+") as err:
        Retriever(retriever.store.uri, encoder=other)
    assert "other/model" in str(err.value) and retriever.encoder.model_id in str(err.value)


def test_leaves_mode_through_cli_flow_and_api(retriever, sample_index, tmp_path):
    """`--mode leaves` (tree mode's fused score, no tree) in the CLI, the query-corpus flow
    and the API: the same units, one leaf per hit, at most k, restricted and corpus-wide."""
    from sproutrag.flows.query_corpus import query_corpus

    db = sample_index[0]
    queries = tmp_path / "q.jsonl"
    lines = [{"qid": "a", "query": QUESTION},
             {"qid": "b", "query": "termination for convenience",
              "doc_ids": ["master_services_agreement.txt"]}]
    queries.write_text("\n".join(json.dumps(q) for q in lines), encoding="utf-8")
    cli_out, flow_out = tmp_path / "cli.jsonl", tmp_path / "flow.jsonl"
    proc = subprocess.run(
        [*CLI, "query", "--db", db, "--queries", str(queries),
         "--out", str(cli_out), "--mode", "leaves", "--k", "4"],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    query_corpus(queries=str(queries), db=db, out=str(flow_out), mode="leaves", k=4)
    cli_rows = [json.loads(x) for x in cli_out.read_text().splitlines()]
    flow_rows = [json.loads(x) for x in flow_out.read_text().splitlines()]
    api = [[h.to_dict() for h in retriever.search(q["query"], k=4, doc_ids=q.get("doc_ids"),
                                                 mode="leaves")] for q in lines]
    assert _without_scores(cli_rows) == _without_scores(flow_rows)
    assert _without_scores([r["results"] for r in cli_rows]) == _without_scores(api)
    for row in cli_rows:
        assert len(row["results"]) == 4 and all(len(h["spans"]) == 1 for h in row["results"])
    assert {h["doc_id"] for h in cli_rows[1]["results"]} == {"master_services_agreement.txt"}
    # the same documents and the same fused score as tree mode: its leaf hits rank alike
    tree = retriever.search(QUESTION, k=4)
    leaves = retriever.search(QUESTION, k=4, mode="leaves")
    assert tree[0].spans[0] in [s for h in leaves for s in h.spans]
