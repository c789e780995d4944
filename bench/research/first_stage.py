"""Which first stage finds a query's document in a pooled database: vectors, words, or both
fused, and fused how?

    PYTHONPATH=. .venv/bin/python bench/research/first_stage.py --db DB --queries Q.jsonl

DB is a database an index run built (for example by `sproutrag evaluate --db DB
--corpus-wide` over a pooled set of `python -m sproutrag.learn.devsets --pool`), Q its
labelled queries. For every query, the documents in the order each first stage ranks
them, through the Retriever's own code where it has it:

* vector: the documents of the nearest nodes (`FirstStage.ranked_by_vector`);
* text: the documents of the best leaves in the full-text index
  (`FirstStage.ranked_by_text`, LanceDB's BM25);
* hybrid RRF (shipped): the two fused by reciprocal rank (`fuse_rankings`, k = 60);
* hybrid z-score: each document's best node cosine and best leaf BM25 (0 where the index
  returned none of its leaves), standardised over the candidates and added (the
  project's fusion form, at the document level);
* LanceDB hybrid: `nodes.search(query_type="hybrid")` with `RRFReranker` over rows,
  documents in the order of their first row (LanceDB's own hybrid query).

Prints the share of queries whose gold document is among the first n (n = 1, 2, 4, 8)
and the mean reciprocal rank. docs/results.md, "Searching the whole corpus".
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

NS = (1, 2, 4, 8)


def _z(values: dict[str, float], docs: list[str]) -> np.ndarray:
    x = np.asarray([values.get(d, 0.0) for d in docs], np.float64)
    return (x - x.mean()) / max(float(x.std()), 1e-9)


def rankings(r, query: str, qvec: np.ndarray, limit: int) -> dict[str, list[str]]:
    """Documents, best first, by each first stage for one query."""
    from lancedb.rerankers import RRFReranker

    from sproutrag.search.rankings import fuse_rankings

    current = dict(r.first.current().items())
    nodes = r.store.table("nodes")
    vec_rows = r.first.nearest_nodes(qvec, limit, None)
    cos: dict[str, float] = {}
    for row in vec_rows:
        cos.setdefault(row["doc_id"], 1.0 - float(row["_distance"]))
    txt_rows = (nodes.search(query, query_type="fts").where("left = -1", prefilter=True)
                .select(["doc_id", "tree_id", "_score"]).limit(limit).to_list())
    bm25: dict[str, float] = {}
    for row in txt_rows:
        if current.get(row["doc_id"]) == row["tree_id"]:
            bm25.setdefault(row["doc_id"], float(row["_score"]))
    vector = r.first.ranked_by_vector(qvec, limit)
    text = r.first.ranked_by_text(query, limit)
    union = list(dict.fromkeys(vector + text))
    fused = _z(cos, union) + _z(bm25, union)
    hybrid_rows = (nodes.search(query_type="hybrid").vector(qvec.astype(np.float32))
                   .text(query).where("left = -1", prefilter=True).rerank(RRFReranker())
                   .select(["doc_id", "tree_id"]).limit(limit).to_list())
    lance = [row["doc_id"] for row in hybrid_rows
             if current.get(row["doc_id"]) == row["tree_id"]]
    return {
        "vector": vector,
        "text": text,
        "hybrid RRF (shipped)": fuse_rankings([vector, text]),
        "hybrid z-score": [union[i] for i in np.argsort(-fused, kind="stable")],
        "LanceDB hybrid (rows, RRF)": list(dict.fromkeys(lance)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--queries", required=True)
    p.add_argument("--limit", type=int, default=80, help="rows each search returns (80: "
                   "the Retriever's first try at n_docs 8)")
    args = p.parse_args(argv)

    from sproutrag.learn.datasets import read_jsonl
    from sproutrag.search.retriever import Retriever

    r = Retriever(args.db)
    queries = read_jsonl(args.queries)
    qvecs = r.encoder.encode_texts([q["query"] for q in queries])
    found: dict[str, list[int | None]] = {}
    for q, v in zip(queries, qvecs, strict=True):
        gold = set(q["doc_ids"])
        for name, ranked in rankings(r, q["query"], v, args.limit).items():
            rank = next((i + 1 for i, d in enumerate(ranked) if d in gold), None)
            found.setdefault(name, []).append(rank)
    print(f"{len(queries)} queries, {r.n_documents()} documents in {args.db}")
    print("| first stage | " + " | ".join(f"gold in first {n}" for n in NS) + " | MRR |")
    print("|---|" + "---|" * (len(NS) + 1))
    for name, ranks in found.items():
        shares = [np.mean([x is not None and x <= n for x in ranks]) for n in NS]
        mrr = np.mean([1.0 / x if x else 0.0 for x in ranks])
        print(f"| {name} | " + " | ".join(f"{100 * s:.0f}%" for s in shares)
              + f" | {mrr:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
