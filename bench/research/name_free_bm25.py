"""Rule 64 of docs/whole-corpus.md through the product: rule 62's documents take the
question less its names in BM25 too (stop 78).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/research/name_free_bm25.py \
        --label rule64 --product WORKTREE [--sets named-contracts hotpotqa ...]
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/name_free_bm25.py --compare

`--label rule64` runs `sproutrag evaluate --db DB --corpus-wide --modes tree`
(`name_free_runs.run`, dev splits) with the `sproutrag` package of PRODUCT, unpatched: a
worktree whose product code scores a gated document's BM25 with `name_free` (the rule's
candidate). `--compare` pairs those runs with rule 62's `gated`
runs (`opening_gate.py --label gated`, the shipped search before the rule). The sets
run are those whose dev questions gate a document in (`opening_gate.py --counts dev`):
the paragraph pool and ContractNLI gate none. Not a test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GATED_SETS = ("named-contracts", "hotpotqa", "hotpot-pooled", "long-pooled")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", choices=("rule64",))
    ap.add_argument("--sets", nargs="+", default=list(GATED_SETS))
    ap.add_argument("--product", help="the worktree whose sproutrag is run")
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.product:  # imported first: `hierarchy` puts the repository ahead of it
        sys.path.insert(0, str(Path(args.product).resolve()))
    import sproutrag

    sys.path.insert(0, str(HERE))
    import name_free_runs as R

    if args.label:
        print("sproutrag from", Path(sproutrag.__file__).parent, flush=True)
        for name in args.sets:
            print(name, R.run(name, args.label), flush=True)
    if args.compare:
        R.compare("rule64", base="gated")


if __name__ == "__main__":
    main()
