"""Before/after: the paired per-query IE difference of one mode between two
`bench/quality.py` runs (the same sets, another setting).

    .venv/bin/python bench/compare_quality.py out/quality out/quality-510 [--mode 'tree (trained)']

For every set present in both report folders, prints IE (averaged over k = 1, 3, 5) of
the mode before and after and the paired difference (after - before, matched by query
id) with its standard error, the same for char-IE: the figures that say whether a
change moved retrieval.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rows(folder: Path) -> dict[str, dict]:
    report = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return {row["name"]: row for row in report["rows"]}


def main(argv: list[str] | None = None) -> int:
    from sproutrag.learn.metrics import paired_difference

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="report folder of the reference run")
    p.add_argument("after", type=Path, help="report folder of the changed run")
    p.add_argument("--mode", default="tree (trained)",
                   help="row name of the variant to compare (default: 'tree (trained)', the "
                   "shipped search; 'flat (leaf only)' for flat)")
    args = p.parse_args(argv)
    sets = sorted(
        d.name for d in args.before.iterdir()
        if (d / "results.json").is_file() and (args.after / d.name / "results.json").is_file()
    )
    if not sets:
        print(f"no set has a results.json in both {args.before} and {args.after}")
        return 1
    print(f"| set | queries | {args.mode} IE before | after | after - before (paired) "
          "| charIE before | after | after - before (paired) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in sets:
        before = _rows(args.before / name).get(args.mode)
        after = _rows(args.after / name).get(args.mode)
        if before is None or after is None:
            print(f"| {name} | mode {args.mode!r} missing in one run | | | | | | |")
            continue
        cells = []
        for key in ("ie", "char_ie"):
            b = dict(zip(before["per_query"]["qid"], before["per_query"][key], strict=True))
            a = dict(zip(after["per_query"]["qid"], after["per_query"][key], strict=True))
            qids = sorted(set(a) & set(b))
            d, se = paired_difference([a[q] for q in qids], [b[q] for q in qids])
            cells.append(f"{100 * before['avg'][key]:.1f} | {100 * after['avg'][key]:.1f} | "
                         f"{100 * d:+.2f} +/- {100 * se:.2f}")
        print(f"| {name} | {len(qids)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
