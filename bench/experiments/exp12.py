"""Section context in the dense score: z(cos leaf) + w z(BM25 leaf+heading) + u z(cos of its paragraph's mean vector)."""
import sys
from common import *
from sproutrag.search.tree_search import cosine_scores
from sproutrag.search.lexical import bm25_scores
from sproutrag.ingest.chunking import _HARD_BREAK
def para_ids(text, spans):
    starts = [0] + [m.end() for m in _HARD_BREAK.finditer(text)]
    import bisect
    return np.array([bisect.bisect_right(starts, int(s)) - 1 for s, _ in spans])
for name in sys.argv[1].split(","):
    for split in sys.argv[2].split(","):
        feats, queries, qv, texts = load(name, split)
        sec = {}
        for d, f in feats.items():
            pid = para_ids(texts[d], f.spans)
            M = np.zeros((pid.max() + 1, f.emb.shape[1])); np.add.at(M, pid, f.emb)
            M /= np.maximum(np.linalg.norm(M, axis=1, keepdims=True), 1e-9)
            sec[d] = M[pid]
        heads = leaf_headings(feats, texts)
        P = []
        for q, v in zip(queries, qv):
            keys, cos, cs, lh = [], [], [], []
            for d in q["doc_ids"]:
                cos.append(cosine_scores(feats[d].emb, v)); cs.append(sec[d] @ v); keys += [(d, u) for u in range(feats[d].n)]
                lh += with_headings(d, feats, texts, heads)
            P.append((keys, np.concatenate(cos).astype(np.float64), np.concatenate(cs), bm25_scores(q["query"], lh)))
        def run(fn): return ranked(P, feats, queries, fn)
        flat = run(lambda c, s, b: c)
        report(f"{name}-{split} flat", flat)
        base = run(lambda c, s, b: z(c) + z(b))
        report(f"{name}-{split} shipped fusion", base, flat)
        for u in (0.25, 0.5, 1.0):
            report(f"{name}-{split} + sec {u}", run(lambda c, s, b: z(c) + z(b) + u * z(s)), base)
        for u in (0.25, 0.5):
            report(f"{name}-{split} dense only + sec {u}", run(lambda c, s, b: z(c) + u * z(s)), flat)
