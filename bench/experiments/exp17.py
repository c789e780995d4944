"""Query-term coverage (stop 17): rank greedily; after each pick, the BM25 contribution of
a query term already present in a picked leaf is multiplied by gamma per such leaf, so
the next picks favour the query's uncovered terms (two-paragraph questions: "Which came
first X or Y?"). Base: the shipped fusion z(cos) + z(BM25), stems, heading x2."""
import sys
from common import *
import sproutrag.lexical as lex
from sproutrag.lexical import LeafTerms, tokenize, _idf
from sproutrag.search import cosine_scores
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
for name in sys.argv[1].split(","):
    for split in sys.argv[2].split(","):
        feats, queries, qv, texts = load(name, split)
        heads = leaf_headings(feats, texts)
        P = []
        for q, v in zip(queries, qv):
            keys, cos, lt, lh = [], [], [], []
            for d in q["doc_ids"]:
                cos.append(cosine_scores(feats[d].emb, v)); keys += [(d, u) for u in range(feats[d].n)]
                lt += [texts[d][s:e] for s, e in feats[d].spans]; lh += heads[d]
            P.append((keys, np.concatenate(cos).astype(np.float64), contributions(q["query"], LeafTerms.of(lt, lh))))
        res = {}
        for gamma in (1.0, 0.75, 0.5, 0.25):
            runs = {k: [] for k in KS}
            for keys, cos, C in P:
                o = greedy(cos, C, gamma)
                r = [(keys[i][0], *map(int, feats[keys[i][0]].spans[keys[i][1]])) for i in o]
                for k in KS: runs[k].append(r[:k])
            res[gamma] = score(runs, feats, queries)
            report(f"{name}-{split} coverage gamma {gamma}", res[gamma], res[1.0] if gamma != 1.0 else None)
