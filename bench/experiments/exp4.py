"""Tree context with node-text embeddings: leaf + parent(text) scores."""
import sys
from common import *
from nodetext import node_text_vectors
from sproutrag.learn.variants import Variant, variant_trees as build_trees
from sproutrag.encoder.weights import load_default_weights
from sproutrag.search.tree_search import cosine_scores
w = load_default_weights(None)
V = Variant("t", mix=w.mix(), parent_embedding="size_weighted")
name, split = sys.argv[1], sys.argv[2]
feats, queries, qv, texts = load(name, split)
trees = build_trees(feats, V)
NV = node_text_vectors(name, split, feats, trees, texts)
def leaf_rank(q, v, k, fn):
    rows = []
    for d in q["doc_ids"]:
        t = trees[d]; s = cosine_scores(NV[d], v)
        sc = fn(t, s)
        rows += [(-float(x), d, u) for u, x in enumerate(sc)]
    rows.sort()
    return [(d, int(feats[d].spans[u, 0]), int(feats[d].spans[u, 1])) for _, d, u in rows[:k]]
def par(t, s, lam, mode):
    n = t.n; p = t.parent[:n]; ps = s[p]
    if mode == "add": return s[:n] + lam * ps
    if mode == "max": return np.maximum(s[:n], ps - lam)
    if mode == "mix": return (1 - lam) * s[:n] + lam * ps
flat = score(run_budget(lambda q, v, k: leaf_rank(q, v, k, lambda t, s: s[:t.n]), feats, queries, qv), feats, queries)
report("flat", flat)
for lam in (0.2, 0.35, 0.5, 0.65):
    report(f"mix leaf/parent-text {lam}", score(run_budget(lambda q, v, k: leaf_rank(q, v, k, lambda t, s: par(t, s, lam, "mix")), feats, queries, qv), feats, queries), flat)
