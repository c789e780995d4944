"""Grid of search params on dev sets (per set), trained alpha from a weights file."""
import sys, itertools
from common import *
from sproutrag.learn.training import load_sets
from sproutrag.learn.calibration import _Scorer
from sproutrag.learn.variants import Variant, variant_trees as build_trees
from sproutrag.search.tree_search import SearchParams
from sproutrag.encoder.weights import AggregationWeights
w = AggregationWeights.load(sys.argv[1])
split = sys.argv[2]
W = [float(x) for x in sys.argv[3].split(",")]
G = [float(x) for x in sys.argv[4].split(",")]
paths = {k: v for k, v in {"cnli": "../shared/data/contractnli", "hotpot": "../shared/data/hotpotqa", "long": "out/data/hotpot-long", "clong": "out/data/contractnli-long"}.items() if k in sys.argv[5].split(",")}
for name, src in paths.items():
    feats, queries, texts = load_sets([(str(ROOT/src/f"{split}.docs.jsonl"), str(ROOT/src/f"{split}.queries.jsonl"))], encoder(), chunking={"sentences_per_chunk": 2, "max_chunk_chars": 1000}, cache_dir=str(ROOT/".eval-cache"), log=lambda *a: None)
    qv = encoder().encode_texts([q["query"] for q in queries])
    sc = _Scorer(feats, build_trees(feats, Variant("t", mix=w.mix(), parent_embedding="size_weighted")), queries, qv, KS)
    line = []
    for lw in W:
        for g in G:
            line.append(f"w{lw:g}/g{g:g}: {100*sc.objective(sc.units(SearchParams(lexical_weight=lw, size_penalty=g, seed_leaves=True))):.1f}")
    print(name, split, " ".join(line), flush=True)
