"""Clipped lexical z-scores."""
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
def z(x): return (x - x.mean()) / max(x.std(), 1e-9)
W = (0.5, 0.75, 1.0)
C = (None, 2.0, 3.0, 4.0)
res = {}
for name in ("cnli", "hotpot", "long", "clong"):
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
        for w in W:
            for cl in C:
                r = run(lambda c, b: z(c) + w * (z(b) if cl is None else np.minimum(z(b), cl)))
                res[(w, cl, name, split)] = (r[0]["ie"] / flat[0]["ie"], r[2][0].ie / max(flat[2][0].ie, 1e-9))
print("w clip | train ratios cnli hotpot long clong | dev | IE@1 dev")
for w in W:
    for cl in C:
        tr = [res[(w, cl, n, "train")][0] for n in ("cnli", "hotpot", "long", "clong")]
        dv = [res[(w, cl, n, "dev")][0] for n in ("cnli", "hotpot", "long", "clong")]
        d1 = [res[(w, cl, n, "dev")][1] for n in ("cnli", "hotpot", "long", "clong")]
        print(f"{w:4g} {str(cl):5s} | {' '.join(f'{x:.3f}' for x in tr)} mean {np.mean(tr):.3f} | {' '.join(f'{x:.3f}' for x in dv)} mean {np.mean(dv):.3f} | {' '.join(f'{x:.2f}' for x in d1)}")
