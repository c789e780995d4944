"""How often is the top leaf's tree sibling gold, vs the next-ranked leaf?"""
import sys
from common import *
from sproutrag.learn.variants import Variant, variant_trees as build_trees
from sproutrag.learn.features import attach_terms
from sproutrag.search.tree_search import node_scores
from sproutrag.encoder.weights import AggregationWeights
w = AggregationWeights.load(ROOT / "out/train-v4/weights.json")
for name in sys.argv[1].split(","):
    for split in ("train", "dev"):
        feats, queries, qv, texts = load(name, split)
        attach_terms(feats, [{"doc_id": d, "text": t} for d, t in texts.items()])
        trees = build_trees(feats, Variant("t", mix=w.mix(), parent_embedding="size_weighted"))
        stats = {k: [0, 0] for k in ("top", "second|top", "sib|top", "adj|top", "second|~top", "sib|~top", "adj|~top")}
        for q, v in zip(queries, qv):
            docs = q["doc_ids"]
            sc = node_scores({d: trees[d] for d in docs}, v, query=q["query"], lexical={d: feats[d].terms for d in docs}, lexical_weight=0.75)
            rows = sorted(((-float(sc[d].rank[u]), d, u) for d in docs for u in range(trees[d].n)))
            g = [(x["doc_id"], x["start"], x["end"]) for x in q["gold"]]
            def gold(d, u):
                s, e = feats[d].spans[u]; return any(dd == d and max(s, gs) < min(e, ge) for dd, gs, ge in g)
            _, d, u = rows[0]; t = trees[d]
            top = gold(d, u)
            p = t.parent[u]; sib = t.right[p] if t.left[p] == u else t.left[p]
            c = "|top" if top else "|~top"
            stats["top"][0] += top; stats["top"][1] += 1
            _, d2, u2 = rows[1]
            stats["second" + c][0] += gold(d2, u2); stats["second" + c][1] += 1
            if sib < t.n:
                stats["sib" + c][0] += gold(d, sib); stats["sib" + c][1] += 1
            nb = [x for x in (u - 1, u + 1) if 0 <= x < t.n]
            best_nb = max(nb, key=lambda x: sc[d].rank[x]) if nb else None
            if best_nb is not None:
                stats["adj" + c][0] += gold(d, best_nb); stats["adj" + c][1] += 1
        print(name, split, {k: f"{a}/{b}={a/max(b,1):.2f}" for k, (a, b) in stats.items()})
