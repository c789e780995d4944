"""Corpus-wide search (no doc_ids): first stage = docs of the nearest nodes, then search."""
import sys
from common import *
from sproutrag.learn.variants import Variant, variant_trees as build_trees, retrieve_tree, retrieve_flat
from sproutrag.learn.features import attach_terms
from sproutrag.encoder.weights import load_default_weights
w = load_default_weights(None)
for name in sys.argv[1].split(","):
    feats, queries, qv, texts = load(name, "dev")
    attach_terms(feats, [{"doc_id": d, "text": t} for d, t in texts.items()])
    v = Variant("t", mix=w.mix(), parent_embedding="size_weighted", lexical_weight=w.lexical_weight, size_penalty=w.size_penalty, seed_leaves=w.seed_leaves)
    trees = build_trees(feats, v)
    ids = list(trees)
    allv = np.concatenate([trees[d].unit_vectors for d in ids]); owner = np.concatenate([[d] * len(trees[d].vectors) for d in ids])
    alldocs = ids
    for n_docs in (8, 20):
        runs_t = {k: [] for k in KS}; runs_f = {k: [] for k in KS}; hit = 0
        for q, qq in zip(queries, qv):
            s = allv @ (qq / np.linalg.norm(qq))
            top = np.argsort(-s)[:max(50, 10 * n_docs)]
            docs = list(dict.fromkeys(owner[top].tolist()))[:n_docs]
            hit += all(d in docs for d in q["doc_ids"])
            for k in KS:
                runs_t[k].append(retrieve_tree(trees, feats, qq, docs, k=k, params=v.search_params(), query=q["query"]))
                runs_f[k].append(retrieve_flat(feats, qq, alldocs, k=k))
        f = score(runs_f, feats, queries); t = score(runs_t, feats, queries)
        report(f"{name} corpus-wide flat", f)
        report(f"{name} corpus-wide tree n_docs={n_docs} (gold doc chosen {hit}/{len(queries)})", t, f)
