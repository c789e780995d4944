"""BM25 shape, with stemmed tokens (stop 17): k1 and b, and the weight of a leaf's
section heading (its tokens counted h times), in the shipped fusion z(cos) + z(BM25)."""
import sys
from common import *
import sproutrag.lexical as lex
from sproutrag.lexical import LeafTerms, bm25_leaves
from sproutrag.search import cosine_scores
def scores(query, texts, heads, h, k1, b):
    lex.K1, lex.B = k1, b
    ctx = [" ".join([x] * h) if h else "" for x in heads]
    out = bm25_leaves(query, [LeafTerms.of(texts, ctx)])[0]
    lex.K1, lex.B = 1.2, 0.75
    return out
SHAPES = [(1, 1.2, 0.75), (0, 1.2, 0.75), (2, 1.2, 0.75), (3, 1.2, 0.75),
          (1, 0.9, 0.75), (1, 1.5, 0.75), (1, 2.0, 0.75), (1, 1.2, 0.5), (1, 1.2, 0.9), (1, 1.2, 0.3)]
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
            P.append((keys, np.concatenate(cos).astype(np.float64),
                      *[scores(q["query"], lt, lh, *sh) for sh in SHAPES]))
        def run(fn): return ranked(P, feats, queries, fn)
        base = run(lambda c, *bs: z(c) + z(bs[0]))
        report(f"{name}-{split} shipped (stemmed; heading x1, k1 1.2, b 0.75)", base)
        for i, (h, k1, b) in enumerate(SHAPES[1:], 1):
            report(f"{name}-{split} heading x{h}, k1 {k1}, b {b}", run(lambda c, *bs: z(c) + z(bs[i])), base)
