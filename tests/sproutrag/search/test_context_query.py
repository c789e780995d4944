"""A context under a budget from the indexed sample: the Retriever, the CLI (one question
and a batch), and the query flow give the same context; budgets in characters and in
tokens hold; bad budgets are refused with a clear line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sproutrag.search.retriever import QueryError, Retriever
from sproutrag.storage.store import Store
from tests.helpers import CLI, ROOT

pytestmark = pytest.mark.model

QUESTION = "Within how many hours must the provider notify the customer of a security incident?"


@pytest.fixture(scope="module")
def retriever(sample_index):
    return Retriever(sample_index[0])


def _texts(db: str) -> dict[str, str]:
    rows = Store.open_existing(db).table("documents").to_arrow().to_pydict()
    return dict(zip(rows["doc_id"], rows["text"], strict=True))


def _no_scores(rows):
    return [{**r, "results": [{k: v for k, v in h.items() if k != "score"}
                              for h in r["results"]]} for r in rows]


@pytest.mark.parametrize("selection", ["leaves", "window", "tree"])
def test_a_context_fits_its_budget_and_quotes_the_documents(retriever, sample_index,
                                                            selection):
    texts = _texts(sample_index[0])
    for budget in (1, 40, 300, 1000, 5000):
        ctx = retriever.context(QUESTION, budget_chars=budget, selection=selection)
        assert ctx.used_chars <= budget
        assert ctx.used_chars == sum(s.end - s.start for s in ctx.spans)
        for s in ctx.spans:
            assert s.text == texts[s.doc_id][s.start : s.end]
        by_doc: dict[str, list] = {}
        for s in ctx.spans:
            by_doc.setdefault(s.doc_id, []).append(s)
        order = list(dict.fromkeys(s.doc_id for s in ctx.spans))
        for d, spans in by_doc.items():
            assert [s.start for s in spans] == sorted(s.start for s in spans)
            assert all(a.end < b.start for a, b in zip(spans, spans[1:]))
            assert order.index(d) == len({x.doc_id for x in ctx.spans[: ctx.spans.index(spans[0])]})
    ctx = retriever.context(QUESTION, budget_chars=1000, selection=selection)
    assert "twenty-four (24) hours" in " ".join(s.text for s in ctx.spans)


def test_a_budget_shorter_than_the_best_clause_gets_its_first_words(retriever, sample_index):
    """Rule 3 (docs/results.md): 60 characters hold no clause of the answer whole; the
    best one (9.7) is cut at a word's end and the context ends there, where it used to
    be passed over for a weaker unit that fitted. The command line says so."""
    texts = _texts(sample_index[0])
    ctx = retriever.context(QUESTION, budget_chars=60)
    (span,) = ctx.spans
    assert span.cut and span.text.startswith("9.7 Security Incidents. Provider shall")
    assert ctx.used_chars == len(span.text) <= 60
    assert texts[span.doc_id][span.end].isspace()  # at a word's end
    assert span.to_dict()["cut"] is True
    one = subprocess.run([*CLI, "query", "--db", sample_index[0], QUESTION, "--budget-chars",
                          "60"], capture_output=True, text=True, cwd=ROOT)
    assert one.returncode == 0, one.stderr
    assert f"chars {span.start}-{span.end}  score" in one.stdout
    assert "(cut to the budget)" in one.stdout


def test_the_cutoff_keeps_contexts_short_and_none_fills_the_budget(retriever):
    short = retriever.context(QUESTION, budget_chars=3000)
    full = retriever.context(QUESTION, budget_chars=3000, cutoff=None)
    assert short.used_chars <= full.used_chars <= 3000
    assert full.used_chars > 2500  # the sample holds far more than 3,000 characters
    best = max(s.score for s in full.spans)
    assert all(s.score >= best - 1.0 for s in short.spans)
    assert short.meta["cutoff"] == 1.0 and full.meta["cutoff"] is None
    with pytest.raises(QueryError, match="cutoff must be"):
        retriever.context(QUESTION, budget_chars=100, cutoff=-1)


def test_a_budget_in_tokens_counts_the_encoders_tokens(retriever):
    from tokenizers import Tokenizer

    from sproutrag.encoder.loading import resolve_model

    path, _ = resolve_model(retriever.store.encoder_id)
    tok = Tokenizer.from_file(f"{path}/tokenizer.json")
    tok.no_padding()  # the file pads and truncates to 128 for the encoder
    tok.no_truncation()
    for budget in (5, 60, 400):
        ctx = retriever.context(QUESTION, budget_tokens=budget)
        counted = sum(len(tok.encode(s.text, add_special_tokens=False).ids) for s in ctx.spans)
        assert ctx.used_tokens == counted <= budget
    both = retriever.context(QUESTION, budget_tokens=400, budget_chars=500, k=3)
    assert both.used_chars <= 500 and both.used_tokens <= 400 and both.units <= 3


def test_bad_budgets_are_refused(retriever, tmp_path):
    with pytest.raises(QueryError, match="needs a budget"):
        retriever.context(QUESTION)
    with pytest.raises(QueryError, match="budget_chars must be"):
        retriever.context(QUESTION, budget_chars=0)
    with pytest.raises(QueryError, match="selection must be one of"):
        retriever.context(QUESTION, budget_chars=100, selection="best")
    with pytest.raises(QueryError, match="selection 'window' needs mode tree or leaves"):
        retriever.context(QUESTION, budget_chars=100, mode="flat", selection="window")
    assert retriever.context(QUESTION, budget_chars=100, mode="flat", selection="leaves").spans
    with pytest.raises(QueryError, match="tokenizer 'no/such-tokenizer-here'"):
        retriever.context(QUESTION, budget_tokens=100, tokenizer="no/such-tokenizer-here")
    with pytest.raises(QueryError, match="tokenizer '/no/such/folder': no such folder"):
        retriever.context(QUESTION, budget_tokens=100, tokenizer="/no/such/folder")
    for path, why in ((tmp_path, "the folder holds no tokenizer"),
                      (Path(__file__), "a file, not a folder")):
        with pytest.raises(QueryError, match=f"tokenizer '{path}': {why}"):
            retriever.context(QUESTION, budget_tokens=100, tokenizer=str(path))
    # a tokenizer counts a token budget: with characters alone it would be ignored
    with pytest.raises(QueryError, match="tokenizer counts budget_tokens"):
        retriever.context(QUESTION, budget_chars=100, tokenizer="no/such-tokenizer-here")


def test_cli_batch_flow_and_retriever_give_the_same_context(retriever, sample_index,
                                                            tmp_path, monkeypatch):
    import shutil

    from sproutrag.flows.query_corpus import query_corpus

    db = str(tmp_path / "db")  # the flow writes `results`: a copy of the shared sample
    shutil.copytree(sample_index[0], db)
    lines = [{"qid": "a", "query": QUESTION, "budget_chars": 700},
             {"qid": "b", "query": "monthly internet stipend", "budget_chars": 300,
              "doc_ids": ["policies/remote_work_faq.md"]},
             {"qid": "c", "query": QUESTION},  # the run's budget
             {"qid": "d", "query": QUESTION, "budget_chars": 0},
             {"qid": "e", "query": QUESTION, "budget_chars": 60},  # its unit cut
             {"qid": "f", "query": QUESTION, "budget_chars": 1},  # no word fits
             {"qid": "g", "query": QUESTION, "budget_tokens": 2**31}]  # fits no row
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in lines), encoding="utf-8")
    cli_out, flow_out = tmp_path / "cli.jsonl", tmp_path / "flow.jsonl"
    proc = subprocess.run(
        [*CLI, "query", "--db", db, "--queries", str(queries),
         "--out", str(cli_out), "--budget-chars", "450"], capture_output=True, text=True,
        cwd=ROOT)
    assert proc.returncode == 3, proc.stderr  # line d failed
    cli = [json.loads(x) for x in cli_out.read_text().splitlines()]
    assert cli[3]["error"] == "budget_chars must be an integer between 1 and 2147483647, got 0"
    assert "budget_tokens must be an integer between" in cli[6]["error"]
    from sproutrag.ingest.run_summary import QueriesFailedError

    with pytest.raises(QueriesFailedError) as failed:
        query_corpus(queries=str(queries), db=db, out=str(flow_out), budget_chars=450)
    flow = [json.loads(x) for x in flow_out.read_text().splitlines()]
    api = [retriever.context(QUESTION, budget_chars=700).to_dict(),
           retriever.context("monthly internet stipend", budget_chars=300,
                             doc_ids=["policies/remote_work_faq.md"]).to_dict(),
           retriever.context(QUESTION, budget_chars=450).to_dict()]
    assert _no_scores(cli) == _no_scores(flow)
    assert _no_scores(cli[:3]) == _no_scores([{"qid": q, **a} for q, a in zip("abc", api)])
    assert [r["used_chars"] for r in cli[:3]] == [a["used_chars"] for a in api]
    assert cli[0]["used_chars"] <= 700 and cli[2]["used_chars"] <= 450
    assert {h["doc_id"] for h in cli[1]["results"]} == {"policies/remote_work_faq.md"}
    # d failed on its own budget: null, not the run's (still a context's line); g has
    # the run's characters and no tokens budget
    assert [r.get("budget_chars") for r in cli] == [700, 300, 450, None, 60, 1, 450]
    assert "budget_chars" in cli[3] and cli[6]["budget_tokens"] is None
    assert cli[4]["results"][0]["cut"] and not cli[5]["results"]
    _results_table_holds_the_contexts(db, failed.value.row["run_id"], flow)
    # One question on the command line: the same spans, printed.
    one = subprocess.run(
        [*CLI, "query", "--db", db, QUESTION,
         "--budget-chars", "700"], capture_output=True, text=True, cwd=ROOT)
    assert one.returncode == 0, one.stderr
    for hit in api[0]["results"]:
        (s, e), = hit["spans"]
        assert f"chars {s}-{e}" in one.stdout
    assert f"{api[0]['used_chars']} of 700 characters" in one.stdout


def _results_table_holds_the_contexts(db: str, run_id: str, lines: list[dict]) -> None:
    """The flow's `results` rows of RUN_ID say what its JSONL LINES say: every query a
    row, each span its nodes and cut flag, each context its budget and characters."""
    import lancedb

    rows = [r for r in lancedb.connect(db).open_table("results").to_arrow().to_pylist()
            if r["run_id"] == run_id]
    for line in lines:
        mine = sorted((r for r in rows if r["qid"] == line["qid"]), key=lambda r: r["rank"])
        if not line["results"]:  # failed (d) or nothing fitted (f): one row of rank 0
            [row] = mine
            assert (row["rank"], row["error"], row["doc_id"]) == (0, line.get("error"), None)
            assert (row["budget_chars"], row["k"]) == (line["budget_chars"], None)
            continue
        assert [(r["node_id"], r["node_ids"], r["spans"], r["cut"]) for r in mine] == [
            (h["node_id"], h["node_ids"], h["spans"], h.get("cut", False))
            for h in line["results"]]
        assert {(r["budget_chars"], r["used_chars"], r["k"]) for r in mine} == {
            (line["budget_chars"], line["used_chars"], None)}
    assert [r["cut"] for r in rows if r["qid"] == "e"] == [True]
    assert {r["query"] for r in rows if r["qid"] == "b"} == {"monthly internet stipend"}


def test_cli_refuses_a_bad_budget_before_the_model_loads(sample_index):
    proc = subprocess.run(
        [*CLI, "query", "--db", sample_index[0], QUESTION,
         "--budget-chars", "0"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "--budget-chars" in proc.stderr
    proc = subprocess.run(
        [*CLI, "query", "--db", sample_index[0], QUESTION,
         "--budget-tokens", "50", "--tokenizer", "/no/such/folder"], capture_output=True,
        text=True, cwd=ROOT)
    assert proc.returncode == 2 and "--tokenizer" in proc.stderr, proc.stderr
    assert "'/no/such/folder': no such folder" in proc.stderr
    # what shapes a top-k search is refused beside a budget, not ignored
    for flags in (["--beam", "1"], ["--threshold", "0.9", "--margin", "0.1"]):
        proc = subprocess.run(
            [*CLI, "query", "--db", sample_index[0], QUESTION, "--budget-chars", "300",
             *flags], capture_output=True, text=True, cwd=ROOT)
        named = " and ".join(f for f in flags if f.startswith("--"))
        assert proc.returncode == 2 and f"{named} shape" in proc.stderr, proc.stderr
        assert "use --cutoff C" in proc.stderr
    # a batch under the command's budget too: every line is then a context
    proc = subprocess.run(
        [*CLI, "query", "--db", sample_index[0], "--queries", str(Path(__file__)),
         "--out", "/tmp/never-written.jsonl", "--budget-tokens", "30", "--margin", "0.2"],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "--margin shapes a top-k search" in proc.stderr
