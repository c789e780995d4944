"""Rule 56 of docs/whole-corpus.md: a title's lower-case words join one name.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/title_names.py --label before
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/title_names.py --label after
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/title_names.py --compare

The rule has no setting: `--label before` runs with the code before it (a checkout of that
commit), `--label after` with the rule. Each runs `sproutrag evaluate --corpus-wide
--modes tree` over each pool's database (`out/db-hierarchy-{pool}-{split}`, built by
`hierarchy.py`) for both splits; runs are kept under out/title-names/{pool}-{split}-{label}/
(a run of `text_leaders.py` with T 0, the same code, is taken as "before" when present).
`--compare` prints, per pool and split, after - before paired per query (unit IE and
char-IE of the corpus-wide tree row) and each run's ratio to within, then the rule's
decision.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools' files
from paired_results import database_rows, per_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "title-names"
LEADERS = ROOT / "out" / "text-leaders"
POOLS = ("paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
SPLITS = ("train", "dev")


def run(pool: str, split: str, label: str) -> Path:
    """results.json of `sproutrag evaluate` over POOL's SPLIT with today's code (LABEL)."""
    out = OUT / f"{pool}-{split}-{label}"
    if (out / "results.json").is_file():
        return out / "results.json"
    out.mkdir(parents=True, exist_ok=True)
    same = LEADERS / f"{pool}-{split}-0" / "results.json"
    if label == "before" and same.is_file():
        shutil.copy(same, out / "results.json")
        return out / "results.json"
    docs, queries = H.pool_files(pool, split)
    subprocess.run([str(ROOT / ".venv" / "bin" / "sproutrag"), "evaluate", "--docs",
                    str(docs), "--queries", str(queries), "--db",
                    str(ROOT / "out" / f"db-hierarchy-{pool}-{split}"), "--corpus-wide",
                    "--modes", "tree", "--cache", str(OUT / f"cache-{pool}-{split}"),
                    "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out / "results.json"


def values(path: Path, metric: str, name: str = "tree corpus-wide") -> dict[str, float]:
    return per_query(database_rows(str(path))[name], metric)


def paired(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """(mean, standard error) of A - B in points over the queries both hold."""
    d = 100 * np.array([a[q] - b[q] for q in sorted(a.keys() & b.keys())])
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


def compare() -> int:
    worst, dev_means = 0.0, []
    for split in SPLITS:
        for pool in POOLS:
            before, after = run(pool, split, "before"), run(pool, split, "after")
            within = np.mean(list(values(before, "ie", "tree").values()))
            cells = []
            for metric in ("ie", "char_ie"):
                m, se = paired(values(after, metric), values(before, metric))
                z = m / se if se else 0.0
                worst = min(worst, z)
                if split == "dev" and metric == "ie":
                    dev_means.append(m)
                cells.append(f"{metric} {m:+.2f} +/- {se:.2f} ({z:+.1f} SE)")
            ie = np.mean(list(values(after, "ie").values()))
            print(f"{pool:16s} {split:5s} corpus-wide IE {100 * ie:5.2f} "
                  f"({ie / within:.3f}x within); after - before: " + "; ".join(cells))
    ships = worst >= -1 and np.mean(dev_means) >= 0
    print(f"lowest z {worst:+.1f}; mean dev unit-IE difference {np.mean(dev_means):+.2f}: "
          + ("ships" if ships else "not adopted"))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", choices=("before", "after"))
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--pools", nargs="+", default=list(POOLS))
    args = ap.parse_args(argv)
    if args.label:
        for split in SPLITS:
            for pool in args.pools:
                print(pool, split, run(pool, split, args.label), flush=True)
    return compare() if args.compare else 0


if __name__ == "__main__":
    raise SystemExit(main())
