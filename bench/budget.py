"""A context under a character budget: fit each selection on train, decide on dev.

    PYTHONPATH=. .venv/bin/python bench/budget.py [--sets ...] [--budgets 500 1000 2000]
        [--rule2 | --rule4]

For every set's training split, each selection of `sproutrag.search.context` (leaves,
window, tree) is scored over the grid of its parameters (length penalty, window) by mean
character P x R over the budgets (`sproutrag.learn.budgets`); the fitted parameters (the
best mean over the sets, sets weighted equally; ties to the smaller penalty and window)
are then scored on every dev split beside flat (cosine) and LanceDB's BM25 and hybrid
search filled to the same budgets. Prints each dev table, the paired differences the
decision rule of docs/results.md ("A context under a budget") reads, and the rule's
verdict; `--out` keeps the rows as JSON. Needs ../shared/data (the dev sets).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "research"))
from labelled_sets import SETS, load_split  # noqa: E402 - also puts ROOT on sys.path

from sproutrag.learn.anchors import quiet_lance_deprecations  # noqa: E402

quiet_lance_deprecations()  # before LanceDB loads: its deprecation lines, once a search

PENALTIES = (0.0, 0.25, 0.5, 1.0, 2.0)
WINDOWS = (1, 2)
#: Rule 2: relative cutoffs (z units below the best leaf), largest first (ties go to the
#: larger), with the smaller penalties.
MARGINS = (6.0, 4.0, 3.0, 2.0, 1.0)
RULE2_PENALTIES = (0.0, 0.25, 0.5)


def grid():
    """Every (selection, length penalty, window) tried on train."""
    for p in PENALTIES:
        yield "leaves", p, 1
    for p, w in itertools.product(PENALTIES, WINDOWS):
        yield "window", p, w
    for p in PENALTIES:
        yield "tree", p, 1


def rule2(args, encoder, chunking, tree_variant, params) -> int:
    """Rule 2 (docs/results.md): leaves and tree with a relative cutoff, fitted on train;
    on dev against rule 1's leaves (penalty 0, no cutoff)."""
    from sproutrag.learn.anchors import AnchorTable
    from sproutrag.learn.budgets import Selection, anchor_budget_rows, budget_rows, budget_table
    from sproutrag.learn.metrics import paired_difference
    from sproutrag.learn.variants import variant_trees

    cells = [Selection(f"{k} m{m:g} p{p:g}", k, p, 1, m) for k in ("leaves", "tree")
             for m in MARGINS for p in RULE2_PENALTIES]
    mean = fit_on_train(args, encoder, chunking, tree_variant, params, cells)
    fitted = {k: max((c for c in cells if c.selection == k), key=lambda c: mean[c.name])
              for k in ("leaves", "tree")}
    for k, c in fitted.items():
        print(f"fitted {k}: margin {c.margin:g}, penalty {c.length_penalty:g} "
              f"(train {100 * mean[c.name]:.2f})")
    base = Selection("leaves (rule 1: penalty 0, no cutoff)", "leaves", margin=None)
    dev = [base, Selection(f"leaves, cutoff {fitted['leaves'].margin:g}", "leaves",
                           fitted["leaves"].length_penalty, 1, fitted["leaves"].margin),
           Selection(f"tree, cutoff {fitted['tree'].margin:g}", "tree",
                     fitted["tree"].length_penalty, 1, fitted["tree"].margin)]
    verdict = []
    for name in args.sets:
        sp = load_split(name, "dev", encoder, chunking, args)
        rows = budget_rows(sp.feats, sp.texts, sp.queries, sp.qvecs,
                           variant_trees(sp.feats, tree_variant), params, args.budgets, dev)
        # The baselines filled, and cut to their first one or two chunks (a short
        # context, as the cutoff makes ours: the fair comparison for it).
        docs = [{"doc_id": d, "text": t} for d, t in sp.texts.items()]
        with AnchorTable(docs, encoder) as table:
            for depth in (200, 1, 2):
                for r in anchor_budget_rows(["lancedb_bm25", "lancedb_hybrid"], table,
                                            sp.queries, sp.qvecs, sp.texts, args.budgets,
                                            depth=depth):
                    if depth != 200:
                        r["name"] += f", first {depth} chunk(s) only"
                    rows.append(r)
        print(f"## {name} dev ({len(sp.queries)} queries)\n")
        print(budget_table(rows))
        d, se = paired_difference(rows[1]["per_query"]["pr"], rows[0]["per_query"]["pr"])
        t, tse = paired_difference(rows[2]["per_query"]["pr"], rows[1]["per_query"]["pr"])
        print(f"leaves with cutoff - leaves: {100 * d:+.2f} +/- {100 * se:.2f} "
              f"({d / se if se else 0:+.1f} SE); tree with cutoff - leaves with cutoff: "
              f"{100 * t:+.2f} +/- {100 * tse:.2f}\n", flush=True)
        anchor = max((r for r in rows if r["mode"].startswith("lancedb")),
                     key=lambda r: r["mean_pr"])
        print(f"leaves with cutoff / the best baseline row ({anchor['name']}): "
              f"{rows[1]['mean_pr'] / max(anchor['mean_pr'], 1e-12):.3f}\n", flush=True)
        verdict.append((d, se))
    print_verdict("rule 2", verdict, "the cutoff ships", "no cutoff")
    return 0


def fit_on_train(args, encoder, chunking, tree_variant, params, cells) -> dict[str, float]:
    """Each cell's mean P x R over the training splits (each set counts the same),
    printed per set."""
    from sproutrag.learn.budgets import budget_rows
    from sproutrag.learn.variants import variant_trees

    train = {}
    for name in args.sets:
        sp = load_split(name, "train", encoder, chunking, args)
        rows = budget_rows(sp.feats, sp.texts, sp.queries, sp.qvecs,
                           variant_trees(sp.feats, tree_variant), params, args.budgets, cells)
        train[name] = {r["name"]: r["mean_pr"] for r in rows}
        print(f"train {name}: {len(sp.queries)} queries", flush=True)
    mean = {c.name: float(np.mean([train[n][c.name] for n in args.sets])) for c in cells}
    for c in cells:
        print(f"  {c.name:20s} " + " ".join(f"{100 * train[n][c.name]:6.2f}"
                                            for n in args.sets) + f"  {100 * mean[c.name]:6.2f}")
    return mean


def print_verdict(rule: str, verdict: list[tuple[float, float]], yes: str, no: str) -> None:
    """A decision rule's verdict from (difference, SE) per dev set: YES when > 2 SE on
    at least two sets and < -1 SE on none, else NO."""
    wins = sum(d > 2 * se for d, se in verdict)
    losses = sum(d < -se for d, se in verdict)
    print(f"{rule}: > 2 SE on {wins} set(s), < -1 SE on {losses}: "
          + (yes if wins >= 2 and losses == 0 else no))


def rule4(args, encoder, chunking, tree_variant, params) -> int:
    """Rule 4 (docs/results.md): windows cut to their centre leaf, with a relative cutoff,
    fitted on train; on dev against the shipped context (leaves, cutoff 1, penalty 0),
    with the tree at the shipped cutoff and penalty reported beside them."""
    from sproutrag.learn.budgets import Selection, budget_rows, budget_table
    from sproutrag.learn.metrics import paired_difference
    from sproutrag.learn.variants import variant_trees

    cells = [Selection(f"window w{w} m{m:g} p{p:g}", "window", p, w, m) for m in MARGINS
             for p in RULE2_PENALTIES for w in WINDOWS]  # the order ties go by
    mean = fit_on_train(args, encoder, chunking, tree_variant, params, cells)
    fitted = max(cells, key=lambda c: mean[c.name])  # the first of ties, as in rule 2
    print(f"fitted window: w {fitted.window}, margin {fitted.margin:g}, penalty "
          f"{fitted.length_penalty:g} (train {100 * mean[fitted.name]:.2f})", flush=True)
    dev = [Selection("shipped (leaves, cutoff 1, penalty 0)", "leaves", 0.0, 1, 1.0),
           Selection(f"window w{fitted.window}, cutoff {fitted.margin:g}, penalty "
                     f"{fitted.length_penalty:g}", "window", fitted.length_penalty,
                     fitted.window, fitted.margin),
           Selection("tree, cutoff 1, penalty 0", "tree", 0.0, 1, 1.0)]
    verdict = []
    for name in args.sets:
        sp = load_split(name, "dev", encoder, chunking, args)
        rows = budget_rows(sp.feats, sp.texts, sp.queries, sp.qvecs,
                           variant_trees(sp.feats, tree_variant), params, args.budgets, dev)
        print(f"## {name} dev ({len(sp.queries)} queries)\n")
        print(budget_table(rows))
        d, se = paired_difference(rows[1]["per_query"]["pr"], rows[0]["per_query"]["pr"])
        t, tse = paired_difference(rows[2]["per_query"]["pr"], rows[0]["per_query"]["pr"])
        print(f"window - shipped: {100 * d:+.2f} +/- {100 * se:.2f} ({d / se if se else 0:+.1f}"
              f" SE); tree - shipped: {100 * t:+.2f} +/- {100 * tse:.2f}\n", flush=True)
        verdict.append((d, se))
    print_verdict("rule 4", verdict, "the window ships", "the shipped context stays")
    return 0


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights
    from sproutrag.learn.anchors import AnchorTable
    from sproutrag.learn.budgets import (
        Selection,
        anchor_budget_rows,
        budget_rows,
        budget_table,
    )
    from sproutrag.learn.metrics import paired_difference
    from sproutrag.learn.variants import make_variants, variant_trees

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--budgets", nargs="+", type=int, default=[500, 1000, 2000])
    p.add_argument("--data", default=str(ROOT / "out" / "data"))
    p.add_argument("--cache", default=str(ROOT / ".eval-cache"))
    p.add_argument("--config")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--out", default=str(ROOT / "out" / "budget"))
    p.add_argument("--rule2", action="store_true",
                   help="rule 2: a relative cutoff for leaves (and the tree), fit and decide")
    p.add_argument("--rule4", action="store_true",
                   help="rule 4: windows cut to their centre leaf, with a cutoff, against the "
                        "shipped context")
    args = p.parse_args(argv)

    settings = load_settings(args.config)
    weights = load_default_weights(settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    chunking = settings.chunking.model_dump()
    tree_variant = make_variants(["tree"], weights, settings.tree.parent_embedding)[0]
    params = tree_variant.search
    if args.rule2:
        return rule2(args, encoder, chunking, tree_variant, params)
    if args.rule4:
        return rule4(args, encoder, chunking, tree_variant, params)
    cells = list(grid())
    # Rule 1 was run before the cutoff existed: its budgets are filled (margin None).
    sels = [Selection(f"{s} p{pen:g} w{w}", s, pen, w, None) for s, pen, w in cells]

    # Train: every cell on every set.
    train: dict[str, dict[str, float]] = {}
    for name in args.sets:
        sp = load_split(name, "train", encoder, chunking, args)
        trees = variant_trees(sp.feats, tree_variant)
        rows = budget_rows(sp.feats, sp.texts, sp.queries, sp.qvecs, trees, params,
                           args.budgets, sels)
        train[name] = {r["name"]: r["mean_pr"] for r in rows}
        print(f"train {name}: {len(sp.queries)} queries", flush=True)
    mean = {s.name: float(np.mean([train[n][s.name] for n in args.sets])) for s in sels}
    print("\ntrain mean P x R (sets weighted equally):")
    for s in sels:
        print(f"  {s.name:22s} " + " ".join(f"{100 * train[n][s.name]:6.2f}"
                                            for n in args.sets) + f"  {100 * mean[s.name]:6.2f}")
    fitted = {}
    for kind in ("leaves", "window", "tree"):
        # max over the cells in grid order: ties go to the first (smaller penalty, window)
        best = max((s for s in sels if s.selection == kind), key=lambda s: mean[s.name])
        fitted[kind] = best
        print(f"fitted {kind}: length_penalty {best.length_penalty:g}, window {best.window}"
              f" (train {100 * mean[best.name]:.2f})")
    leaves_kind = max(("leaves", "window"), key=lambda k: mean[fitted[k].name])
    print(f"the leaves variant (better on train): {leaves_kind}\n")

    # Dev: the fitted selections, flat and the LanceDB baselines.
    dev_sels = [Selection("flat (cosine)", "flat")] + [
        Selection(f"{k} (penalty {fitted[k].length_penalty:g}"
                  + (f", w {fitted[k].window})" if k == "window" else ")"), k,
                  fitted[k].length_penalty, fitted[k].window, None)
        for k in ("leaves", "window", "tree")]
    verdict, out = [], {"fitted": {k: vars(v) for k, v in fitted.items()},
                        "train": train, "dev": {}}
    for name in args.sets:
        sp = load_split(name, "dev", encoder, chunking, args)
        trees = variant_trees(sp.feats, tree_variant)
        rows = budget_rows(sp.feats, sp.texts, sp.queries, sp.qvecs, trees, params,
                           args.budgets, dev_sels)
        docs = [{"doc_id": d, "text": t} for d, t in sp.texts.items()]
        with AnchorTable(docs, encoder) as table:
            rows += anchor_budget_rows(["lancedb_bm25", "lancedb_hybrid"], table, sp.queries,
                                       sp.qvecs, sp.texts, args.budgets)
        print(f"## {name} dev ({len(sp.queries)} queries)\n")
        print(budget_table(rows))
        by_mode = {r["mode"]: r for r in rows}
        d, se = paired_difference(by_mode["tree"]["per_query"]["pr"],
                                  by_mode[leaves_kind]["per_query"]["pr"])
        anchor = max((r for r in rows if r["mode"].startswith("lancedb")),
                     key=lambda r: r["mean_pr"])
        ratio = {m: by_mode[m]["mean_pr"] / max(anchor["mean_pr"], 1e-12)
                 for m in ("flat", "leaves", "window", "tree")}
        print(f"tree - {leaves_kind}: {100 * d:+.2f} +/- {100 * se:.2f} "
              f"({d / se if se else 0:+.1f} SE); / best LanceDB: "
              + ", ".join(f"{m} {v:.3f}" for m, v in ratio.items()) + "\n", flush=True)
        verdict.append((name, d, se))
        out["dev"][name] = rows
    wins = sum(d > 2 * se for _, d, se in verdict)
    losses = sum(d < -se for _, d, se in verdict)
    ships = "tree" if wins >= 2 and losses == 0 else leaves_kind
    print(f"rule: tree > 2 SE on {wins} set(s), < -1 SE on {losses}: {ships} ships")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "budget.json").write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
