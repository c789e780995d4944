"""The corpus-wide search with rules 62 and 65 on (the defaults) and off
(`name_free_leaves` 0, `alone_opening_leaves` 0), alternating per question in one
process, over a `bench/query_growth.py` database (stop 78). The two settings also gate
rules 68, 70, 72 and 77 (stop 80) and 80-83 (stops 81-82); LanceDB's own nearest-node
search runs in the same passes.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/research/rules_toggle.py /tmp/growth/docs-100000/db
    HF_HUB_OFFLINE=1 .venv/bin/python bench/research/rules_toggle.py DB --floors

With `--floors` (stop 79): rule 68, `name_free_leaves` 16 (the default) against 32, and
LanceDB's own nearest-node search over the same table in the same passes.

`bench/query.py`'s questions, encoded beforehand; four passes, the first not counted, the
order of the two Retrievers swapped each pass. Prints p50 and p95 milliseconds of each
and the p50 ratio. Not a test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from query import QUESTIONS  # noqa: E402

from sproutrag import Retriever  # noqa: E402


class Plain:
    """LanceDB's own nearest-node search over the same `nodes` table (the plain index)."""

    def __init__(self, db: str) -> None:
        import lancedb

        self.table = lancedb.connect(db).open_table("nodes")

    def search_vector(self, query: str, vec, k: int) -> list:
        return self.table.search(vec).limit(k).select(["doc_id"]).to_list()


def main(db: str, passes: int = 4, floors: bool = False) -> None:
    if floors:  # rule 68: name_free_leaves 16 (the default) against 32, and plain LanceDB
        ways = {"on": Retriever(db), "off": Retriever(db, name_free_leaves=32),
                "plain": Plain(db)}
    else:  # rules 62 and 65, and with them 68, 70, 72 and 77 (stop 80), and plain LanceDB
        ways = {"on": Retriever(db), "off": Retriever(db, alone_opening_leaves=0,
                                                       name_free_leaves=0),
                "plain": Plain(db)}
    vecs = ways["on"]._embed(QUESTIONS)
    ms: dict[str, list[float]] = {k: [] for k in ways}
    for p in range(passes):
        order = list(ways) if p % 2 else list(ways)[::-1]
        for q, v in zip(QUESTIONS, vecs, strict=True):
            for k in order:
                t0 = time.perf_counter()
                ways[k].search_vector(q, v, k=5)
                if p:  # the first pass warms the caches
                    ms[k].append(1000 * (time.perf_counter() - t0))
    what = "rule 68 (floor 16 on, 32 off)" if floors else "rules 62-77 of the two settings"
    for k, xs in ms.items():
        print(f"{what} {k}: p50 {np.median(xs):.1f} ms, p95 "
              f"{np.percentile(xs, 95):.1f} ms ({len(xs)} searches)")
    print(f"p50 on / off: {np.median(ms['on']) / np.median(ms['off']):.2f}x")


if __name__ == "__main__":
    main(sys.argv[1], floors="--floors" in sys.argv[2:])
