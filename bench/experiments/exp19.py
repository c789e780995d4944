"""Lexical neighbourhood (stop 17): each leaf's BM25 (shipped: stems, heading x2) smoothed
with its document neighbours' before the fusion: b_i + lam * (b_{i-1} + b_{i+1}) / 2, so
a clause or paragraph cut over two chunks lends its words to both halves."""
from common import *
from sproutrag.search.lexical import LeafTerms, bm25_leaves
def smooth(b, keys, lam):
    out = b.copy()
    for i in range(len(b)):
        nb = [b[j] for j in (i - 1, i + 1) if 0 <= j < len(b) and keys[j][0] == keys[i][0]]
        if nb: out[i] += lam * sum(nb) / 2
    return out
for name, split, feats, queries, qv, texts in each_split():
    P = []
    for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, leaf_headings(feats, texts)):
        b = bm25_leaves(q["query"], [LeafTerms.of(lt, lh)])[0]
        P.append((keys, cos, b, *[smooth(b, keys, lam) for lam in (0.1, 0.25, 0.5)]))
    def run(fn): return ranked(P, feats, queries, fn)
    base = run(lambda c, b, *s: z(c) + z(b))
    report(f"{name}-{split} shipped", base)
    for i, lam in enumerate((0.1, 0.25, 0.5)):
        report(f"{name}-{split} BM25 + {lam} x neighbours", run(lambda c, b, *s: z(c) + z(s[i])), base)
