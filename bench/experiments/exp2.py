"""Lexical hybrids."""
import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
name, split = sys.argv[1], sys.argv[2]
feats, queries, qv, texts = load(name, split)
def leaf_texts(d):
    t = texts[d]; return [t[s:e] for s, e in feats[d].spans]
LT = {d: leaf_texts(d) for d in feats}
flat = score(run_budget(lambda q, v, k: rank(q, v, k, 0.0, "none"), feats, queries, qv), feats, queries) if False else None
def rank(q, v, k, lam, norm):
    rows = []
    docs = q["doc_ids"]
    cos = {d: cosine_scores(feats[d].emb, v) for d in docs}
    allt = [x for d in docs for x in LT[d]]
    bm = bm25_scores(q["query"], allt)
    off = 0
    for d in docs:
        n = feats[d].n; b = bm[off:off+n]; off += n
        if norm == "max": b = b / max(bm.max(), 1e-9)
        elif norm == "z": b = (b - bm.mean()) / max(bm.std(), 1e-9)
        c = cos[d]
        sc = c + lam * b
        rows += [(-float(x), d, u) for u, x in enumerate(sc)]
    rows.sort()
    return [(d, int(feats[d].spans[u, 0]), int(feats[d].spans[u, 1])) for _, d, u in rows[:k]]
flat = score(run_budget(lambda q, v, k: rank(q, v, k, 0.0, "max"), feats, queries, qv), feats, queries)
report("flat", flat)
report("bm25 only", score(run_budget(lambda q, v, k: rank(q, v, k, 1000.0, "max"), feats, queries, qv), feats, queries), flat)
for lam in (0.05, 0.1, 0.2, 0.3):
    report(f"cos + {lam} bm25/max", score(run_budget(lambda q, v, k: rank(q, v, k, lam, "max"), feats, queries, qv), feats, queries), flat)
for lam in (0.02, 0.05, 0.1):
    report(f"cos + {lam} bm25 z", score(run_budget(lambda q, v, k: rank(q, v, k, lam, "z"), feats, queries, qv), feats, queries), flat)
