import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
def z(x): return (x - x.mean()) / max(x.std(), 1e-9)
feats, queries, qv, texts = load("long", "dev")
for q, v in zip(queries, qv):
    keys, cos, lt = [], [], []
    for d in q["doc_ids"]:
        cos.append(cosine_scores(feats[d].emb, v)); keys += [(d, u) for u in range(feats[d].n)]
        lt += [texts[d][s:e] for s, e in feats[d].spans]
    c = np.concatenate(cos); b = bm25_scores(q["query"], lt)
    f = z(c) + 0.75 * z(b)
    gold = [(g["start"], g["end"]) for g in q["gold"]]
    def rel(i):
        s, e = feats[keys[i][0]].spans[keys[i][1]]; return any(max(s, gs) < min(e, ge) for gs, ge in gold)
    a, bb = int(np.argmax(c)), int(np.argmax(f))
    if rel(a) and not rel(bb):
        print("Q:", q["query"])
        print("  flat top:", round(float(c[a]),3), lt[a][:150].replace("\n"," "))
        print("  fused top:", round(float(c[bb]),3), round(float(b[bb]),2), lt[bb][:150].replace("\n"," "))
        print("  zc/zb of flat top", round(float(z(c)[a]),2), round(float(z(b)[a]),2), " fused top", round(float(z(c)[bb]),2), round(float(z(b)[bb]),2))
