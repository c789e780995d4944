"""The shipped corpus-wide search against LanceDB's own search over the whole corpus
(issue 29, rules 11-15).

    PYTHONPATH=. .venv/bin/python bench/research/lancedb_wide.py
    PYTHONPATH=. .venv/bin/python bench/research/lancedb_wide.py --budgets 500 1000 2000

On each dev pool of `hierarchy.py`, corpus-wide (no doc_ids): the shipped tree mode
(anchored statistics, `anchored_stats.py`, M 32; names followed, `title_links.py`, and
fetched, `name_fetch.py`: fetch 1, link weight 3, leader bonus 2, corpus-unique names,
links from the best unit: rule 18; mentions, rule 23; the entities' first-stage
ranking, rule 25; documents the entities name, fetched from the whole pool, rule 27: the
Retriever's default),
tree mode with the anchored statistics alone, tree and leaves before both, and
LanceDB's BM25 and hybrid search (`sproutrag.learn.anchors`, the evaluation's yardstick)
over the pool's plain two-sentence chunks with no document filter; paired per query.

With --budgets: contexts under each character budget instead (char P x R, averaged over the
budgets): the shipped context read from the pool's database (`Retriever.context`, as
`sproutrag query --budget-chars` answers) within each question's documents and over the
whole corpus, against LanceDB's BM25 and hybrid chunks over the whole corpus, filled to
the same budget (`sproutrag.learn.budgets`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import anchored_stats as A  # noqa: E402
import hierarchy as H  # noqa: E402
import name_fetch as F  # noqa: E402
import title_links as T  # noqa: E402

from sproutrag.learn.anchors import ANCHORS, AnchorTable  # noqa: E402
from sproutrag.learn.datasets import read_jsonl  # noqa: E402
from sproutrag.learn.evaluation import result_row  # noqa: E402
from sproutrag.search.links import FETCH_MENTIONED, MENTION_WEIGHT  # noqa: E402
from sproutrag.search.node_scores import ANCHOR_LEAVES  # noqa: E402


def budgets_main(budgets: list[int], pools: list[str]) -> int:
    """Contexts under BUDGETS: the shipped context within and corpus-wide, LanceDB's
    corpus-wide, paired per query."""
    from sproutrag.learn.budgets import anchor_budget_rows, retriever_budget_rows
    from sproutrag.learn.metrics import paired_difference

    settings, encoder = H.default_encoder()
    for name in pools:
        r, queries, qvecs = H.open_pool(name, "dev", settings, encoder)
        docs = read_jsonl(H.pool_files(name, "dev")[0])
        within, shipped = retriever_budget_rows(r, queries, budgets, name, corpus_wide=True)
        everyone = [str(d["doc_id"]) for d in docs]
        wide = [dict(q, doc_ids=everyone) for q in queries]  # the search's filter only
        with AnchorTable(docs, encoder) as table:
            rows = anchor_budget_rows(list(ANCHORS), table, wide, qvecs,
                                      {str(d["doc_id"]): d["text"] for d in docs}, budgets)
        print(f"{name} dev, mean char P x R under {budgets}: shipped context within "
              f"{100 * within['mean_pr']:.2f}, corpus-wide {100 * shipped['mean_pr']:.2f} "
              f"({shipped['notes'].split('; ')[-1]})", flush=True)
        for row in rows:
            mean, se = paired_difference(shipped["per_query"]["pr"], row["per_query"]["pr"])
            print(f"  corpus-wide {row['name']} {100 * row['mean_pr']:.2f}: shipped "
                  f"{shipped['mean_pr'] / max(row['mean_pr'], 1e-12):.2f}x, "
                  f"{100 * mean:+.2f} +/- {100 * se:.2f}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budgets", type=int, nargs="+",
                    help="contexts under these character budgets instead of k units")
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    args = ap.parse_args(argv)
    if args.budgets:
        return budgets_main(args.budgets, args.pools)
    settings, encoder = H.default_encoder()
    for name in args.pools:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        docs = read_jsonl(H.pool_files(name, "dev")[0])
        within = A.tree_row(p, "within", math.inf)
        shipped = F.Fetch(p, T.Links(H.pool_files(name, "dev")[0])).run(
            "wide", 1, unit_links=True, mention=MENTION_WEIGHT, mention_fetch=FETCH_MENTIONED)
        rows = {f"tree anchor {ANCHOR_LEAVES} alone": A.tree_row(p, "wide", ANCHOR_LEAVES),
                "tree before": A.tree_row(p, "wide", math.inf),
                "leaves before": p.row("", p.runs("leaves", "wide", p.base))}
        everyone = [str(d["doc_id"]) for d in docs]
        wide = [dict(q, doc_ids=everyone) for q in p.queries]  # the search's filter only
        with AnchorTable(docs, encoder) as table:
            for mode in ANCHORS:
                rows[mode] = result_row(mode, table.runs(mode, wide, p.qvecs, H.KS), {},
                                        p.queries, units=table.spans)
        print(f"{name} dev corpus-wide: shipped tree IE {100 * shipped['avg']['ie']:.2f}, "
              f"char-IE {100 * shipped['avg']['char_ie']:.2f}", flush=True)
        for label, row in rows.items():
            print(f"  shipped tree - {label}: {H.against(shipped, row, within)}"
                  f" | {label} IE {100 * row['avg']['ie']:.2f} char-IE "
                  f"{100 * row['avg']['char_ie']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
