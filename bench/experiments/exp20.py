"""BM25 collection statistics (stop 17): document frequencies and average length from the
query's own documents' leaves (shipped) or from every document of the set (a corpus-wide
background, as a search engine's index would have), scoring the same leaves."""
from common import *
from sproutrag.search.lexical import LeafTerms, bm25_leaves
for name, split, feats, queries, qv, texts in each_split():
    heads = leaf_headings(feats, texts)
    ids = list(feats)
    terms = {d: LeafTerms.of([texts[d][s:e] for s, e in feats[d].spans], heads[d]) for d in ids}
    P = []
    for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, heads):
        own = np.concatenate(bm25_leaves(q["query"], [terms[d] for d in q["doc_ids"]]))
        allb = dict(zip(ids, bm25_leaves(q["query"], [terms[d] for d in ids])))
        P.append((keys, cos, own, np.concatenate([allb[d] for d in q["doc_ids"]])))
    def run(fn): return ranked(P, feats, queries, fn)
    base = run(lambda c, o, a: z(c) + z(o))
    report(f"{name}-{split} shipped (own documents' statistics)", base)
    report(f"{name}-{split} corpus-wide statistics", run(lambda c, o, a: z(c) + z(a)), base)
