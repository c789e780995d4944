"""Rules without a setting, through the product: rules 56-58 of docs/whole-corpus.md.

    PYTHONPATH=. .venv/bin/python bench/research/rule_runs.py --rule 56 --label before
    PYTHONPATH=. .venv/bin/python bench/research/rule_runs.py --rule 56 --label after
    PYTHONPATH=. .venv/bin/python bench/research/rule_runs.py --rule 56 --compare

A rule with no setting is compared as code: `--label before` runs with the code before it
(a checkout of that commit), `--label after` with the rule. Each runs `sproutrag evaluate
--corpus-wide --modes tree` over each pool's database (`out/db-hierarchy-{pool}-{split}`,
built by `hierarchy.py`) for both splits; runs are kept under out/{rule's folder}/
{pool}-{split}-{label}/. A run of the same code kept by an earlier script is taken as
"before" when present (rule 56: `text_leaders.py`'s T 0; rule 57: rule 56's "after";
rule 58: those of the search rule 57 decided on).
`--compare` prints, per pool and split, after - before paired per query (unit IE and
char-IE of the corpus-wide tree row) and each run's ratio to within, then the rule's
decision: it ships when no pool, train or dev, is below -1 SE in unit IE or char-IE and
(rules 56 and 57) the mean of the dev pools' unit-IE differences is not below 0.
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
#: rule -> (its runs' folder under out/, the earlier runs of the code before it, whether
#: its decision also asks the dev pools' mean unit-IE difference not to be below 0)
RULES = {56: ("title-names", "text-leaders/{pool}-{split}-0", True),
         57: ("leading-names", "title-names/{pool}-{split}-after", True),
         58: ("and-titles", "{rule57}/{pool}-{split}-after", False)}
#: The runs of the search rule 57 decided on (not adopted: rule 56's).
RULE57_KEPT = "title-names"
POOLS = ("paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
SPLITS = ("train", "dev")


def run(rule: int, pool: str, split: str, label: str) -> Path:
    """results.json of `sproutrag evaluate` over POOL's SPLIT with today's code (LABEL:
    before or after RULE)."""
    folder, earlier, _ = RULES[rule]
    out = ROOT / "out" / folder / f"{pool}-{split}-{label}"
    if (out / "results.json").is_file():
        return out / "results.json"
    out.mkdir(parents=True, exist_ok=True)
    same = ROOT / "out" / earlier.format(pool=pool, split=split, rule57=RULE57_KEPT
                                         ) / "results.json"
    if label == "before" and same.is_file():
        shutil.copy(same, out / "results.json")
        return out / "results.json"
    subprocess.run([str(ROOT / ".venv" / "bin" / "sproutrag"), "evaluate",
                    *evaluate_args(pool, split, ROOT / "out" / folder, out)],
                   check=True, stdout=subprocess.DEVNULL)
    return out / "results.json"


def evaluate_args(pool: str, split: str, folder: Path, out: Path) -> list[str]:
    """`sproutrag evaluate`'s arguments for POOL's SPLIT, corpus-wide, tree mode, through
    the pool's database, its feature cache in FOLDER, its results in OUT."""
    docs, queries = H.pool_files(pool, split)
    return ["--docs", str(docs), "--queries", str(queries), "--db",
            str(ROOT / "out" / f"db-hierarchy-{pool}-{split}"), "--corpus-wide", "--modes",
            "tree", "--cache", str(folder / f"cache-{pool}-{split}"), "--out", str(out)]


def values(path: Path, metric: str, name: str = "tree corpus-wide") -> dict[str, float]:
    return per_query(database_rows(str(path))[name], metric)


def paired(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """(mean, standard error) of A - B in points over the queries both hold."""
    d = 100 * np.array([a[q] - b[q] for q in sorted(a.keys() & b.keys())])
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))


def compare(rule: int) -> int:
    worst, dev_means = 0.0, []
    for split in SPLITS:
        for pool in POOLS:
            before, after = (run(rule, pool, split, x) for x in ("before", "after"))
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
    ships = worst >= -1 and (np.mean(dev_means) >= 0 or not RULES[rule][2])
    print(f"lowest z {worst:+.1f}; mean dev unit-IE difference {np.mean(dev_means):+.2f}: "
          + ("ships" if ships else "not adopted"))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rule", type=int, choices=sorted(RULES), required=True)
    ap.add_argument("--label", choices=("before", "after"))
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--pools", nargs="+", default=list(POOLS))
    args = ap.parse_args(argv)
    if args.label:
        for split in SPLITS:
            for pool in args.pools:
                print(pool, split, run(args.rule, pool, split, args.label), flush=True)
    return compare(args.rule) if args.compare else 0


if __name__ == "__main__":
    raise SystemExit(main())
