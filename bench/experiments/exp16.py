"""BM25 shape, with stemmed tokens (stop 17): k1 and b, and the weight of a leaf's
section heading (its tokens counted h times), in the shipped fusion z(cos) + z(BM25)."""
from common import *
from sproutrag.search.lexical import LeafTerms, bm25_leaves
lex.CONTEXT_WEIGHT = 1  # the heading's count is set by h here
def scores(query, texts, heads, h, k1, b):
    lex.K1, lex.B = k1, b
    ctx = [" ".join([x] * h) if h else "" for x in heads]
    out = bm25_leaves(query, [LeafTerms.of(texts, ctx)])[0]
    lex.K1, lex.B = 1.2, 0.75
    return out
SHAPES = [(1, 1.2, 0.75), (0, 1.2, 0.75), (2, 1.2, 0.75), (3, 1.2, 0.75),
          (1, 0.9, 0.75), (1, 1.5, 0.75), (1, 2.0, 0.75), (1, 1.2, 0.5), (1, 1.2, 0.9), (1, 1.2, 0.3)]
for name, split, feats, queries, qv, texts in each_split():
    P = [(keys, cos, *[scores(q["query"], lt, lh, *sh) for sh in SHAPES])
         for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, leaf_headings(feats, texts))]
    def run(fn): return ranked(P, feats, queries, fn)
    base = run(lambda c, *bs: z(c) + z(bs[0]))
    report(f"{name}-{split} shipped (stemmed; heading x1, k1 1.2, b 0.75)", base)
    for i, (h, k1, b) in enumerate(SHAPES[1:], 1):
        report(f"{name}-{split} heading x{h}, k1 {k1}, b {b}", run(lambda c, *bs: z(c) + z(bs[i])), base)
