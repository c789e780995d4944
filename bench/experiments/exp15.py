"""Stemmed BM25: the fusion z(cos) + z(BM25 leaf+heading) with each token reduced by the
Snowball English stemmer ("formed"/"forming" -> "form", "disclosure"/"disclosed" ->
"disclos"), against unstemmed tokens; lexical weights 0.75 / 1 / 1.25. The heading
counts once here (as before stop 17)."""
from common import *
stemmed_tokenize = lex.tokenize  # the shipped analyzer since stop 17
for name, split, feats, queries, qv, texts in each_split():
    P = []
    for q, keys, cos, lt, lh in query_leaves(feats, queries, qv, texts, leaf_headings(feats, texts)):
        with_head = [h + "\n" + t for h, t in zip(lh, lt)]
        lex.tokenize = plain_tokenize
        b = lex.bm25_scores(q["query"], with_head)
        lex.tokenize = stemmed_tokenize
        P.append((keys, cos, b, lex.bm25_scores(q["query"], with_head)))
    def run(fn): return ranked(P, feats, queries, fn)
    flat = run(lambda c, b, bs: c)
    report(f"{name}-{split} flat", flat)
    base = run(lambda c, b, bs: z(c) + z(b))
    report(f"{name}-{split} shipped fusion", base, flat)
    report(f"{name}-{split} stemmed BM25 alone", run(lambda c, b, bs: bs), flat)
    for w in (0.75, 1.0, 1.25):
        report(f"{name}-{split} z(cos) + {w} z(stemmed BM25)", run(lambda c, b, bs: z(c) + w * z(bs)), base)
