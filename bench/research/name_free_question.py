"""Units ranked within their documents by the question less its names (a probe, stop 76).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/name_free_question.py \
        DB QUERIES.jsonl [--gate none|paragraphs|opening] [--share 0.0]

A question names its document ("What was Acme Robotics' gross margin in Q3 2024?"); the
document's opening unit writes the name (and the period) and every other unit does not,
so within the document the opening unit outranks the answer, in the cosine and in BM25
alike. The probe embeds the question again with its entities
(`sproutrag.search.entities.question_entities`) taken out ("What was gross margin in Q3
2024?") and ranks each question's units within its documents (leaves mode's fused score,
`z(cosine) + z(BM25)`, statistics over the searched leaves) with the name-free vector
and/or the name-free BM25 in place of, or averaged with, the question's own. With
`--gate paragraphs` the name-free scores apply only to documents in which one of the
question's names is written in at least two blank-line paragraphs and in at least
`--share` of them (a name the whole document writes says which document, not which
unit); with `--gate opening` only to the documents rule 62 gates in (`opens_with`: at
least 32 leaves, a name in the first 300 characters; rule 64's train check); other
documents keep today's scores. Prints unit IE (k = 1, 3, 5) per variant,
paired against today's and against the mean cosine (rule 62 with `--gate opening`). DB: a
database `sproutrag index` built of the set's documents.
Not a test.
"""

from __future__ import annotations

import argparse
import json
import re

import numpy as np

from sproutrag import Retriever
from sproutrag.learn.metrics import gold_units, score_query
from sproutrag.names import folded, mention_words, words
from sproutrag.search.entities import question_entities
from sproutrag.search.lexical import LeafTerms, bm25_leaves
from sproutrag.search.name_free import OPENING_CHARS, name_free, opens_with
from sproutrag.search.node_scores import cosine_scores

VARIANTS = ("today", "name-free cosine", "mean cosine", "mean cosine, name-free BM25",
            "name-free cosine and BM25", "mean cosine, BM25 less opening-only names")


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 1e-9 else 1.0)


def _names_the_document(text: str, entities: list[str], share: float) -> bool:
    paragraphs = [words(p) for p in re.split(r"\n\s*\n", text) if p.strip()]
    for e in entities:
        n = sum(f" {e} " in p for p in paragraphs)
        if n >= 2 and n >= share * len(paragraphs):
            return True
    return False


def opening_only(texts, n: int, entities: list[str]) -> list[str]:
    """ENTITIES a document (its leaves' TEXTS, N of them) writes in its opening leaves
    (those that start in its first OPENING_CHARS characters) and in no later leaf: a
    name that says which document, not which unit (rule 66's gate)."""
    held, first = 0, 0
    for t in texts[:n]:
        if held >= OPENING_CHARS:
            break
        held += len(t) + 1
        first += 1
    head = mention_words(" ".join(texts[:first]))
    body = [mention_words(t) for t in texts[first:n]]
    return [e for e in entities if f" {folded(e)} " in head
            and not any(f" {folded(e)} " in b for b in body)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("queries")
    ap.add_argument("--gate", choices=("none", "paragraphs", "opening"), default="none")
    ap.add_argument("--share", type=float, default=0.0)
    args = ap.parse_args()
    retriever = Retriever(args.db)
    queries = [json.loads(line) for line in open(args.queries, encoding="utf-8")]
    per: dict[str, list[float]] = {v: [] for v in VARIANTS}
    n_changed = n_gated = n_only = 0
    for q in queries:
        docs = q.get("doc_ids") or sorted({g["doc_id"] for g in q["gold"]})
        trees = retriever.documents.tree_ids(docs)
        entities = question_entities(q["query"])
        free = name_free(q["query"], entities) or q["query"]
        n_changed += free != q["query"]
        qv, fv = retriever._embed([q["query"], free])
        units, cos, cos_f, terms, gate, b_only = [], [], [], [], [], []
        for d in docs:
            st = retriever.tree(d, trees[d])
            text = retriever.document_text(d, trees[d])
            n = len(st.texts)
            units += [(d, int(s), int(e)) for s, e in st.spans]
            cos.append(cosine_scores(st.tree.vectors[:n], qv))
            cos_f.append(cosine_scores(st.tree.vectors[:n], fv))
            terms.append(LeafTerms.of_document(text, st.spans.tolist()))
            gated = (opens_with(st.texts, n, entities) if args.gate == "opening" else
                     args.gate == "none" or _names_the_document(text, entities, args.share))
            gate.append(np.full(n, gated))
            only = opening_only(st.texts, n, entities) if gated else []
            b_only.append(None if not only else name_free(q["query"], only) or None)
        g = np.concatenate(gate)
        n_gated += bool(g.any()) and free != q["query"]
        c, cf = np.concatenate(cos), np.concatenate(cos_f)
        per_doc = bm25_leaves(q["query"], terms)
        b = np.concatenate(per_doc)
        bf = np.concatenate(bm25_leaves(free, terms))
        mean = np.where(g, (c + cf) / 2, c)
        own = [bm25_leaves(o, terms)[i] if o else per_doc[i] for i, o in enumerate(b_only)]
        n_only += any(o is not None for o in b_only)
        bo = np.concatenate(own)
        scores = {"today": _z(c) + _z(b),
                  "name-free cosine": _z(np.where(g, cf, c)) + _z(b),
                  "mean cosine": _z(mean) + _z(b),
                  "mean cosine, name-free BM25": _z(mean) + _z(np.where(g, bf, b)),
                  "name-free cosine and BM25": _z(np.where(g, cf, c)) + _z(np.where(g, bf, b)),
                  "mean cosine, BM25 less opening-only names": _z(mean) + _z(bo)}
        gold = [(x["doc_id"], x["start"], x["end"]) for x in q["gold"]]
        gold_u = gold_units(units, gold)
        for v in VARIANTS:
            order = [units[i] for i in np.lexsort((np.arange(len(units)), -scores[v]))]
            per[v].append(float(np.mean([score_query(order, gold, gold_u, k=k).ie
                                         for k in (1, 3, 5)])))
    print(f"{args.db}: {len(queries)} questions, {n_changed} with names taken out, "
          f"{n_gated} of them gated in (--gate {args.gate}, --share {args.share}), "
          f"{n_only} with an opening-only name")
    for v in VARIANTS:
        a = np.asarray(per[v]) * 100
        cells = []
        for against in ("today", "mean cosine"):
            d = a - np.asarray(per[against]) * 100
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
            cells.append(f"- {against} {d.mean():+6.2f} +/- {se:.2f}")
        print(f"  {v:30} unit IE {a.mean():6.2f}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
