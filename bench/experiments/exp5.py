"""Fusion forms on train sets: z(cos)+w z(bm), cos + w bm/max, RRF."""
import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
sets = [s.split(":") for s in sys.argv[1].split(",")]
def z(x): return (x - x.mean()) / max(x.std(), 1e-9)
def prep(name, split):
    feats, queries, qv, texts = load(name, split)
    P = []
    for q, v in zip(queries, qv):
        keys, cos, lt = [], [], []
        for d in q["doc_ids"]:
            c = cosine_scores(feats[d].emb, v); cos.append(c); keys += [(d, u) for u in range(feats[d].n)]
            lt += [texts[d][s:e] for s, e in feats[d].spans]
        cos = np.concatenate(cos).astype(np.float64); bm = bm25_scores(q["query"], lt).astype(np.float64)
        P.append((keys, cos, bm))
    return feats, queries, P
data = {f"{n}-{s}": prep(n, s) for n, s in sets}
def run(feats, queries, P, fn):
    runs = {k: [] for k in KS}
    for (keys, cos, bm) in P:
        sc = fn(cos, bm)
        o = np.argsort(-sc, kind="stable")
        ranked = [(keys[i][0], *map(int, feats[keys[i][0]].spans[keys[i][1]])) for i in o[:5]]
        for k in KS: runs[k].append(ranked[:k])
    return score(runs, feats, queries)
def rrf(cos, bm, w, c=60):
    rc = np.argsort(np.argsort(-cos)); rb = np.argsort(np.argsort(-bm))
    return 1 / (c + rc) + w / (c + rb)
forms = {}
for w in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0):
    forms[f"z+{w}z"] = (lambda w: lambda c, b: z(c) + w * z(b))(w)
for w in (0.1, 0.2, 0.3, 0.4):
    forms[f"cos+{w}max"] = (lambda w: lambda c, b: c + w * b / max(b.max(), 1e-9))(w)
for w in (0.3, 0.5, 1.0):
    for c in (10, 60):
        forms[f"rrf w{w} c{c}"] = (lambda w, c: lambda a, b: rrf(a, b, w, c))(w, c)
for name, (feats, queries, P) in data.items():
    flat = run(feats, queries, P, lambda c, b: c)
    report(f"{name} flat", flat)
    for f, fn in forms.items():
        report(f"{name} {f}", run(feats, queries, P, fn), flat)
