"""On ContractNLI dev documents (../shared only): the stored path scores what the
in-memory evaluation scores. Skips cleanly where ../shared/data/contractnli is absent."""

from __future__ import annotations

import json

import pytest
from sproutrag.schemas.settings import load_settings

from sproutrag.encoder.encoder import Encoder
from sproutrag.encoder.weights import load_default_weights
from sproutrag.learn.datasets import read_jsonl, usable_queries
from sproutrag.learn.evaluation import evaluate_corpus, result_row, retriever_runs
from sproutrag.learn.features import load_features
from sproutrag.learn.variants import make_variants
from sproutrag.search.retriever import Retriever

pytestmark = pytest.mark.model


def _subset(contractnli, tmp_path, n_docs: int = 2, min_chars: int = 4000):
    """The N_DOCS shortest dev documents of at least MIN_CHARS characters (several
    encoder windows each, seconds to encode) and their queries, as JSONL files."""
    docs = sorted((d for d in read_jsonl(contractnli / "dev.docs.jsonl")
                   if len(d["text"]) >= min_chars), key=lambda d: len(d["text"]))[:n_docs]
    ids = {str(d["doc_id"]) for d in docs}
    queries = [q for q in read_jsonl(contractnli / "dev.queries.jsonl")
               if {str(d) for d in q["doc_ids"]} <= ids]
    paths = tmp_path / "docs.jsonl", tmp_path / "queries.jsonl"
    for path, rows in zip(paths, (docs, queries)):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return paths, len(queries)


def test_stored_path_scores_what_the_in_memory_evaluation_scores(
    contractnli, prefect_harness, tmp_path
):
    from sproutrag.flows.index_corpus import index_corpus

    (docs, queries), n_queries = _subset(contractnli, tmp_path)
    assert n_queries > 10
    settings = load_settings()
    weights = load_default_weights(None)
    encoder = Encoder(weights=weights)
    variants = make_variants(["flat", "leaves", "tree"], weights,
                             settings.tree.parent_embedding)
    rows, meta = evaluate_corpus(
        docs, queries, encoder=encoder, chunking=settings.chunking.model_dump(),
        variants=variants, cache_dir=tmp_path / "cache", log=lambda *_: None,
    )
    assert meta["n_queries"] == n_queries and rows[0]["avg"]["ie"] > 0

    db = str(tmp_path / "db")
    run = index_corpus(corpus=str(docs), db=db)
    assert run["n_failed"] == 0 and run["n_new"] == 2
    feats = load_features(next((tmp_path / "cache").glob("features-*.npz")))
    qs = usable_queries(read_jsonl(queries), feats)
    retriever = Retriever(db, encoder=encoder)
    for row in rows:
        runs = retriever_runs(retriever, qs, (1, 3, 5), row["mode"])
        stored = result_row(row["name"], runs, feats, qs)
        assert stored["avg"] == pytest.approx(row["avg"], abs=1e-9), row["name"]
        assert stored["per_query"]["ie"] == pytest.approx(row["per_query"]["ie"], abs=1e-9)
