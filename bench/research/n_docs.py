"""How many documents a corpus-wide query searches (issue 29, rule 7 of docs/results.md).

    PYTHONPATH=. .venv/bin/python bench/research/n_docs.py --fit   # train, then dev

`search.n_docs` documents (more while they hold fewer than k units) are searched by a
query without doc_ids. For each n in the grid the first stage chooses the documents as
the Retriever does with that setting; the shipped tree search then runs over them, on the
pools of `hierarchy.py` (their databases under out/). Within-document search does not use
n_docs, so only corpus-wide figures are compared.
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


def compare(names: list[str], n_docs: int, settings, encoder) -> None:
    """Dev: N_DOCS against today's, paired, corpus-wide; the ratio to within."""
    for name in names:
        today = pool(name, "dev", TODAY, settings, encoder)
        within = tree_row(today, "within", "within")
        ref = tree_row(today, "today")
        row = tree_row(pool(name, "dev", n_docs, settings, encoder), "n_docs")
        a, b = H.paired(row, ref, "ie"), H.paired(row, ref, "char_ie")
        print(f"{name} dev corpus-wide: today IE {100 * ref['avg']['ie']:.2f} "
              f"({ref['avg']['ie'] / within['avg']['ie']:.3f}x within), n_docs {n_docs} "
              f"IE {100 * row['avg']['ie']:.2f} "
              f"({row['avg']['ie'] / within['avg']['ie']:.3f}x within): "
              f"{100 * a[0]:+.2f} +/- {100 * a[1]:.2f} ({a[0] / a[1] if a[1] else 0:+.1f} SE);"
              f" char-IE {100 * row['avg']['char_ie']:.2f} "
              f"({row['avg']['char_ie'] / within['avg']['char_ie']:.3f}x within), "
              f"{100 * b[0]:+.2f} +/- {100 * b[1]:.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=["paragraphs", "hotpot-pooled",
                                                   "long-pooled"])
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--n-docs", type=int, help="compare this n_docs on dev without fitting")
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.fit:
        n_docs = fit(args.pools, settings, encoder)
    elif args.n_docs:
        n_docs = args.n_docs
    else:
        ap.error("give --fit or --n-docs N")
    compare(args.pools, n_docs, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
