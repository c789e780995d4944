"""Fusion normalisations, leaves only, per set (train and dev)."""
import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
def z(x): return (x - x.mean()) / max(x.std(), 1e-9)
def mm(x): return (x - x.min()) / max(x.max() - x.min(), 1e-9)
def mx(x): return x / max(x.max(), 1e-9)
forms = {
 "z+z": lambda c, b, w: z(c) + w * z(b),
 "cos+max": lambda c, b, w: c + w * 0.4 * mx(b),
 "mm+mm": lambda c, b, w: mm(c) + w * 0.5 * mm(b),
 "z+max": lambda c, b, w: z(c) + w * 3 * mx(b),
 "z+zlog": lambda c, b, w: z(c) + w * z(np.log1p(b)),
 "z+rank": lambda c, b, w: z(c) - w * 1.0 * np.log1p(np.argsort(np.argsort(-b))),
}
W = (0.25, 0.5, 0.75, 1.0, 1.5)
res = {}
for name in ("cnli", "hotpot", "long"):
    for split in ("train", "dev"):
        feats, queries, qv, texts = load(name, split)
        P = []
        for q, v in zip(queries, qv):
            keys, cos, lt = [], [], []
            for d in q["doc_ids"]:
                cos.append(cosine_scores(feats[d].emb, v)); keys += [(d, u) for u in range(feats[d].n)]
                lt += [texts[d][s:e] for s, e in feats[d].spans]
            P.append((keys, np.concatenate(cos).astype(np.float64), bm25_scores(q["query"], lt)))
        def run(fn):
            runs = {k: [] for k in KS}
            for keys, c, b in P:
                o = np.argsort(-fn(c, b), kind="stable")[:5]
                r = [(keys[i][0], *map(int, feats[keys[i][0]].spans[keys[i][1]])) for i in o]
                for k in KS: runs[k].append(r[:k])
            return score(runs, feats, queries)
        flat = run(lambda c, b: c)
        for f, fn in forms.items():
            for w in W:
                r = run(lambda c, b: fn(c, b, w))
                res[(f, w, name, split)] = (r[0]["ie"] / flat[0]["ie"], r[2][0].ie / max(flat[2][0].ie, 1e-9))
        print("done", name, split, flush=True)
print("form w | ratio IE cnli/hotpot/long train | dev  || IE@1 ratio dev")
for f in forms:
    for w in W:
        tr = [res[(f, w, n, "train")][0] for n in ("cnli", "hotpot", "long")]
        dv = [res[(f, w, n, "dev")][0] for n in ("cnli", "hotpot", "long")]
        d1 = [res[(f, w, n, "dev")][1] for n in ("cnli", "hotpot", "long")]
        print(f"{f:8s} {w:4g} | {' '.join(f'{x:.3f}' for x in tr)} mean {np.mean(tr):.3f} | {' '.join(f'{x:.3f}' for x in dv)} mean {np.mean(dv):.3f} min {min(dv):.3f} || {' '.join(f'{x:.2f}' for x in d1)}")
