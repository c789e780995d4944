"""Query latency (tree vs flat) and first-stage document selection recall.

    .venv/bin/python bench/query.py [--queries 200] [--dev-db DB]

Latency: a real LanceDB database with (a) one document of 2,000 leaves and (b) a corpus
of 500 documents of 40-80 leaves. Trees are built by `build_tree` from MiniLM
embeddings of generated sentences with banded relations (tree shape and vector count
are what the search cost depends on). Queries are real questions encoded by the real
encoder; latency is reported with and without query encoding, p50 and p95, tree mode
and flat mode, in one process.

Selection recall (with --dev-db, a database of the ContractNLI dev documents built by
`sproutrag index ../shared/data/contractnli/dev.docs.jsonl --db DB`): the share of dev
queries, run corpus-wide (no doc_ids), whose gold document is among the documents the
first stage chooses, for several `n_docs` settings.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from sproutrag.documents import SourceDocument, content_hash
from sproutrag.encoder.encoder import Encoder
from sproutrag.search.retriever import Retriever
from sproutrag.storage.store import IndexedDocument, Store
from sproutrag.trees.tree import build_tree

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "How many days does the customer have to dispute an invoice?",
    "Who owns the intellectual property created under a statement of work?",
    "What happens to confidential information when the agreement ends?",
    "Which law governs the agreement?",
    "What insurance must the supplier carry?",
    "How long are records kept?",
    "Can employees work remotely?",
    "What is the liability cap?",
]


def _sentences() -> list[str]:
    import re

    files = sorted(p for p in (ROOT / "data" / "sample").rglob("*") if p.suffix in (".txt", ".md"))
    text = " ".join(p.read_text(encoding="utf-8") for p in files)
    return [s for s in re.split(r"(?<=[.;:])\s+", text) if len(s) > 25]


def _doc(doc_id: str, n: int, pool: np.ndarray, texts: list[str], rng) -> IndexedDocument:
    pick = rng.integers(0, len(pool), size=n)
    vecs = pool[pick] + rng.normal(scale=0.02, size=(n, pool.shape[1])).astype(np.float32)
    band = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 8))]
    ri, rj = (np.array(x, dtype=np.int64) for x in zip(*band)) if band else (np.zeros(0),) * 2
    rm = rng.uniform(0.01, 0.2, size=len(ri)).astype(np.float32)
    tree = build_tree(vecs.astype(np.float32), ri, rj, rm, parent_embedding="size_weighted")
    parts, spans, pos = [], [], 0
    for k in pick:
        parts.append(texts[k])
        spans.append((pos, pos + len(texts[k])))
        pos += len(texts[k]) + 1
    text = " ".join(parts)
    return IndexedDocument(
        SourceDocument(doc_id, "bench", text, content_hash(text)), np.array(spans), tree
    )


def _build_db(path: str, encoder: Encoder, sizes: list[int]) -> None:
    texts = _sentences()
    pool = encoder.encode_texts(texts)
    rng = np.random.default_rng(0)
    store = Store(path, encoder_id=encoder.model_id, dim=encoder.dim)
    items = [_doc(f"doc-{k:04d}", n, pool, texts, rng) for k, n in enumerate(sizes)]
    for k in range(0, len(items), 50):
        store.write(items[k : k + 50], "bench")


def _pcts(xs: list[float]) -> str:
    a = np.array(xs) * 1000
    return f"p50 {np.percentile(a, 50):7.2f} ms  p95 {np.percentile(a, 95):7.2f} ms"


def latency(encoder: Encoder, n_queries: int) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, sizes in (("1 document, 2,000 leaves", [2000]),
                             ("500 documents, 40-80 leaves", list(
                                 np.random.default_rng(1).integers(40, 81, size=500)))):
            db = f"{tmp}/{len(sizes)}"
            _build_db(db, encoder, [int(s) for s in sizes])
            r = Retriever(db, encoder=encoder)
            qs = [QUESTIONS[i % len(QUESTIONS)] + f" ({i})" for i in range(n_queries)]
            qvecs = encoder.encode_texts(qs)
            for mode in ("tree", "flat"):
                r.search(qs[0], k=5, mode=mode)  # warm-up: loads trees into the cache
                full, search = [], []
                for q, v in zip(qs, qvecs):
                    t0 = time.perf_counter()
                    r.search(q, k=5, mode=mode)
                    full.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    r.search_vector(q, v, k=5, mode=mode)
                    search.append(time.perf_counter() - t0)
                rows.append((label, mode, full, search))
    print(f"\nquery latency over {n_queries} queries (k=5, beam 5)")
    for label, mode, full, search in rows:
        print(f"  {label:30s} {mode:4s}  with encoding: {_pcts(full)} | "
              f"search only: {_pcts(search)}")
    for label in dict.fromkeys(r[0] for r in rows):
        t = next(np.percentile(r[3], 50) for r in rows if r[0] == label and r[1] == "tree")
        f = next(np.percentile(r[3], 50) for r in rows if r[0] == label and r[1] == "flat")
        print(f"  {label}: tree/flat p50 (search only) = {t / f:.2f}x (target <= 2x),"
              f" tree p50 {t * 1000:.1f} ms (target < 50 ms)")


def selection_recall(db: str, queries_path: Path, encoder: Encoder) -> None:
    """First-stage document selection on the dev queries, run corpus-wide.

    ContractNLI asks the same 17 hypotheses of every document: a query's text does not
    say which of the (8 to 56) documents with evidence for it is "its" document. So next
    to recall (the query's own document chosen) this prints the bound no selector can
    beat, mean min(n_docs, m) / m over queries whose text has m gold documents, and the
    share of chosen documents that hold evidence for the query's text (precision).
    """
    queries = [json.loads(line) for line in queries_path.read_text().splitlines() if line]
    gold_docs: dict[str, set[str]] = {}
    for q in queries:
        gold_docs.setdefault(q["query"], set()).update(q["doc_ids"])
    qvecs = encoder.encode_texts([q["query"] for q in queries])
    print(f"\ndocument selection on {len(queries)} dev queries ({len(gold_docs)} distinct "
          "texts), corpus-wide")
    for n_docs in (1, 3, 5, 8, 10, 20):
        r = Retriever(db, encoder=encoder, n_docs=n_docs)
        hit, bound, prec = 0, 0.0, 0.0
        for q, v in zip(queries, qvecs):
            chosen = r.choose_documents(v, None)
            golds = gold_docs[q["query"]]
            hit += bool(set(q["doc_ids"]) & set(chosen))
            bound += min(n_docs, len(golds)) / len(golds)
            prec += len(golds & set(chosen)) / max(len(chosen), 1)
        n = len(queries)
        print(f"  n_docs={n_docs:3d}: recall {hit / n:.3f}  (bound {bound / n:.3f}, "
              f"{hit / bound:.0%} of it)  precision {prec / n:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dev-db", help="database of the ContractNLI dev documents")
    ap.add_argument("--dev-queries", default=str(
        ROOT.parent / "shared" / "data" / "contractnli" / "dev.queries.jsonl"))
    args = ap.parse_args()
    encoder = Encoder()
    latency(encoder, args.queries)
    if args.dev_db:
        selection_recall(args.dev_db, Path(args.dev_queries), encoder)


if __name__ == "__main__":
    main()
