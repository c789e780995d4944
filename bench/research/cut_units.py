"""Rule 3 of the budgeted context (docs/results.md): the best unit cut to the budget.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/cut_units.py

The shipped context (`sproutrag.search.context`: leaves, cutoff 1) passes over a piece
that does not fit what is left of the budget. Two variants read the same candidates:
(a) *cut when empty*: when no candidate fits, the best one's span is cut to the budget at
its last whitespace; (b) *cut and stop*: the first candidate that does not fit what is
left is cut to it the same way, and the context ends. Each is scored by char P x R over
500, 1,000 and 2,000 characters within the queries' documents (as `bench/budget.py`
scores rules 1 and 2), on the four training splits (the candidate: the better mean, ties
to (a)), then on the four dev splits, paired per query against the shipped context; the
rule's verdict is printed. Needs ../shared/data; the feature cache is `.eval-cache/`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labelled_sets import parse_args  # noqa: E402 - also puts ROOT on sys.path

BUDGETS = (500, 1000, 2000)
VARIANTS = ("shipped", "a: cut when empty", "b: cut and stop")
_SPACE = re.compile(r"\s")


def cut_span(piece, units, left: int) -> tuple[str, int, int] | None:
    """PIECE's span (its leaves' first start to last end) cut to LEFT characters at its
    last whitespace (a hard cut when it has none); None when nothing is left."""
    u = units[piece.doc_id]
    s, e = int(u.spans[piece.leaves[0], 0]), int(u.spans[piece.leaves[-1], 1])
    end = min(e, s + left)
    if end < e:
        spaces = [m.start() for m in _SPACE.finditer(u.text, s, end + 1)]
        if spaces and spaces[-1] > s:
            end = spaces[-1]
    return (piece.doc_id, s, end) if end > s else None


def contexts(pieces, units, budget: int) -> dict[str, list[tuple[str, int, int]]]:
    """The doc spans of the shipped context and of each variant at BUDGET."""
    from sproutrag.search.context import _Document, build_context

    shipped = build_context(pieces, units, budget_chars=budget).doc_spans()
    first = next(iter(pieces), None)
    a = shipped if shipped or first is None else [x for x in [cut_span(first, units, budget)]
                                                  if x]
    state = {d: _Document(u, None) for d, u in units.items()}
    left, extra = budget, []
    for p in pieces:
        doc = state[p.doc_id]
        new = p.leaves[~doc.taken[p.leaves]]
        if not len(new) or len(new) < len(p.leaves):
            continue
        chars, _ = doc.added(new)
        if chars > left:
            extra = [x for x in [cut_span(p, units, left)] if x]
            break
        doc.taken[new] = True
        left -= chars
        if left <= 0:
            break
    b = [(d, int(doc.units.spans[i, 0]), int(doc.units.spans[j, 1]))
         for d, doc in state.items() for i, j in doc.runs()] + extra
    return dict(zip(VARIANTS, (shipped, a, b), strict=True))


def split_scores(sp, tree_variant) -> dict[str, np.ndarray]:
    """Per variant, each query's char P x R averaged over the budgets; and how often the
    shipped context was empty."""
    from sproutrag.learn.budgets import char_pr
    from sproutrag.learn.datasets import gold_spans
    from sproutrag.learn.variants import variant_trees
    from sproutrag.search.context import Units, selection_pieces
    from sproutrag.search.hierarchy import hierarchical_scores
    from sproutrag.search.node_scores import node_scores

    params = tree_variant.search
    trees = variant_trees(sp.feats, tree_variant)
    out = {v: np.zeros(len(sp.queries)) for v in VARIANTS}
    empty = np.zeros(len(BUDGETS))
    for n, (q, qvec) in enumerate(zip(sp.queries, sp.qvecs, strict=True)):
        docs = list(q["doc_ids"])
        sub = {d: trees[d] for d in docs}
        units = {d: Units(sp.feats[d].spans, sp.texts[d]) for d in docs}
        lexical = {d: sp.feats[d].terms for d in docs} if params.lexical_weight > 0 else None
        scores = node_scores(sub, qvec, query=q["query"], lexical=lexical,
                             lexical_weight=params.lexical_weight)
        scores = hierarchical_scores(sub, scores, params, qvec, query=q["query"],
                                     lexical=lexical)
        pieces, _ = selection_pieces("leaves", {d: s.rank for d, s in scores.items()}, units)
        for i, budget in enumerate(BUDGETS):
            found = contexts(pieces, units, budget)
            empty[i] += not found["shipped"]
            for v, spans in found.items():
                p, r = char_pr(spans, gold_spans(q))
                out[v][n] += p * r / len(BUDGETS)
    out["empty"] = empty / max(len(sp.queries), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    from labelled_sets import load_split
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights
    from sproutrag.learn.metrics import paired_difference
    from sproutrag.learn.variants import make_variants

    args = parse_args(__doc__, argv)
    settings = load_settings(args.config)
    weights = load_default_weights(settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    tree_variant = make_variants(["tree"], weights, settings.tree.parent_embedding)[0]
    chunking = settings.chunking.model_dump()
    results = {}
    for split in args.splits:
        for name in args.sets:
            sp = load_split(name, split, encoder, chunking, args)
            results[name, split] = split_scores(sp, tree_variant)
            r = results[name, split]
            print(f"{name}-{split} ({len(sp.queries)} queries): shipped context empty at "
                  + " / ".join(f"{100 * e:.1f}%" for e in r["empty"]) + " of "
                  + " / ".join(map(str, BUDGETS)) + " characters", flush=True)
            for v in VARIANTS:
                line = f"  {v:20s} mean P x R {100 * r[v].mean():6.2f}"
                if v != "shipped":
                    d, se = paired_difference(r[v], r["shipped"])
                    line += f"  - shipped {100 * d:+.2f} +/- {100 * se:.2f}"
                print(line, flush=True)
        if split == "train":
            means = {v: np.mean([results[n, "train"][v].mean() for n in args.sets])
                     for v in VARIANTS[1:]}
            candidate = max(VARIANTS[1:], key=lambda v: (means[v], v == VARIANTS[1]))
            print("train means: " + ", ".join(f"{v} {100 * m:.2f}" for v, m in means.items())
                  + f"; candidate: {candidate}\n", flush=True)
    if "dev" not in args.splits:
        return 0
    diffs = [paired_difference(results[n, "dev"][candidate], results[n, "dev"]["shipped"])
             for n in args.sets]
    wins = sum(d > 2 * se for d, se in diffs)
    losses = sum(d < -se for d, se in diffs)
    print(f"rule 3 on dev: {candidate} > 2 SE on {wins} set(s), < -1 SE on {losses}: "
          + ("it ships" if wins >= 2 and losses == 0 else "not adopted"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
