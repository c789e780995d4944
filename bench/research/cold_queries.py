"""Cold and warm corpus-wide queries of one checkout on a scale database, for comparing two
checkouts alternately (docs/whole-corpus.md, rule 12's cost).

    cd CHECKOUT && PYTHONPATH=. python bench/research/cold_queries.py DB [LEXICAL_WEIGHT [FETCH]]

DB: a database of `bench/query.py --scale N --scale-db DB`. 59 questions twice over
(first pass: mostly documents the Retriever has not seen; second pass: all cached), tree
mode, k = 5, queries encoded beforehand; LEXICAL_WEIGHT overrides the database's (the
scale database carries untrained parameters, lexical weight 0; trained ones use 1);
FETCH sets `fetch_named` (checkouts that have it; rule 13's cost).
Prints the first query and p50 / mean of each pass, with the checkout's path.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from query import QUESTIONS  # noqa: E402

from sproutrag.encoder.encoder import Encoder  # noqa: E402
from sproutrag.search import retriever as R  # noqa: E402


def main(argv: list[str]) -> int:
    db, lexical = argv[0], (float(argv[1]) if len(argv) > 1 and argv[1] != "-" else None)
    extra = {"fetch_named": int(argv[2])} if len(argv) > 2 else {}
    encoder = Encoder()
    qs = [QUESTIONS[i % len(QUESTIONS)] + f" ({i})" for i in range(60)]
    qvecs = encoder.encode_texts(qs)
    t0 = time.perf_counter()
    r = R.Retriever(db, encoder=encoder, lexical_weight=lexical, **extra)
    r.search_vector(qs[0], qvecs[0], k=5)
    first = time.perf_counter() - t0
    passes = []
    for _ in range(2):
        times = []
        for q, v in zip(qs[1:], qvecs[1:], strict=True):
            t0 = time.perf_counter()
            r.search_vector(q, v, k=5)
            times.append(1000 * (time.perf_counter() - t0))
        passes.append(f"p50 {np.median(times):.1f} mean {np.mean(times):.1f} ms")
    print(f"{Path(R.__file__).parents[2]} {extra}: first query {first:.2f} s; first pass "
          f"{passes[0]}; second pass {passes[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
