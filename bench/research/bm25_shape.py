"""With stems, how much should a leaf's section heading count, and are BM25's k1 and b
right?

    PYTHONPATH=. .venv/bin/python bench/research/bm25_shape.py [--sets ...] [--splits ...]

Ranks each query's leaves by z(cos) + z(BM25) (stemmed, the shipped analyzer) and varies
one thing at a time against heading x1, k1 1.2, b 0.75: the heading counted 0, 2 or 3
times (`LeafTerms.of(..., context_weight=)`), k1 0.9 / 1.5 / 2, b 0.3 / 0.5 / 0.9
(`bm25_leaves(..., k1=, b=)`), each paired against the base. The shipped setting since
stop 17 is heading x2 (`sproutrag.search.lexical.CONTEXT_WEIGHT`), Lucene's k1 and b.
docs/results.md, "BM25's shape with stems".
"""

from __future__ import annotations

from labelled_sets import each_split, parse_args, query_leaves, ranked_runs, report, score, z

from sproutrag.search.lexical import LeafTerms, bm25_leaves

#: (heading count, k1, b); the first is the base every other is paired against
SHAPES = [(1, 1.2, 0.75), (0, 1.2, 0.75), (2, 1.2, 0.75), (3, 1.2, 0.75),
          (1, 0.9, 0.75), (1, 1.5, 0.75), (1, 2.0, 0.75), (1, 1.2, 0.5), (1, 1.2, 0.9),
          (1, 1.2, 0.3)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv)
    for s in each_split(args):
        rows = query_leaves(s)
        keys = [r.keys for r in rows]
        rows_by_shape = []
        for heading, k1, b in SHAPES:
            fused = []
            for r in rows:
                terms = LeafTerms.of(r.texts, r.headings, context_weight=heading)
                lexical = bm25_leaves(r.query["query"], [terms], k1=k1, b=b)[0]
                fused.append(z(r.cosine) + z(lexical))
            name = f"{s.name} heading x{heading}, k1 {k1}, b {b}"
            rows_by_shape.append(score(name, ranked_runs(s, keys, fused), s))
        base, *others = rows_by_shape
        report(base)
        for row in others:
            report(row, base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
