"""Word pairs in BM25 (stop 17): next to the shipped unigram BM25 (stems, heading x2), a
BM25 over adjacent pairs of the same tokens ("robert_young", "dandy_warhol"), added as
uni + beta * pairs before the fusion's z: names and defined terms of two words match as
a unit (a sequential-dependence idea)."""
from common import *
from sproutrag.search.lexical import LeafTerms, bm25_leaves
unigrams = lex.tokenize
def pairs(text):
    t = unigrams(text)
    return [a + "_" + b for a, b in zip(t, t[1:])]
for name, split, feats, queries, qv, texts in each_split():
    P = []
    for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, leaf_headings(feats, texts)):
        uni = bm25_leaves(q["query"], [LeafTerms.of(lt, lh)])[0]
        lex.tokenize = pairs
        bi = bm25_leaves(q["query"], [LeafTerms.of(lt, lh)])[0]
        lex.tokenize = unigrams
        P.append((keys, cos, uni, bi))
    def run(fn): return ranked(P, feats, queries, fn)
    base = run(lambda c, u, b: z(c) + z(u))
    report(f"{name}-{split} shipped", base)
    for beta in (0.25, 0.5, 1.0):
        report(f"{name}-{split} uni + {beta} pairs", run(lambda c, u, b: z(c) + z(u + beta * b)), base)
    report(f"{name}-{split} z(uni) + 0.5 z(pairs)", run(lambda c, u, b: z(c) + z(u) + 0.5 * z(b)), base)
