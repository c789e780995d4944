"""Does filling k change the answers? (The threshold orders the evidence; it does not
starve k.)

    PYTHONPATH=. .venv/bin/python bench/research/fill_k.py [--sets ...] [--splits dev]

The shipped search within each query's documents, tree mode and leaves mode, with the
learned threshold and margin as cutoffs that may leave fewer than k units (fill off,
what was shipped before) and as an order whose leftover leaves follow until k units
(fill on). Prints, per mode, the mean number of units returned at k = 5, 20 and 60 and
the share of queries that got fewer than k, then unit IE and char-IE (k = 1, 3, 5) with
the paired difference of fill on minus off. docs/results.md, "k filled".
"""

from __future__ import annotations

import numpy as np
from labelled_sets import KS, Split, each_split, parse_args, report_both, score

from sproutrag.encoder.weights import load_default_weights
from sproutrag.learn.variants import Variant, variant_trees
from sproutrag.search.tree_search import leaves_mode, search_trees

COUNTS = (5, 20, 60)


def _units(s: Split, trees: dict, params, mode: str, k: int, fill: bool) -> list[list]:
    """Each query's units (doc, start, end) at budget K, in rank order."""
    out = []
    for q, v in zip(s.queries, s.qvecs, strict=True):
        docs = list(q["doc_ids"])
        terms = {d: s.feats[d].terms for d in docs}
        if mode == "tree":
            chosen = search_trees({d: trees[d] for d in docs}, v, k=k, params=params,
                                  query=q["query"], lexical=terms, fill=fill)
            pairs = [(c.doc_id, int(u)) for c in chosen for u in c.leaves]
        else:
            ranked = leaves_mode({d: s.feats[d].emb for d in docs}, v, k=k, params=params,
                                 query=q["query"], lexical=terms, fill=fill)
            pairs = [(d, u) for d, u, _ in ranked]
        out.append([(d, *map(int, s.feats[d].spans[u])) for d, u in pairs])
    return out


def compare(s: Split, variant: Variant) -> None:
    trees = variant_trees(s.feats, variant)
    available = np.array([sum(s.feats[d].n for d in q["doc_ids"]) for q in s.queries])
    for mode in ("tree", "leaves"):
        for k in COUNTS:
            line = f"{s.name} {mode} k={k:2d}:"
            for fill in (False, True):
                got = np.array([len(u) for u in _units(s, trees, variant.search, mode, k,
                                                       fill)])
                short = float(np.mean(got < np.minimum(k, available)))
                line += (f"  fill {'on ' if fill else 'off'} {got.mean():5.2f} units, "
                         f"{100 * short:4.1f}% short")
            print(line, flush=True)
        rows = {}
        for fill in (False, True):
            runs = {k: _units(s, trees, variant.search, mode, k, fill) for k in KS}
            rows[fill] = score(f"{s.name} {mode}, fill {'on' if fill else 'off'}", runs, s)
        report_both(rows[False])
        report_both(rows[True], rows[False])


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    args = parse_args(__doc__, argv, lambda p: p.set_defaults(splits=["dev"]))
    settings = load_settings(args.config)
    w = load_default_weights(settings.encoding.weights)
    variant = Variant("tree", mix=w.mix(), parent_embedding=settings.tree.parent_embedding,
                      search=w.search)
    for s in each_split(args):
        compare(s, variant)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
