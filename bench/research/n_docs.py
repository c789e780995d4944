"""How many documents a corpus-wide query searches (issue 29, rules 7 and 8 of
docs/results.md).

    PYTHONPATH=. .venv/bin/python bench/research/n_docs.py --fit   # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/n_docs.py --margin --fit

`search.n_docs` documents (more while they hold fewer than k units) are searched by a
query without doc_ids. For each n in the grid the first stage chooses the documents as
the Retriever does with that setting; the shipped tree search then runs over them, on the
pools of `hierarchy.py` (their databases under out/). Within-document search does not use
n_docs, so only corpus-wide figures are compared.

With --margin (rule 8) n_docs stays 8 and the documents searched are those whose best
leaf scores within delta of the best document's (at least 2, more while they hold fewer
than k units), their nodes scored again over them alone.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

GRID = (2, 3, 4, 6, 8, 12)
TODAY = 8
MARGINS = (0.5, 1.0, 1.5, 2.0, 3.0)
MIN_KEPT = 2


def keep_by_margin(p: H.Pool, delta: float) -> str:
    """Rule 8's documents for every query and k of P, as the scope "margin DELTA" (its
    node scores over the kept documents alone); returns the scope's name."""
    from sproutrag.search.tree_search import node_scores

    scope = f"margin {delta:g}"
    p.docs[scope] = []
    for n, (q, v) in enumerate(zip(p.queries, p.qvecs, strict=True)):
        by_k = {}
        for k in H.KS:
            docs, sc = p.docs["wide"][n][k], p._scores["wide", n, k]
            best = {d: float(sc[d].rank[: p.trees[d].n].max()) for d in docs if p.trees[d].n}
            top = max(best.values(), default=0.0)
            kept, units = [], 0
            for d in (d for d in docs if d in best):
                if len(kept) < MIN_KEPT or best[d] >= top - delta or units < k:
                    kept.append(d)
                    units += p.trees[d].n
            by_k[k] = kept
            p._scores[scope, n, k] = node_scores(
                {d: p.trees[d] for d in kept}, v, query=q["query"],
                lexical={d: p.terms[d] for d in kept},
                lexical_weight=p.base.lexical_weight)
        p.docs[scope].append(by_k)
    return scope


#: Rule 7 (False) or rule 8 (True): set by --margin.
MARGIN = False


def pool(name: str, split: str, n_docs: int, settings, encoder) -> H.Pool:
    """The pool NAME's SPLIT with its documents chosen at N_DOCS."""
    r, queries, qvecs = H.open_pool(name, split, settings, encoder)
    r.first.n_docs = n_docs
    return H.Pool(name, r, queries, qvecs)


def tree_row(p: H.Pool, label: str, scope: str = "wide") -> dict:
    """Today's tree search over the first stage's documents (SCOPE "wide") or the
    query's own ("within")."""
    return p.row(label, H.tree_runs(p, scope, lambda n, k, docs: p._scores[scope, n, k]))


def fit(names: list[str], settings, encoder) -> int:
    """Rule 7's fit: the n_docs nearest today's within one SE of the best mean IE."""
    trials = []
    for n in GRID:
        ies = [H.per_query(tree_row(pool(name, "train", n, settings, encoder), ""))
               for name in names]
        trials.append((n, ies))
        print(f"  train n_docs {n:2d}: " + " ".join(f"{100 * x.mean():5.1f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, lambda n: (abs(math.log2(n / TODAY)), -n), "fit")


def fit_margin(names: list[str], settings, encoder) -> float:
    """Rule 8's fit: the largest delta within one SE of the best mean IE (today's, no
    margin, as infinity)."""
    pools = [pool(name, "train", TODAY, settings, encoder) for name in names]
    trials = [(math.inf, [H.per_query(tree_row(p, "")) for p in pools])]
    for delta in MARGINS:
        trials.append((delta, [H.per_query(tree_row(p, "", keep_by_margin(p, delta)))
                               for p in pools]))
    for delta, ies in trials:
        print(f"  train margin {delta:g}: " + " ".join(f"{100 * x.mean():5.1f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, lambda d: -d, "fit")


def compare(names: list[str], n_docs: float, settings, encoder) -> None:
    """Dev: N_DOCS (with --margin: the margin) against today's, paired, corpus-wide; the
    ratio to within."""
    for name in names:
        today = pool(name, "dev", TODAY, settings, encoder)
        within = tree_row(today, "within", "within")
        ref = tree_row(today, "today")
        if MARGIN:
            row = tree_row(today, "margin", keep_by_margin(today, n_docs))
        else:
            row = tree_row(pool(name, "dev", n_docs, settings, encoder), "n_docs")
        print(f"{name} dev corpus-wide: today IE {100 * ref['avg']['ie']:.2f} "
              f"({ref['avg']['ie'] / within['avg']['ie']:.3f}x within), "
              f"{'margin' if MARGIN else 'n_docs'} {n_docs:g} {H.against(row, ref, within)}",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--n-docs", type=float,
                    help="compare this n_docs (with --margin: delta) on dev without fitting")
    ap.add_argument("--margin", action="store_true",
                    help="rule 8: keep the documents within a margin of the best")
    args = ap.parse_args(argv)
    global MARGIN
    MARGIN = args.margin
    settings, encoder = H.default_encoder()
    if args.fit:
        n_docs = (fit_margin if MARGIN else fit)(args.pools, settings, encoder)
    elif args.n_docs:
        n_docs = args.n_docs if MARGIN else int(args.n_docs)
    else:
        ap.error("give --fit or --n-docs N")
    compare(args.pools, n_docs, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
