"""Per-leaf features for a query over its documents' trees."""
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores

def tree_ctx(t, s, n):
    """parent score, grandparent score, max of 3 ancestors, sibling score, log parent size"""
    p = t.parent[:n].astype(np.int64)
    ps = s[p]
    gp = t.parent[p].astype(np.int64); gps = np.where(gp >= 0, s[np.maximum(gp, 0)], ps)
    ggp = np.where(gp >= 0, t.parent[np.maximum(gp, 0)], -1).astype(np.int64)
    ggps = np.where(ggp >= 0, s[np.maximum(ggp, 0)], gps)
    sib = np.where(t.left[p] == np.arange(n), t.right[p], t.left[p]).astype(np.int64)
    sibs = s[sib]
    return ps, gps, np.maximum(np.maximum(ps, gps), ggps), sibs, np.log2(t.n_leaves[p].astype(np.float64))

FEATURES = ["cos", "cos_rel", "bm_z", "bm_max", "bm_rank", "cos_rank",
            "adj_cos", "adj_bm",
            "par_cos", "gp_cos", "anc_cos", "sib_cos", "par_size", "par_bm", "sib_bm"]
TREE = {"par_cos", "gp_cos", "anc_cos", "sib_cos", "par_size", "par_bm", "sib_bm"}
ADJ = {"adj_cos", "adj_bm"}

def leaf_features(q, v, feats, trees, LT):
    docs = q["doc_ids"]
    allt = [x for d in docs for x in LT[d]]
    bm = bm25_scores(q["query"], allt).astype(np.float64)
    bz = (bm - bm.mean()) / max(bm.std(), 1e-9)
    bmax = bm / max(bm.max(), 1e-9)
    coss = []
    for d in docs:
        t = trees[d]; coss.append(cosine_scores(t.vectors, v).astype(np.float64))
    best = max(float(c[:feats[d].n].max()) for c, d in zip(coss, docs))
    allc = np.concatenate([c[:feats[d].n] for c, d in zip(coss, docs)])
    cr = np.argsort(np.argsort(-allc)); br = np.argsort(np.argsort(-bm))
    rows, keys = [], []
    off = 0
    for d, s in zip(docs, coss):
        t = trees[d]; n = feats[d].n
        c = s[:n]; b = bz[off:off+n]; bx = bmax[off:off+n]
        # node-level bm: mean of leaf bm over subtree, via leaf order prefix sums
        order = t.leaf_order
        pref = np.concatenate([[0.0], np.cumsum(b[order])])
        node_bm = (pref[t.leaf_end] - pref[t.leaf_start]) / np.maximum(t.leaf_end - t.leaf_start, 1)
        ps, gps, anc, sibs, psize = tree_ctx(t, s, n)
        p = t.parent[:n].astype(np.int64)
        sib = np.where(t.left[p] == np.arange(n), t.right[p], t.left[p]).astype(np.int64)
        adjc = np.zeros(n); adjb = np.zeros(n); cnt = np.zeros(n)
        adjc[1:] += c[:-1]; adjc[:-1] += c[1:]; adjb[1:] += b[:-1]; adjb[:-1] += b[1:]
        cnt[1:] += 1; cnt[:-1] += 1; cnt = np.maximum(cnt, 1)
        F = np.stack([c, c - best, b, bx, 1 / (1 + cr[off:off+n]), 1 / (1 + br[off:off+n]) if False else 1/(1+cr[off:off+n]),
                      adjc / cnt - best, adjb / cnt,
                      ps - best, gps - best, anc - best, sibs - best, psize, node_bm[p], node_bm[sib]], 1)
        F[:, 4] = 1 / (1 + br[off:off+n])
        rows.append(F); keys += [(d, u) for u in range(n)]
        off += n
    return np.concatenate(rows), keys

def labels(q, feats, keys):
    g = {}
    for x in q["gold"]:
        g.setdefault(str(x["doc_id"]), []).append((x["start"], x["end"]))
    y = []
    for d, u in keys:
        s, e = feats[d].spans[u]
        y.append(any(max(s, gs) < min(e, ge) for gs, ge in g.get(d, [])))
    return np.asarray(y, float)
