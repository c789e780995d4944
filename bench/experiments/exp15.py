"""Stemmed BM25: the shipped fusion z(cos) + z(BM25 leaf+heading) with each token reduced
by the Snowball English stemmer ("formed"/"forming" -> "form", "disclosure"/"disclosed"
-> "disclos"), against the shipped unstemmed tokens; lexical weights 0.75 / 1 / 1.25."""
import sys, functools
from common import *
import snowballstemmer
import sproutrag.lexical as lex
from sproutrag.search import cosine_scores
plain_tokenize = lex.tokenize
stem = functools.lru_cache(maxsize=None)(snowballstemmer.stemmer("english").stemWord)
def stemmed_tokenize(text):
    return [stem(w) for w in plain_tokenize(text)]
for name in sys.argv[1].split(","):
    for split in sys.argv[2].split(","):
        feats, queries, qv, texts = load(name, split)
        heads = leaf_headings(feats, texts)
        P = []
        for q, v in zip(queries, qv):
            keys, cos, lh = [], [], []
            for d in q["doc_ids"]:
                cos.append(cosine_scores(feats[d].emb, v)); keys += [(d, u) for u in range(feats[d].n)]
                lh += with_headings(d, feats, texts, heads)
            lex.tokenize = plain_tokenize
            b = lex.bm25_scores(q["query"], lh)
            lex.tokenize = stemmed_tokenize
            bs = lex.bm25_scores(q["query"], lh)
            lex.tokenize = plain_tokenize
            P.append((keys, np.concatenate(cos).astype(np.float64), b, bs))
        def run(fn): return ranked(P, feats, queries, fn)
        flat = run(lambda c, b, bs: c)
        report(f"{name}-{split} flat", flat)
        base = run(lambda c, b, bs: z(c) + z(b))
        report(f"{name}-{split} shipped fusion", base, flat)
        report(f"{name}-{split} stemmed BM25 alone", run(lambda c, b, bs: bs), flat)
        for w in (0.75, 1.0, 1.25):
            report(f"{name}-{split} z(cos) + {w} z(stemmed BM25)", run(lambda c, b, bs: z(c) + w * z(bs)), base)
