"""When the top-ranked leaf is evidence, is its tree sibling as likely to be evidence as
the next-ranked leaf?

    PYTHONPATH=. .venv/bin/python bench/research/sibling_evidence.py [--sets ...]
        [--splits ...] [--weights FILE] [--lexical-weight W]

The question behind the size penalty: an internal node of two leaves beats the two best
single leaves only if a leaf's tree sibling is evidence more often than the next leaf by
score. Per query, leaves are ranked by the fused score of the tree search (`node_scores`:
z(cos) + w z(BM25), with the weights' attention mix for the trees); given that the top
leaf is gold, the script counts how often (a) the next-ranked leaf, (b) the top leaf's
sibling in the attention tree (when it is a leaf) and (c) its better-scored document
neighbour are gold, and the same given a top leaf that is not gold. docs/results.md,
"Why internal nodes do not earn their units".
"""

from __future__ import annotations

import argparse

from labelled_sets import Split, each_split, parse_args

from sproutrag.encoder.weights import load_default_weights
from sproutrag.learn.datasets import gold_spans
from sproutrag.learn.variants import Variant, variant_trees
from sproutrag.search.tree_search import node_scores

CASES = ("second", "sibling", "neighbour")


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights", help="weights file: alpha for the trees (default: packaged)")
    p.add_argument("--lexical-weight", type=float,
                   help="w of the fused score (default: the weights' lexical_weight)")


def counts(s: Split, mix, parent_embedding: str, lexical_weight: float) -> dict[str, list[int]]:
    """[gold, seen] per case and condition ("second|top": the next leaf given a gold top)."""
    trees = variant_trees(s.feats, Variant("t", mix=mix, parent_embedding=parent_embedding))
    stats = {"top": [0, 0]} | {f"{c}|{t}": [0, 0] for t in ("top", "~top") for c in CASES}
    for q, v in zip(s.queries, s.qvecs, strict=True):
        docs = q["doc_ids"]
        sc = node_scores({d: trees[d] for d in docs}, v, query=q["query"],
                         lexical={d: s.feats[d].terms for d in docs},
                         lexical_weight=lexical_weight)
        ranked = sorted((-float(sc[d].rank[u]), d, u) for d in docs for u in range(trees[d].n))
        gold = gold_spans(q)

        def is_gold(d: str, u: int) -> bool:
            a, b = s.feats[d].spans[u]
            return any(g == d and max(a, ga) < min(b, gb) for g, ga, gb in gold)  # noqa: B023

        _, d, u = ranked[0]
        t = trees[d]
        top = is_gold(d, u)
        cond = "top" if top else "~top"
        stats["top"][0] += top
        stats["top"][1] += 1
        parent = t.parent[u]
        sibling = t.right[parent] if t.left[parent] == u else t.left[parent]
        neighbours = [x for x in (u - 1, u + 1) if 0 <= x < t.n]
        found = {"second": ranked[1][1:] if len(ranked) > 1 else None,
                 "sibling": (d, int(sibling)) if sibling < t.n else None,
                 "neighbour": (d, max(neighbours, key=lambda x: sc[d].rank[x]))  # noqa: B023
                 if neighbours else None}
        for case, where in found.items():
            if where is not None:
                stats[f"{case}|{cond}"][0] += is_gold(*where)
                stats[f"{case}|{cond}"][1] += 1
    return stats


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    args = parse_args(__doc__, argv, options)
    settings = load_settings(args.config)
    weights = load_default_weights(args.weights or settings.encoding.weights)
    w = weights.search.lexical_weight if args.lexical_weight is None else args.lexical_weight
    print(f"weights {weights.source}, lexical weight {w:g}")
    for s in each_split(args):
        stats = counts(s, weights.mix(), settings.tree.parent_embedding, w)
        print(s.name, "  ".join(f"{k} {a}/{b} = {a / max(b, 1):.2f}"
                                for k, (a, b) in stats.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
