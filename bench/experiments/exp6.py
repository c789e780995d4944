"""Seeded expansion: relation to the top leaf (attention M) vs adjacency; tree diversity."""
import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
from sproutrag.learn.variants import Variant, variant_trees as build_trees, relations
from sproutrag.encoder.weights import load_default_weights
w = load_default_weights(None)
V = Variant("t", mix=w.mix(), parent_embedding="size_weighted")
sets = [s.split(":") for s in sys.argv[1].split(",")]
def z(x): return (x - x.mean()) / max(x.std(), 1e-9)
def prep(name, split):
    feats, queries, qv, texts = load(name, split)
    trees = build_trees(feats, V)
    rel = {}
    for d, f in feats.items():
        i, j, m = relations(f, V)
        M = {}
        for a, b, x in zip(i.tolist(), j.tolist(), m.tolist()):
            M[(a, b)] = x; M[(b, a)] = x
        rel[d] = M
    P = []
    for q, v in zip(queries, qv):
        keys, cos, lt = [], [], []
        for d in q["doc_ids"]:
            c = cosine_scores(feats[d].emb, v); cos.append(c); keys += [(d, u) for u in range(feats[d].n)]
            lt += [texts[d][s:e] for s, e in feats[d].spans]
        cos = np.concatenate(cos).astype(np.float64); bm = bm25_scores(q["query"], lt).astype(np.float64)
        P.append((keys, z(cos) + 0.5 * z(bm)))
    return feats, queries, P, trees, rel
data = {f"{n}-{s}": prep(n, s) for n, s in sets}
def greedy(feats, keys, base, k, bonus):
    sel = []
    sc = base.copy()
    while len(sel) < min(k, len(sc)):
        i = int(np.argmax(sc)); sel.append(i); sc[i] = -np.inf
        if bonus is not None:
            sc = sc + bonus(keys, i, sel) * np.isfinite(sc)
            sc[np.isnan(sc)] = -np.inf
    return [(keys[i][0], *map(int, feats[keys[i][0]].spans[keys[i][1]])) for i in sel]
def run(data_, bonus_fn):
    feats, queries, P, trees, rel = data_
    runs = {k: [] for k in KS}
    for (keys, base) in P:
        b = bonus_fn(trees, rel) if bonus_fn else None
        for k in KS: runs[k].append(greedy(feats, keys, base, k, b))
    return score(runs, feats, queries)
def rel_bonus(beta):
    def make(trees, rel):
        def f(keys, i, sel):
            if len(sel) > 1: return np.zeros(len(keys))
            d, u = keys[i]; M = rel[d]
            x = np.asarray([M.get((u, v), 0.0) if dd == d else 0.0 for dd, v in keys])
            return beta * x / max(x.max(), 1e-9)
        return f
    return make
def adj_bonus(beta):
    def make(trees, rel):
        def f(keys, i, sel):
            if len(sel) > 1: return np.zeros(len(keys))
            d, u = keys[i]
            return beta * np.asarray([1.0 if dd == d and abs(v - u) == 1 else 0.0 for dd, v in keys])
        return f
    return make
def div_pen(gamma, size):
    def make(trees, rel):
        def f(keys, i, sel):
            d, u = keys[i]; t = trees[d]
            node = u
            while t.parent[node] >= 0 and t.n_leaves[t.parent[node]] <= size: node = t.parent[node]
            lv = set(t.leaves_of(node).tolist())
            return np.asarray([-gamma if dd == d and v in lv else 0.0 for dd, v in keys])
        return f
    return make
for name, dd in data.items():
    base = run(dd, None); report(f"{name} fused", base)
    for beta in (0.25, 0.5, 1.0):
        report(f"{name} + rel-to-top {beta}", run(dd, rel_bonus(beta)), base)
        report(f"{name} + adj-to-top {beta}", run(dd, adj_bonus(beta)), base)
    for g in (0.25, 0.5):
        for s in (2, 4):
            report(f"{name} tree-div {g} size {s}", run(dd, div_pen(g, s)), base)
