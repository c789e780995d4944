"""Rule 54 of docs/whole-corpus.md: each first-stage ranking keeps its leaders.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/text_leaders.py  # fit, dev

Through the product: `sproutrag evaluate --corpus-wide --modes tree` over each pool's
database (`out/db-hierarchy-{pool}-{split}`, built by `hierarchy.py`), with
`search.ranking_leaders` T from a config file, for T in LEADERS on the four train pools;
the least T within one SE of the best mean corpus-wide tree unit IE is chosen (one SE
over the pools, as `hierarchy.one_se_choice`), then it (every T with --all) and today's
(0) run on dev and are compared per query (unit IE and char-IE, paired), with each
run's ratio to within.
Runs are kept under out/text-leaders/{pool}-{split}-{T}/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools' files and the one-SE choice
from paired_results import database_rows, per_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "text-leaders"
POOLS = ("paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
#: Rule 54's grid, simplest (least) first.
LEADERS = (0, 1, 2, 3)


def run(pool: str, split: str, leaders: int) -> dict:
    """The database rows of `sproutrag evaluate` over POOL's SPLIT with LEADERS (cached)."""
    out = OUT / f"{pool}-{split}-{leaders}"
    if not (out / "results.json").is_file():
        out.mkdir(parents=True, exist_ok=True)
        docs, queries = H.pool_files(pool, split)
        cfg = out / "config.yaml"
        cfg.write_text(f"search:\n  ranking_leaders: {leaders}\n", encoding="utf-8")
        subprocess.run([str(ROOT / ".venv" / "bin" / "sproutrag"), "evaluate", "--docs",
                        str(docs), "--queries", str(queries), "--db",
                        str(ROOT / "out" / f"db-hierarchy-{pool}-{split}"), "--corpus-wide",
                        "--modes", "tree", "--cache", str(OUT / f"cache-{pool}-{split}"),
                        "--out", str(out), "--config", str(cfg)],
                       check=True, stdout=subprocess.DEVNULL)
    return database_rows(str(out / "results.json"))


def ies(rows: dict, metric: str = "ie", name: str = "tree corpus-wide") -> np.ndarray:
    """Per-query METRIC of row NAME, by qid order."""
    pq = per_query(rows[name], metric)
    return np.array([pq[q] for q in sorted(pq)])


def paired(a: np.ndarray, b: np.ndarray) -> str:
    d = 100 * (a - b)
    se = d.std(ddof=1) / np.sqrt(len(d))
    return f"{d.mean():+.2f} +/- {se:.2f} ({d.mean() / se if se else 0:+.1f} SE)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=list(POOLS))
    ap.add_argument("--all", action="store_true", help="on dev, every T (not only the "
                    "chosen one), for the record")
    args = ap.parse_args(argv)
    trials = []
    for t in LEADERS:
        per_pool = [ies(run(p, "train", t)) for p in args.pools]
        trials.append((t, per_pool))
        print(f"  train T {t}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in per_pool),
              flush=True)
    for t, per_pool in trials[1:]:
        print(f"  train T {t} - 0: " + "; ".join(
            f"{p} {paired(x, y)}" for p, x, y in zip(args.pools, per_pool, trials[0][1],
                                                      strict=True)), flush=True)
    chosen = H.one_se_choice(trials, lambda t: t, "rule 54 fit")
    for pool in args.pools:
        ref = run(pool, "dev", 0)
        for t in [t for t in LEADERS[1:] if t == chosen or args.all]:
            new = run(pool, "dev", t)
            within = ies(ref, name="tree").mean()
            mark = " (chosen)" if t == chosen else ""
            print(f"{pool} dev T {t}{mark}: IE {100 * ies(new).mean():.2f} "
                  f"({ies(new).mean() / within:.3f}x within) - today "
                  f"{paired(ies(new), ies(ref))}; char-IE "
                  f"{paired(ies(new, 'char_ie'), ies(ref, 'char_ie'))}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
