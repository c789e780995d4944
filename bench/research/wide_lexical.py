"""A lexical weight for corpus-wide search (issue 29, rule 20 of docs/whole-corpus.md).

    PYTHONPATH=. .venv/bin/python bench/research/wide_lexical.py --fit   # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/wide_lexical.py --point 0.5   # dev only

Variant: the second stage's lexical weight w_wide (rank scores z(cosine) + w z(BM25))
when the first stage chose the documents (no doc_ids); a search within given documents
keeps today's w. Everything else is today's search through each pool's database
`Retriever` (first stage, anchored statistics, fetch, links). The fit's objective is the
mean corpus-wide tree unit IE over the three train pools; the point nearest today's
(|w_wide - w|, then the larger) within one SE of the best is compared with today's on dev,
paired.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

GRID = (0.25, 0.5, 0.75, 1.25, 1.5, 2.0)


class Pool:
    """A pool split's database, its queries and their gold documents' units; a Retriever
    per lexical weight."""

    def __init__(self, name: str, split: str, settings: Any, encoder: Any):
        self.name, self.settings, self.encoder = f"{name}-{split}", settings, encoder
        self.r, self.queries, _ = H.open_pool(name, split, settings, encoder)
        self.db = str(H.OUT / f"db-hierarchy-{name}-{split}")
        self.today = self.r.lexical_weight
        gold = sorted({d for q in self.queries for d in q["doc_ids"]})
        loaded = self.r.documents.load_trees(gold)
        self.spans = {d: st.spans for d, (_, st) in loaded.items()}

    def row(self, scope: str, weight: float | None = None) -> dict[str, Any]:
        """Tree mode within the queries' documents or corpus-wide, at lexical weight
        WEIGHT (None: today's)."""
        from sproutrag.learn.evaluation import result_row, retriever_runs
        from sproutrag.search.retriever import Retriever

        r = self.r if weight is None else Retriever(
            self.db, encoder=self.encoder, n_docs=self.settings.search.n_docs,
            first_stage=self.settings.search.first_stage, lexical_weight=weight)
        runs = retriever_runs(r, self.queries, H.KS, "tree", corpus_wide=scope == "wide")
        return result_row(f"{self.name} {scope} {weight}", runs, {}, self.queries,
                          units=self.spans)


def fit(pools: list[Pool]) -> float:
    today = pools[0].today
    trials = []
    for w in (today, *GRID):
        ies = [H.per_query(p.row("wide", w)) for p in pools]
        print(f"train w_wide {w}: corpus-wide tree IE " + " / ".join(
            f"{100 * x.mean():.2f}" for x in ies), flush=True)
        trials.append((w, ies))
    return H.one_se_choice(trials, lambda w: (abs(w - today), -w), "rule 20")


def compare(pools: list[Pool], weight: float) -> None:
    for p in pools:
        within, ref = p.row("within"), p.row("wide")
        print(f"{p.name} wide: today (w {p.today}) IE {100 * ref['avg']['ie']:.2f}, w_wide "
              f"{weight} {H.against(p.row('wide', weight), ref, within)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--point", type=float, help="compare this w_wide with today's on dev")
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.fit:
        weight = fit([Pool(n, "train", settings, encoder) for n in args.pools])
    elif args.point is not None:
        weight = args.point
    else:
        ap.error("give --fit or --point W")
    compare([Pool(n, "dev", settings, encoder) for n in args.pools], weight)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
