"""Heading in the dense vector: cos(query, embed(heading + newline + leaf text)) in place of
(or next to) the leaf's own cosine, fused with z(BM25 leaf+heading) as shipped."""
import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
for name in sys.argv[1].split(","):
    for split in sys.argv[2].split(","):
        feats, queries, qv, texts = load(name, split)
        heads = leaf_headings(feats, texts)
        ctx = {}
        path = ROOT / ".eval-cache" / f"hctx-{name}-{split}.npz"
        if path.is_file():
            ctx = dict(np.load(path))
        else:
            for d, f in feats.items():
                t = [(h + "\n" if h else "") + texts[d][s:e] for h, (s, e) in zip(heads[d], f.spans)]
                ctx[d] = encoder().encode_texts(t)
            np.savez(path, **ctx)
        n_head = sum(bool(h) for d in heads for h in heads[d]); n_all = sum(len(heads[d]) for d in heads)
        print(f"{name}-{split}: {n_head}/{n_all} leaves have a heading")
        P = []
        for q, v in zip(queries, qv):
            keys, cos, cc, lh = [], [], [], []
            for d in q["doc_ids"]:
                cos.append(cosine_scores(feats[d].emb, v)); cc.append(ctx[d] @ v); keys += [(d, u) for u in range(feats[d].n)]
                lh += with_headings(d, feats, texts, heads)
            P.append((keys, np.concatenate(cos).astype(np.float64), np.concatenate(cc).astype(np.float64), bm25_scores(q["query"], lh)))
        def run(fn): return ranked(P, feats, queries, fn)
        flat = run(lambda c, s, b: c)
        report(f"{name}-{split} flat", flat)
        base = run(lambda c, s, b: z(c) + z(b))
        report(f"{name}-{split} shipped fusion", base, flat)
        report(f"{name}-{split} heading-cos flat", run(lambda c, s, b: s), flat)
        report(f"{name}-{split} z(heading-cos) + z(bm25)", run(lambda c, s, b: z(s) + z(b)), base)
        for u in (0.5, 1.0):
            report(f"{name}-{split} shipped + {u} z(heading-cos)", run(lambda c, s, b: z(c) + z(b) + u * z(s)), base)
