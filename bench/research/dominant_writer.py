"""Rule 35 (issue 29): an entity two or more searched documents write names the one that
writes it far more often, per word of its text, than every other holder.

    PYTHONPATH=. .venv/bin/python bench/research/dominant_writer.py --fit   # train, then dev

Through the shipped Retriever (`search.dominant_ratio` set on it; 0 is off), corpus-wide
tree mode on each pool's database: on train the grid RATIOS and off, the simplest point
within one SE of the best (off, then the largest ratio); on dev the chosen ratio against
off, paired per query. Each line also says how many questions the ratio names a document
for that off does not, and how many of those are a gold document of the question.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402
import mentions as M  # noqa: E402

from sproutrag.learn.evaluation import retriever_runs  # noqa: E402

RATIOS = (0.0, 2.0, 3.0, 5.0, 10.0)


def newly_named(p: H.Pool) -> tuple[int, int]:
    """(questions whose named documents gain one at the Retriever's ratio against off,
    those whose new named documents are all gold)."""
    ratio, params = p.r.dominant_ratio, p.r._resolve()[0]
    gained = gold = 0
    for q, v in zip(p.queries, p.qvecs, strict=True):
        named = []
        for r in (0.0, ratio):
            p.r.dominant_ratio = r
            with p.r._one_view():
                docs = p.r.choose_documents(v, None, k=5, query=q["query"])
                named.append(set(p.r.searching._read(docs, params, q["query"], True).named))
        p.r.dominant_ratio = ratio
        new = named[1] - named[0]
        if new:
            gained += 1
            gold += new <= set(q["doc_ids"])
    return gained, gold


def row(p: H.Pool, ratio: float) -> dict[str, Any]:
    p.r.dominant_ratio = ratio
    out = p.row(f"ratio {ratio}", retriever_runs(p.r, p.queries, H.KS, "tree",
                                                 corpus_wide=True))
    out["newly named"] = newly_named(p) if ratio else (0, 0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true", help="fit on train first (else --ratio)")
    ap.add_argument("--ratio", type=float, help="the ratio to compare on dev")
    ap.add_argument("--pools", nargs="+", default=M.POOLS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    chosen = args.ratio
    if args.fit:
        pools = [H.Pool(n, *H.open_pool(n, "train", settings, encoder)) for n in args.pools]
        trials = []
        for ratio in RATIOS:
            rows = [row(p, ratio) for p in pools]
            trials.append((ratio, [H.per_query(r) for r in rows]))
            print(f"  train ratio {ratio}: " + " / ".join(
                f"{100 * r['avg']['ie']:5.2f} (named {r['newly named'][0]}, gold "
                f"{r['newly named'][1]})" for r in rows), flush=True)
        chosen = H.one_se_choice(trials, lambda x: (x > 0, -x), "rule 35 fit")
    if not chosen:
        print("off chosen: nothing to compare on dev")
        return 0
    for name in args.pools:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        within = p.row("within", retriever_runs(p.r, p.queries, H.KS, "tree"))
        ref, new = row(p, 0.0), row(p, chosen)
        print(f"{name} dev ratio {chosen}: {H.against(new, ref, within)}; newly named "
              f"{new['newly named'][0]}, all gold {new['newly named'][1]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
