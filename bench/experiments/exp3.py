"""Learned leaf relevance from leaf / adjacency / tree features (logistic regression)."""
import sys
from common import *
from feats import *
from sproutrag.learn.variants import Variant, variant_trees as build_trees
from sproutrag.encoder.weights import load_default_weights
from sklearn.linear_model import LogisticRegression
w = load_default_weights(None)
V = Variant("t", mix=w.mix(), parent_embedding="size_weighted")
dev_name = sys.argv[1]
train_sets = sys.argv[2].split(",")

def prep(name, split):
    feats, queries, qv, texts = load(name, split)
    trees = build_trees(feats, V)
    LT = {d: [texts[d][s:e] for s, e in feats[d].spans] for d in feats}
    X, Y, G = [], [], []
    for i, (q, v) in enumerate(zip(queries, qv)):
        F, keys = leaf_features(q, v, feats, trees, LT)
        X.append(F); Y.append(labels(q, feats, keys)); G.append(keys)
    return dict(feats=feats, queries=queries, qv=qv, X=X, Y=Y, G=G)

tr = [prep(n, "train") for n in train_sets]
dv = prep(dev_name, "dev")
def fit(cols, C=1.0):
    idx = [FEATURES.index(c) for c in cols]
    Xs, Ys, Ws = [], [], []
    for t in tr:
        nq = len(t["X"])
        for X, Y in zip(t["X"], t["Y"]):
            Xs.append(X[:, idx]); Ys.append(Y); Ws.append(np.full(len(Y), 1.0 / nq / len(Y)))
    X = np.concatenate(Xs); Y = np.concatenate(Ys); W = np.concatenate(Ws)
    m = LogisticRegression(C=C, max_iter=2000).fit(X, Y, sample_weight=W * len(W))
    return m, idx
def evaluate(m, idx):
    runs = {k: [] for k in KS}
    for X, keys in zip(dv["X"], dv["G"]):
        p = m.decision_function(X[:, idx])
        order = np.argsort(-p, kind="stable")
        ranked = [(keys[o][0], *map(int, dv["feats"][keys[o][0]].spans[keys[o][1]])) for o in order]
        for k in KS:
            runs[k].append(ranked[:k])
    return score(runs, dv["feats"], dv["queries"])
base_cols = ["cos"]
flat = evaluate(*fit(["cos"]))
report("flat (cos)", flat)
sets = {
    "leaf: cos+bm": ["cos", "cos_rel", "bm_z", "bm_max", "bm_rank", "cos_rank"],
}
sets["leaf+adj"] = sets["leaf: cos+bm"] + sorted(ADJ)
sets["leaf+tree"] = sets["leaf: cos+bm"] + [f for f in FEATURES if f in TREE]
sets["leaf+adj+tree"] = FEATURES
sets["cos+tree (no lexical)"] = ["cos", "cos_rel", "cos_rank", "par_cos", "gp_cos", "anc_cos", "sib_cos", "par_size"]
sets["cos+adj (no lexical)"] = ["cos", "cos_rel", "cos_rank", "adj_cos"]
res = {}
for name, cols in sets.items():
    m, idx = fit(cols)
    res[name] = evaluate(m, idx)
    report(name, res[name], flat)
    if name in ("leaf+adj+tree", "leaf+tree"):
        print("   coef", dict(zip(cols, np.round(m.coef_[0], 2))))
from sproutrag.learn.metrics import paired_difference
for a, b in [("leaf+tree", "leaf: cos+bm"), ("leaf+adj+tree", "leaf+adj"), ("leaf+adj", "leaf: cos+bm")]:
    mm, se = paired_difference(res[a][1], res[b][1]); print(f"  {a} - {b}: {100*mm:+.1f} +/- {100*se:.1f}")
