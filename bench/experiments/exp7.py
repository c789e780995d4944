"""Full tree pipeline: fused node scores x size penalty x seeds (library functions)."""
import sys, itertools
from common import *
from sproutrag.learn.variants import Variant, variant_trees as build_trees, run_variant
from sproutrag.learn.features import attach_terms, read_jsonl
from sproutrag.encoder.weights import load_default_weights
w = load_default_weights(None)
sets = [s.split(":") for s in sys.argv[1].split(",")]
grid_w = [float(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [0.0, 0.3, 0.5, 0.7]
grid_g = [float(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0.0, 0.25, 0.5, 1.0, 100.0]
for name, split in sets:
    feats, queries, qv, texts = load(name, split)
    attach_terms(feats, [{"doc_id": d, "text": t} for d, t in texts.items()])
    base = Variant("t", mix=w.mix(), parent_embedding="size_weighted")
    trees = build_trees(feats, base)
    flat = score(run_variant(Variant("flat", mode="flat"), feats, queries, qv, KS), feats, queries)
    report(f"{name}-{split} flat", flat)
    report(f"{name}-{split} tree shipped (delta .45)", score(run_variant(replace(base, delta=0.45) if False else Variant("t", mix=w.mix(), parent_embedding="size_weighted", delta=0.45), feats, queries, qv, KS, trees), feats, queries), flat)
    for lw in grid_w:
        if lw > 0:
            report(f"{name}-{split} flat lexical w={lw}", score(run_variant(Variant("fl", mode="flat", lexical_weight=lw), feats, queries, qv, KS), feats, queries), flat)
        for g in grid_g:
            for seed in (False, True):
                v = Variant("t", mix=w.mix(), parent_embedding="size_weighted", lexical_weight=lw, size_penalty=g, seed_leaves=seed)
                st = {}
                r = score(run_variant(v, feats, queries, qv, KS, trees, st), feats, queries)
                report(f"{name}-{split} tree w={lw} g={g} seed={int(seed)} int={st.get('internal_hits',0)/max(st.get('hits',1),1):.2f}", r, flat)
