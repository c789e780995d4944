"""Does ranking full-text ties by row id (`text_index.best_rows`, stop 72) move any
dev figure? The fourth QA pass found corpus-wide answers that changed between processes
on an incrementally updated database: LanceDB cut the full-text ranking's ties wherever
its scan met them. The fix reads on until a tie at the cut is whole and ranks it by row
id, so a process's answer no longer depends on the scan; this compares it, through the
product, with LanceDB's own order (the same code with `best_rows` replaced by one query
of the limit, as before).

    PYTHONPATH=. .venv/bin/python bench/research/tie_order.py [--pools paragraphs named-contracts]

Runs `sproutrag evaluate --modes tree leaves --db out/db-ties-{pool} --corpus-wide
--budgets 500 1000 2000` on each pool's dev split (`hierarchy.pool_files`) for both
orders (runs under out/tie-order/{pool}-{order}/), then prints the corpus-wide tree
row's unit IE and char-IE of each, paired per query (`paired_results.py`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def run(pool: str, order: str) -> Path:
    """One evaluation of POOL's dev split with ORDER ("rowid" or "lance")."""
    import hierarchy as H
    from sproutrag.flows.cli import main

    from sproutrag.search import text_index

    docs, queries = H.pool_files(pool, "dev")
    out = ROOT / "out" / "tie-order" / f"{pool}-{order}"
    if order == "lance":  # LanceDB's cut and order of ties, as before stop 72
        text_index.best_rows = lambda search, limit: search(limit)
    code = main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "tree", "leaves", "--db", str(ROOT / "out" / f"db-ties-{pool}"),
                 "--corpus-wide", "--budgets", "500", "1000", "2000", "--out", str(out),
                 "--cache", str(ROOT / ".eval-cache")])
    if code:
        raise SystemExit(code)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", nargs="+", default=["paragraphs", "named-contracts"])
    parser.add_argument("--one", nargs=2, metavar=("POOL", "ORDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run(*args.one)
        return
    for pool in args.pools:
        outs = {}
        for order in ("lance", "rowid"):  # each in a process of its own
            subprocess.run([sys.executable, __file__, "--one", pool, order], check=True)
            outs[order] = ROOT / "out" / "tie-order" / f"{pool}-{order}"
        print(f"== {pool} dev: row-id order - LanceDB's order")
        subprocess.run([sys.executable, str(ROOT / "bench" / "research" / "paired_results.py"),
                        str(outs["rowid"] / "results.json"), str(outs["lance"] / "results.json")],
                       check=True)


if __name__ == "__main__":
    main()
