"""Query-term coverage (stop 17): rank greedily; after each pick, the BM25 contribution of
a query term already present in a picked leaf is multiplied by gamma per such leaf, so
the next picks favour the query's uncovered terms (two-paragraph questions: "Which came
first X or Y?"). Base: the shipped fusion z(cos) + z(BM25), stems, heading x2."""
from common import *
from sproutrag.search.lexical import LeafTerms, tokenize, _idf
def contributions(query, lt):
    """[n_leaves, n_terms] BM25 contribution of each query term, and presence."""
    terms = sorted(set(tokenize(query))); n = len(lt.lengths); avg = max(lt.lengths.mean(), 1e-9)
    C = np.zeros((n, len(terms)))
    for j, t in enumerate(terms):
        tf = lt.tf(t); df = int((tf > 0).sum())
        if df:
            C[:, j] = _idf(df, n) * tf * (lex.K1 + 1) / (tf + lex.K1 * (1 - lex.B + lex.B * lt.lengths / avg))
    return C
def greedy(cos, C, gamma, w=1.0, k=5):
    zc = z(cos); b = C.sum(1); mu, sd = b.mean(), max(b.std(), 1e-9)
    present = C > 0; covered = np.zeros(C.shape[1]); picked = []
    for _ in range(min(k, len(cos))):
        lexs = (C * gamma ** covered).sum(1)
        s = zc + w * (lexs - mu) / sd
        s[picked] = -np.inf
        i = int(np.argmax(s)); picked.append(i); covered += present[i]
    return picked
for name, split, feats, queries, qv, texts in each_split():
    P = [(keys, cos, contributions(q["query"], LeafTerms.of(lt, lh)))
         for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, leaf_headings(feats, texts))]
    res = {}
    for gamma in (1.0, 0.75, 0.5, 0.25):
        runs = {k: [] for k in KS}
        for keys, cos, C in P:
            o = greedy(cos, C, gamma)
            r = [(keys[i][0], *map(int, feats[keys[i][0]].spans[keys[i][1]])) for i in o]
            for k in KS: runs[k].append(r[:k])
        res[gamma] = score(runs, feats, queries)
        report(f"{name}-{split} coverage gamma {gamma}", res[gamma], res[1.0] if gamma != 1.0 else None)
