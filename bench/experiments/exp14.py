"""Pseudo-relevance feedback on the dense side of the shipped fusion: after ranking by
z(cos) + z(BM25 leaf+heading), move the query vector toward the top leaf, its tree
parent (the attention tree's node vector) or the top-3 leaves, and rank again."""
import sys
from common import *
from sproutrag.learn.variants import Variant, variant_trees
from sproutrag.encoder.weights import load_default_weights
from sproutrag.search.lexical import bm25_scores
def unit(x): return x / max(np.linalg.norm(x), 1e-9)
w = load_default_weights(None)
for name in sys.argv[1].split(","):
    for split in sys.argv[2].split(","):
        feats, queries, qv, texts = load(name, split)
        trees = variant_trees(feats, Variant("t", mix=w.mix(), parent_embedding="size_weighted"))
        heads = leaf_headings(feats, texts)
        P = []
        for q, v in zip(queries, qv):
            keys, E, par, lh = [], [], [], []
            for d in q["doc_ids"]:
                t = trees[d]; f = feats[d]
                E.append(f.emb); keys += [(d, u) for u in range(f.n)]
                pv = t.vectors[np.maximum(t.parent[:f.n], 0)]
                pv = np.where((t.parent[:f.n] >= 0)[:, None], pv, f.emb)
                par.append(pv)
                lh += [h + "\n" + texts[d][s:e] for h, (s, e) in zip(heads[d], f.spans)]
            E = np.concatenate(E).astype(np.float64); par = np.concatenate(par).astype(np.float64)
            par /= np.maximum(np.linalg.norm(par, axis=1, keepdims=True), 1e-9)
            P.append((keys, E, par, v.astype(np.float64), z(bm25_scores(q["query"], lh))))
        def run(fb, beta):
            def scores(E, par, v, zb):
                s = z(E @ v) + zb
                if beta:
                    o = np.argsort(-s, kind="stable")
                    x = {"leaf": E[o[0]], "parent": par[o[0]], "top3": E[o[:3]].mean(0)}[fb]
                    s = z(E @ unit(v + beta * unit(x))) + zb
                return s
            return ranked(P, feats, queries, scores)
        base = run("leaf", 0)
        report(f"{name}-{split} shipped fusion", base)
        for fb in ("leaf", "parent", "top3"):
            for beta in (0.3, 0.6):
                report(f"{name}-{split} PRF {fb} {beta}", run(fb, beta), base)
