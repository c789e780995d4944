"""The LanceDB baselines (`sproutrag.learn.anchors`): plain chunks with exact offsets,
LanceDB's own BM25 and hybrid search restricted to the query's documents, scored by
`sproutrag evaluate` against the better of the two."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from sproutrag.learn.anchors import (
    ANCHORS,
    LANCE_LOG_FILTER,
    AnchorTable,
    plain_chunks,
    quiet_lance_deprecations,
)
from tests.helpers import CLI

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXT = ("1. Confidentiality. The Recipient shall keep all information secret. It may not "
        "copy it!\nNo exceptions apply? None at all. A third sentence here.\n\n"
        "2. Term.\n  Indented line one. Second one.  \n")


def test_plain_chunks_pair_sentences_within_lines_with_exact_offsets():
    spans = plain_chunks(TEXT)
    texts = [TEXT[s:e] for s, e in spans]
    assert texts == [  # a regex takes "1." for a sentence: what a plain user gets
        "1. Confidentiality.",
        "The Recipient shall keep all information secret. It may not copy it!",
        "No exceptions apply? None at all.",
        "A third sentence here.",
        "2. Term.",
        "Indented line one. Second one.",
    ]
    assert all("\n" not in t and t == t.strip() for t in texts)
    assert spans == sorted(spans) and plain_chunks("") == [] and plain_chunks("\n \n") == []
    assert [TEXT[s:e] for s, e in plain_chunks(TEXT, sentences=1)][:3] == [
        "1.", "Confidentiality.", "The Recipient shall keep all information secret."]


DOCS = [
    {"doc_id": "nda", "text": "The Recipient keeps the information confidential. Notices go "
     "by mail.\nDisputes go to the courts of Delaware. The law of Delaware applies.\n"},
    {"doc_id": "lease", "text": "The tenant pays rent monthly. Rent is due on the first "
     "day.\nThe landlord repairs the roof. Pets are not allowed.\n"},
    {"doc_id": "o'brien", "text": "Invoices are paid within thirty days. Late payment "
     "costs interest.\n"},
]


@pytest.fixture(scope="module")
def table():
    from sproutrag.encoder.encoder import Encoder

    enc = Encoder(device="cpu")
    with AnchorTable(DOCS, enc) as t:
        yield t, enc


@pytest.mark.model
def test_lancedb_bm25_and_hybrid_rank_the_matching_chunk_within_the_query_documents(table):
    t, enc = table
    query = "Which courts decide disputes under Delaware law?"
    qvec = enc.encode_texts([query])[0]
    for mode in ANCHORS:
        top = t.search(mode, query, qvec, ["nda"], 3)
        assert top[0] == ("nda", *_span("nda", "Disputes go to the courts of Delaware."))
        assert {d for d, _, _ in top} == {"nda"}  # restricted to the query's documents
        other = t.search(mode, query, qvec, ["lease", "o'brien"], 3)
        assert {d for d, _, _ in other} <= {"lease", "o'brien"}
        # BM25 finds only the words (none there); the hybrid's vector half finds rows
        assert len(other) == (0 if mode == "lancedb_bm25" else 3)
    runs = t.runs("lancedb_hybrid", [{"query": query, "doc_ids": ["nda", "lease"]}],
                  np.asarray([qvec]), [1, 3])
    assert len(runs[1][0]) == 1 and runs[3][0][:1] == runs[1][0]
    with pytest.raises(ValueError, match="unknown baseline"):
        t.search("bm25", query, qvec, ["nda"], 1)


def _span(doc_id: str, sentence: str) -> tuple[int, int]:
    text = next(d["text"] for d in DOCS if d["doc_id"] == doc_id)
    start = text.index(sentence)
    return start, text.index("\n", start)


def _one_question(tmp_path):
    """(docs, queries) files: DOCS, and one question whose gold is the NDA's courts."""
    docs, queries = tmp_path / "d.jsonl", tmp_path / "q.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    gold = DOCS[0]["text"].index("Disputes")
    queries.write_text(json.dumps({"qid": "q1", "query": "Which courts decide disputes?",
                                   "doc_ids": ["nda"], "gold": [{"doc_id": "nda",
                                   "start": gold, "end": gold + 38}]}) + "\n")
    return docs, queries


@pytest.mark.model
def test_lancedb_bm25_selects_its_score_so_lance_logs_no_deprecation(table, capfd):
    t, enc = table
    query = "Which courts decide disputes under Delaware law?"
    capfd.readouterr()
    assert t.search("lancedb_bm25", query, enc.encode_texts([query])[0], ["nda"], 2)
    assert "Deprecation warning" not in capfd.readouterr().err


@pytest.mark.model
def test_evaluate_scores_the_baselines_and_compares_with_the_better(tmp_path):
    """Through the command, in a process of its own: its output holds no Lance
    deprecation warning (one a question, from the hybrid's full-text half, before)."""
    docs, queries = _one_question(tmp_path)
    out = tmp_path / "eval"
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    done = subprocess.run([*CLI, "evaluate", "--docs", str(docs), "--queries", str(queries),
                           "--modes", "leaves", "lancedb_bm25", "lancedb_hybrid", "--out",
                           str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "WARN" not in done.stderr and "Deprecation" not in done.stderr, done.stderr
    report = json.loads((out / "results.json").read_text())
    rows = {r["name"]: r for r in report["rows"]}
    assert set(ANCHORS.values()) <= set(rows)
    bm25 = rows[ANCHORS["lancedb_bm25"]]
    assert bm25["per_k"][0]["ie"] == 1.0  # the one gold chunk first: P@1 = R = 1
    md = (out / "results.md").read_text()
    assert "IE - best LanceDB (paired)" in md and "charIE - best LanceDB (paired)" in md


@pytest.mark.model
def test_evaluate_budgets_scores_contexts_by_characters(tmp_path):
    """`evaluate --budgets`: every selection and baseline gets char P, R and P x R per
    budget, computed from contexts that fit the budget."""
    from sproutrag.flows.cli import main

    docs, queries = _one_question(tmp_path)
    out = tmp_path / "eval"
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "tree", "lancedb_bm25", "--budgets", "60", "400", "--out", str(out)]) == 0
    report = json.loads((out / "results.json").read_text())
    rows = {r["mode"]: r for r in report["meta"]["budget_rows"]}
    assert set(rows) == {"flat", "leaves", "window", "tree", "lancedb_bm25"}
    for r in rows.values():
        assert set(r["budgets"]) == {"60", "400"}
        for b in r["budgets"].values():
            assert 0 <= b["p"] <= 1 and 0 <= b["r"] <= 1
            assert b["pr"] <= min(b["p"], b["r"]) + 1e-12
        pr = [r["budgets"][b]["pr"] for b in ("60", "400")]
        assert r["mean_pr"] == pytest.approx(sum(pr) / 2)
    # The gold sentence is what BM25's first chunk holds: at 400 characters it is found.
    assert rows["lancedb_bm25"]["budgets"]["400"]["r"] == 1.0
    md = (out / "results.md").read_text()
    assert "Contexts under a character budget" in md and "P@400" in md


def test_quiet_lance_deprecations_keeps_a_filter_the_user_set(monkeypatch):
    monkeypatch.delenv("LANCEDB_LOG", raising=False)
    quiet_lance_deprecations()
    assert os.environ["LANCEDB_LOG"] == LANCE_LOG_FILTER
    monkeypatch.setenv("LANCEDB_LOG", "debug")
    quiet_lance_deprecations()
    assert os.environ["LANCEDB_LOG"] == "debug"
