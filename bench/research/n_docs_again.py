"""Rule 37 (issue 29): more documents searched corpus-wide, on today's search.

    PYTHONPATH=. .venv/bin/python bench/research/n_docs_again.py            # fit, then dev
    PYTHONPATH=. .venv/bin/python bench/research/n_docs_again.py --n 12     # dev only

Rule 7 chose `n_docs` 8 before rules 11-36. Through each pool's shipped Retriever (every
adopted rule on), corpus-wide tree mode with `FirstStage.n_docs` in N_DOCS, k = 1, 3, 5:
fitted on the four train pools (mean corpus-wide tree unit IE, pools weighted equally;
the smallest n within one SE of the best), then the chosen n against today's 8 on each
dev pool, paired per query (unit IE and char-IE), and every other n for the record.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402
import mentions as M  # noqa: E402

from sproutrag.learn.evaluation import result_row, retriever_runs  # noqa: E402

N_DOCS = (8, 12, 16)
TODAY = 8


def rows(pool: str, split: str, settings, encoder, points) -> dict[int, dict]:
    """n -> the corpus-wide tree row of POOL's SPLIT with n_docs n."""
    r, queries, _ = H.open_pool(pool, split, settings, encoder)
    with r._one_view():
        spans = {d: st.spans for d, (_, st) in r.documents.read(
            [d for d, _ in r._current().items()])[0].items()}
    out = {}
    for n in points:
        r.first.n_docs = n
        runs = retriever_runs(r, queries, H.KS, "tree", corpus_wide=True)
        out[n] = result_row(f"n_docs {n}", runs, {}, queries, units=spans)
        print(f"  {pool} {split} n_docs {n}: IE {100 * out[n]['avg']['ie']:.2f}, "
              f"char-IE {100 * out[n]['avg']['char_ie']:.2f}", flush=True)
    r.first.n_docs = TODAY
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, help="skip the fit: compare this n_docs on dev")
    ap.add_argument("--pools", nargs="+", default=M.POOLS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    chosen = args.n
    if chosen is None:
        train = {p: rows(p, "train", settings, encoder, N_DOCS) for p in args.pools}
        trials = [(n, [H.per_query(train[p][n]) for p in args.pools]) for n in N_DOCS]
        for n, ies in trials:
            print(f"train n_docs {n}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in ies)
                  + f" (mean {100 * H.mean_ie(ies):.2f})", flush=True)
        chosen = H.one_se_choice(trials, lambda n: n, "rule 37 fit")
    for p in args.pools:
        dev = rows(p, "dev", settings, encoder, N_DOCS)
        for n in N_DOCS:
            if n != TODAY:
                mark = " (chosen)" if n == chosen else ""
                print(f"{p} dev n_docs {n}{mark} - {TODAY}: IE "
                      f"{H.difference(dev[n], dev[TODAY], 'ie')}; char-IE "
                      f"{H.difference(dev[n], dev[TODAY], 'char_ie')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
