"""Where does corpus-wide search lose when the first stage already found the documents?

    PYTHONPATH=. .venv/bin/python bench/research/local_stats.py [--pools ...] [--split dev]

On the pooled HotpotQA sets corpus-wide search chose every gold document and took 98-99%
of its units from them (`hierarchy.py`), yet it lost 8% of unit IE against search within
the query's documents. What changes between the two is the scoring's statistics: BM25's
collection (document frequencies, average length) and the z-standardisation of cosine
and BM25 run over the leaves of every searched document, so the other documents change
how a gold document's own leaves are ranked. Each variant scores the nodes of the same
documents (the first stage's, as the Retriever chooses them) and runs the shipped tree
search on them (tree mode; leaves mode ranks the same scores alike):

- global: today's (statistics over all the searched documents' leaves);
- bm25-local: each document its own BM25 collection, z over all leaves;
- z-local: BM25 over all, each document standardised on its own leaves;
- local: both per document (a document's ranking of its own leaves is then exactly what
  search within it gives);
and the per-document ones with a document prior w_d x D(d) (`document_scores`) added, so
documents still compete by how well they match as a whole.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

from sproutrag.search.hierarchy import document_scores  # noqa: E402
from sproutrag.search.lexical import bm25_nodes  # noqa: E402
from sproutrag.search.node_scores import NodeScores, cosine_scores, fuse  # noqa: E402

VARIANTS = ("global", "bm25-local", "z-local", "local")
PRIORS = (0.0, 0.25, 0.5, 1.0, 2.0)


def scores_of(p: H.Pool, n: int, docs: list[str], variant: str, w_d: float,
              floor: int = 0) -> dict:
    """VARIANT's node scores of query N over DOCS; "floor": documents of at least FLOOR
    leaves are their own BM25 collection, the others share the searched documents'."""
    q, v, w = p.queries[n], p.qvecs[n], p.base.lexical_weight
    trees = [p.trees[d] for d in docs]
    terms = [p.terms[d] for d in docs]
    cos = [cosine_scores(t.vectors, v) for t in trees]
    if variant in ("global", "z-local"):
        lex = bm25_nodes(q["query"], terms, trees)
    elif variant == "floor":
        lex = bm25_nodes(q["query"], terms, trees)
        for i, (x, t) in enumerate(zip(terms, trees)):
            if t.n >= floor:
                lex[i] = bm25_nodes(q["query"], [x], [t])[0]
    else:
        lex = [bm25_nodes(q["query"], [x], [t])[0] for x, t in zip(terms, trees)]
    if variant in ("global", "bm25-local"):
        fused = fuse(cos, lex, [t.n for t in trees], w)
    else:
        fused = [fuse([c], [x], [t.n], w)[0] for c, x, t in zip(cos, lex, trees)]
    if w_d:
        prior = document_scores({d: t.vectors[: t.n] for d, t in zip(docs, trees)}, v,
                                query=q["query"], lexical=dict(zip(docs, terms)),
                                lexical_weight=w)
        fused = [f + w_d * prior[d] for f, d in zip(fused, docs)]
    return {d: NodeScores(c, f) for d, c, f in zip(docs, cos, fused)}


def runs(p: H.Pool, scope: str, variant: str, w_d: float, floor: int = 0) -> dict:
    """Tree mode (the shipped search) over each query's documents with VARIANT's scores."""
    return H.tree_runs(p, scope, lambda n, k, docs: scores_of(p, n, docs, variant, w_d,
                                                                floor))


FLOORS = (64, 32, 16, 8)
FLOOR_PRIORS = (0.0, 0.5, 1.0, 2.0)


def fit_floor(pools: list[H.Pool]) -> tuple[int, float]:
    """Rule 4's fit: (M, w_d) of the "floor" variant with the best mean corpus-wide IE
    over POOLS, then the simplest within one SE of it (largest M, then least w_d)."""
    trials = []
    for m in FLOORS:
        for w_d in FLOOR_PRIORS:
            ies = [H.per_query(p.row("", runs(p, "wide", "floor", w_d, m))) for p in pools]
            trials.append(((m, w_d), ies))
            print(f"  floor M {m} w_d {w_d:g}: "
                  + " ".join(f"{100 * x.mean():5.1f}" for x in ies), flush=True)

    return H.one_se_choice(trials, lambda pt: (-pt[0], pt[1]), "floor")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--rule4", action="store_true",
                    help="fit the floor variant on train, then compare it on dev")
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.rule4:
        return rule4(args.pools, settings, encoder)
    for name in args.pools:
        p = H.Pool(name, *H.open_pool(name, args.split, settings, encoder))
        print(f"\n{name} {args.split} ({len(p.queries)} queries)", flush=True)
        within = p.row("within", runs(p, "within", "global", 0.0))
        ref = p.row("global", runs(p, "wide", "global", 0.0))
        print(f"  tree within: IE {100 * within['avg']['ie']:.1f} cIE "
              f"{100 * within['avg']['char_ie']:.1f}", flush=True)
        for variant in VARIANTS:
            for w_d in PRIORS if variant != "global" else (0.0,):
                row = p.row(variant, runs(p, "wide", variant, w_d))
                m, se = H.paired(row, ref, "ie")
                c, cse = H.paired(row, ref, "char_ie")
                print(f"  {variant:10s} w_d {w_d:4g}: IE {100 * row['avg']['ie']:5.1f} "
                      f"({row['avg']['ie'] / within['avg']['ie']:.3f}x within; vs global "
                      f"{100 * m:+5.2f} +/- {100 * se:4.2f}) cIE "
                      f"{100 * row['avg']['char_ie']:5.1f} ({100 * c:+5.2f} +/- "
                      f"{100 * cse:4.2f})", flush=True)
    return 0


def rule4(names: list[str], settings, encoder) -> int:
    """Fit (M, w_d) on the train pools, then dev: paired against today's, within too."""
    train = [H.Pool(n, *H.open_pool(n, "train", settings, encoder)) for n in names]
    m, w_d = fit_floor(train)
    for name in names:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        for scope in ("wide", "within"):
            ref = p.row("today", runs(p, scope, "global", 0.0))
            row = p.row("floor", runs(p, scope, "floor", w_d, m))
            a, b = H.paired(row, ref, "ie"), H.paired(row, ref, "char_ie")
            print(f"{name} dev {scope}: today IE {100 * ref['avg']['ie']:.1f}, floor M {m} "
                  f"w_d {w_d:g} IE {100 * row['avg']['ie']:.1f}: {100 * a[0]:+.2f} +/- "
                  f"{100 * a[1]:.2f} ({a[0] / a[1] if a[1] else 0:+.1f} SE); cIE "
                  f"{100 * b[0]:+.2f} +/- {100 * b[1]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
