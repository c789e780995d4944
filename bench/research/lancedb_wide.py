"""The shipped corpus-wide search against LanceDB's own search over the whole corpus
(issue 29).

    PYTHONPATH=. .venv/bin/python bench/research/lancedb_wide.py
    PYTHONPATH=. .venv/bin/python bench/research/lancedb_wide.py --budgets 500 1000 2000

On each dev pool (`mentions.POOLS`: the three of `hierarchy.py` and named-contracts),
corpus-wide (no doc_ids): the shipped tree mode through the pool database's `Retriever`
(`Retriever.search` without doc_ids, the packaged defaults: every adopted rule, as
`sproutrag query` answers), the shipped leaves mode the same way, tree mode before rules
11-31 (the first stage's documents with their pooled statistics, in memory), and
LanceDB's BM25 and hybrid search (`sproutrag.learn.anchors`, the evaluation's yardstick)
over the pool's plain two-sentence chunks with no document filter; paired per query, and
each as a ratio to the shipped tree search within the questions' documents.

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
import mentions as M  # noqa: E402

from sproutrag.learn.anchors import ANCHORS, AnchorTable  # noqa: E402
from sproutrag.learn.datasets import read_jsonl  # noqa: E402
from sproutrag.learn.evaluation import result_row, retriever_runs  # noqa: E402


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
    ap.add_argument("--pools", nargs="+", default=M.POOLS)
    args = ap.parse_args(argv)
    if args.budgets:
        return budgets_main(args.budgets, args.pools)
    settings, encoder = H.default_encoder()
    for name in args.pools:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        docs = read_jsonl(H.pool_files(name, "dev")[0])
        within = p.row("within", retriever_runs(p.r, p.queries, H.KS, "tree"))
        shipped = p.row("shipped", retriever_runs(p.r, p.queries, H.KS, "tree",
                                                  corpus_wide=True))
        rows = {"shipped leaves": p.row("shipped leaves", retriever_runs(
                    p.r, p.queries, H.KS, "leaves", corpus_wide=True)),
                "tree before rules 11-31": A.tree_row(p, "wide", math.inf)}
        everyone = [str(d["doc_id"]) for d in docs]
        wide = [dict(q, doc_ids=everyone) for q in p.queries]  # the search's filter only
        with AnchorTable(docs, encoder) as table:
            for mode in ANCHORS:
                rows[mode] = result_row(mode, table.runs(mode, wide, p.qvecs, H.KS), {},
                                        p.queries, units=table.spans)
        print(f"{name} dev ({len(p.queries)} questions, {len(docs)} documents): shipped "
              f"tree within IE {100 * within['avg']['ie']:.2f}, char-IE "
              f"{100 * within['avg']['char_ie']:.2f}; corpus-wide "
              f"{H.against(shipped, within, within)}", flush=True)
        for label, row in rows.items():
            print(f"  shipped tree - {label}: {H.against(shipped, row, within)}"
                  f" | {label} IE {100 * row['avg']['ie']:.2f} "
                  f"({row['avg']['ie'] / within['avg']['ie']:.3f}x within), char-IE "
                  f"{100 * row['avg']['char_ie']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
