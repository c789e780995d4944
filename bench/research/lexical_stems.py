"""Does reducing BM25's words to their stems help the fused ranking?

    PYTHONPATH=. .venv/bin/python bench/research/lexical_stems.py [--sets ...] [--splits ...]

Ranks each query's leaves by z(cos) + w z(BM25), BM25 over each leaf's text with its
section heading counted once, and compares the unstemmed analyzer
(`sproutrag.search.lexical.words`, before stop 17) with the Snowball stems
(`tokenize`, shipped): flat (cosine), the unstemmed fusion (w 1), stemmed BM25 alone, and
the stemmed fusion at w 0.75, 1, 1.25, each paired against the unstemmed fusion.
docs/results.md, "Stemmed BM25".
"""

from __future__ import annotations

import numpy as np
from labelled_sets import (
    Split,
    each_split,
    parse_args,
    query_leaves,
    ranked_runs,
    report,
    score,
    z,
)

from sproutrag.search.lexical import Analyzer, LeafTerms, bm25_leaves, tokenize, words


def bm25(query: str, texts: list[str], analyzer: Analyzer) -> np.ndarray:
    """BM25 of `query` over `texts` as one collection, with `analyzer` on both sides."""
    return bm25_leaves(query, [LeafTerms.of(texts, analyzer=analyzer)], analyzer=analyzer)[0]


def compare(s: Split) -> None:
    rows = query_leaves(s)
    keys = [r.keys for r in rows]
    cos = [r.cosine for r in rows]
    plain, stemmed = [], []
    for r in rows:
        texts = [h + "\n" + t for h, t in zip(r.headings, r.texts)]  # the heading once
        plain.append(bm25(r.query["query"], texts, words))
        stemmed.append(bm25(r.query["query"], texts, tokenize))

    def run(name: str, scores: list[np.ndarray]) -> dict:
        return score(f"{s.name} {name}", ranked_runs(s, keys, scores), s)

    flat = run("flat", cos)
    report(flat)
    base = run("z(cos) + z(BM25), no stems", [z(c) + z(b) for c, b in zip(cos, plain)])
    report(base, flat)
    report(run("stemmed BM25 alone", stemmed), flat)
    for w in (0.75, 1.0, 1.25):
        fused = [z(c) + w * z(b) for c, b in zip(cos, stemmed)]
        report(run(f"z(cos) + {w} z(stemmed BM25)", fused), base)


def main(argv: list[str] | None = None) -> int:
    for s in each_split(parse_args(__doc__, argv)):
        compare(s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
