"""Lexical context: a leaf's BM25 text = its paragraph's first line + the leaf."""
import re, sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
from sproutrag.ingest.chunking import section_headings as para_heads
BL = re.compile(r"\n[^\S\n]*\n\s*")
def para_heads_old(text, spans):
    starts = [0] + [m.end() for m in BL.finditer(text)]
    out = []
    for s, e in spans:
        p = max(x for x in starts if x <= s)
        line_end = text.find("\n", p)
        line_end = len(text) if line_end == -1 else line_end
        head = text[p:line_end]
        out.append("" if p >= s - 1 or len(head) > 120 else head)
    return out
for name in sys.argv[1].split(","):
    for split in ("train", "dev"):
        feats, queries, qv, texts = load(name, split)
        heads = {d: para_heads(texts[d], [tuple(x) for x in feats[d].spans.tolist()]) for d in feats}
        P = []
        for q, v in zip(queries, qv):
            keys, cos, lt, lh = [], [], [], []
            for d in q["doc_ids"]:
                cos.append(cosine_scores(feats[d].emb, v)); keys += [(d, u) for u in range(feats[d].n)]
                lt += [texts[d][s:e] for s, e in feats[d].spans]
                lh += with_headings(d, feats, texts, heads)
            P.append((keys, np.concatenate(cos).astype(np.float64), bm25_scores(q["query"], lt), bm25_scores(q["query"], lh)))
        def run(fn): return ranked(P, feats, queries, fn)
        flat = run(lambda c, b, bh: c)
        report(f"{name}-{split} flat", flat)
        base = run(lambda c, b, bh: z(c) + 0.75 * z(b))
        report(f"{name}-{split} fused", base, flat)
        for w in (0.5, 0.75, 1.0):
            report(f"{name}-{split} fused w/ heading ctx {w}", run(lambda c, b, bh: z(c) + w * z(bh)), flat)
        for w in (0.25, 0.5):
            report(f"{name}-{split} fused + ctx mix {w}", run(lambda c, b, bh: z(c) + 0.75 * z(b) + w * z(bh)), flat)
