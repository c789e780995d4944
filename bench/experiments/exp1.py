"""Baselines on the paper's metric + simple tree-context leaf scoring."""
import sys
from common import *
from sproutrag.learn.variants import Variant, variant_trees as build_trees, retrieve_tree, retrieve_flat
from sproutrag.encoder.weights import load_default_weights
from sproutrag.search.tree_search import cosine_scores, SearchParams
w = load_default_weights(None)
name, split = sys.argv[1], sys.argv[2]
feats, queries, qv, texts = load(name, split)
print(name, split, len(feats), "docs", len(queries), "queries", "mean leaves", np.mean([f.n for f in feats.values()]))
flat = score(run_budget(lambda q, v, k: retrieve_flat(feats, v, q["doc_ids"], k=k), feats, queries, qv), feats, queries)
report("flat", flat)
V = Variant("t", mix=w.mix(), parent_embedding="size_weighted")
trees = build_trees(feats, V)
for delta in (0.45, 0.0):
    for beam in (5, 10**6):
        r = score(run_budget(lambda q, v, k: retrieve_tree(trees, feats, v, q["doc_ids"], k=k, params=SearchParams(beam_width=beam, threshold=delta)), feats, queries, qv), feats, queries)
        report(f"tree delta {delta} beam {beam}", r, flat)

def leaf_rank(q, v, k, fn):
    rows = []
    for d in q["doc_ids"]:
        t = trees[d]; s = cosine_scores(t.vectors, v)
        sc = fn(t, s)
        rows += [(-float(x), d, u) for u, x in enumerate(sc)]
    rows.sort()
    return [(d, int(feats[d].spans[u, 0]), int(feats[d].spans[u, 1])) for _, d, u in rows[:k]]

def anc(t, s, lam, depth):
    n = t.n; out = s[:n].copy()
    node = np.arange(n)
    acc = np.zeros(n)
    for h in range(depth):
        node = np.where(node >= 0, t.parent[np.maximum(node, 0)], -1)
        acc = np.maximum(acc, np.where(node >= 0, s[np.maximum(node, 0)], 0)) if h == 0 else np.maximum(acc, np.where(node >= 0, s[np.maximum(node,0)], 0))
    return out + lam * acc

def parent_only(t, s, lam):
    n = t.n
    p = t.parent[:n]
    return s[:n] + lam * np.where(p >= 0, s[np.maximum(p, 0)], 0)

def adjacent(t, s, lam):
    n = t.n; x = s[:n]
    nb = np.zeros(n); c = np.zeros(n)
    nb[1:] += x[:-1]; c[1:] += 1; nb[:-1] += x[1:]; c[:-1] += 1
    return x + lam * nb / np.maximum(c, 1)

for lam in (0.25, 0.5, 1.0):
    report(f"leaf + {lam} parent", score(run_budget(lambda q, v, k: leaf_rank(q, v, k, lambda t, s: parent_only(t, s, lam)), feats, queries, qv), feats, queries), flat)
    report(f"leaf + {lam} max anc(3)", score(run_budget(lambda q, v, k: leaf_rank(q, v, k, lambda t, s: anc(t, s, lam, 3)), feats, queries, qv), feats, queries), flat)
    report(f"leaf + {lam} adjacent mean", score(run_budget(lambda q, v, k: leaf_rank(q, v, k, lambda t, s: adjacent(t, s, lam)), feats, queries, qv), feats, queries), flat)
