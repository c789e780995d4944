"""Ad-hoc experiment helpers over cached features (not shipped)."""
from __future__ import annotations
import json, os, sys, glob, hashlib
from pathlib import Path
import numpy as np
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from sproutrag.learn.features import read_jsonl, usable_queries, load_features, featurize_corpus
from sproutrag.learn.evaluation import query_scores
from sproutrag.learn.metrics import summarize, average_over_k, per_query_ie, paired_difference

SETS = {
    "cnli": ("../shared/data/contractnli", "contractnli"),
    "hotpot": ("../shared/data/hotpotqa", "hotpotqa"),
    "long": ("out/data/hotpot-long", "long"),
    "clong": ("out/data/contractnli-long", "clong"),
}
KS = (1, 3, 5)

_enc = None
def encoder():
    global _enc
    if _enc is None:
        from sproutrag.encoder.encoder import Encoder
        from sproutrag.encoder.weights import load_default_weights
        _enc = Encoder(weights=load_default_weights(None))
    return _enc

def load(name, split):
    src, _ = SETS[name]
    docs = read_jsonl(ROOT / src / f"{split}.docs.jsonl")
    qs = read_jsonl(ROOT / src / f"{split}.queries.jsonl")
    enc = encoder()
    ch = {"sentences_per_chunk": 2, "max_chunk_chars": 1000}
    if os.environ.get("PARA"): ch["within_paragraphs"] = True
    feats = featurize_corpus(docs, enc, chunking=ch,
                             cache_dir=ROOT / ".eval-cache")
    queries = usable_queries(qs, feats)
    key = hashlib.sha256(json.dumps([q["query"] for q in queries]).encode()).hexdigest()[:12]
    qpath = ROOT / ".eval-cache" / f"q-{name}-{split}-{key}.npy"
    if qpath.is_file():
        qv = np.load(qpath)
    else:
        qv = enc.encode_texts([q["query"] for q in queries]); np.save(qpath, qv)
    texts = {str(d["doc_id"]): d["text"] for d in docs}
    return feats, queries, qv, texts

def units_of(feats, d, leaves):
    sp = feats[d].spans
    return [(d, int(sp[u, 0]), int(sp[u, 1])) for u in leaves]

def score(runs, feats, queries):
    """runs: {k: [units per query]} -> (avg dict, per-query ie)"""
    sc = query_scores(runs, feats, queries)
    per_k = [summarize(sc[k], k) for k in sorted(sc)]
    return average_over_k(per_k), per_query_ie([sc[k] for k in sorted(sc)]), per_k

def run_ranker(rank_fn, feats, queries, qv):
    """rank_fn(q, qvec) -> ranked list of units (doc,s,e); cut at each k."""
    runs = {k: [] for k in KS}
    for q, v in zip(queries, qv):
        r = rank_fn(q, v)
        for k in KS:
            runs[k].append(r[:k] if callable(getattr(r, '__getitem__', None)) else r(k))
    return runs

def run_budget(fn, feats, queries, qv):
    """fn(q, qvec, k) -> units for budget k"""
    runs = {k: [] for k in KS}
    for q, v in zip(queries, qv):
        for k in KS:
            runs[k].append(fn(q, v, k))
    return runs

def report(name, res, ref=None):
    avg, pq, per_k = res
    s = f"{name:55s} IE {100*avg['ie']:5.1f} [{' '.join(f'{100*p.ie:5.1f}' for p in per_k)}] P {100*avg['precision']:5.1f} R {100*avg['recall']:5.1f} cIE {100*avg['char_ie']:5.1f}"
    if ref is not None:
        m, se = paired_difference(pq, ref[1])
        s += f"  d {100*m:+5.1f} +/- {100*se:4.1f}  x{avg['ie']/max(ref[0]['ie'],1e-9):.3f}"
    print(s, flush=True)

def z(x):
    """Standardised scores: the fusion's z."""
    return (x - x.mean()) / max(x.std(), 1e-9)

def leaf_headings(feats, texts):
    """{doc: section heading of each leaf} (`chunking.section_headings`)."""
    from sproutrag.ingest.chunking import section_headings
    return {d: section_headings(texts[d], [tuple(x) for x in feats[d].spans.tolist()]) for d in feats}

def with_headings(d, feats, texts, heads):
    """Each leaf's text counted with its heading, as the shipped lexical scores do."""
    return [h + "\n" + texts[d][s:e] for h, (s, e) in zip(heads[d], feats[d].spans)]

def ranked(P, feats, queries, fn):
    """P: per query (keys, *score arrays over its leaves); the top 5 leaves by
    fn(*arrays), cut at each k, scored -> (avg, per-query ie, per k)."""
    runs = {k: [] for k in KS}
    for keys, *arrays in P:
        o = np.argsort(-fn(*arrays), kind="stable")[:5]
        r = [(keys[i][0], *map(int, feats[keys[i][0]].spans[keys[i][1]])) for i in o]
        for k in KS: runs[k].append(r[:k])
    return score(runs, feats, queries)

import sproutrag.search.lexical as lex

plain_tokenize = lex.words  # BM25's analyzer before stop 17: lower case, stopwords out, no stems

if os.environ.get("STOP16_LEXICAL"):  # experiments 1-14 as they were run: no stems, heading x1
    lex.tokenize, lex.CONTEXT_WEIGHT = plain_tokenize, 1

def each_split(argv=None):
    """For `script.py SETS SPLITS` (e.g. cnli,hotpot train,dev): (name, split, feats,
    queries, qvecs, texts) of each set and split, in order."""
    argv = argv or sys.argv
    for name in argv[1].split(","):
        for split in argv[2].split(","):
            yield (name, split, *load(name, split))

def query_leaves(feats, queries, qv, texts, heads):
    """Per query, over its documents' leaves: (query, keys, cosines, leaf texts, headings)."""
    from sproutrag.search.tree_search import cosine_scores
    out = []
    for q, v in zip(queries, qv):
        keys, cos, lt, lh = [], [], [], []
        for d in q["doc_ids"]:
            cos.append(cosine_scores(feats[d].emb, v)); keys += [(d, u) for u in range(feats[d].n)]
            lt += [texts[d][s:e] for s, e in feats[d].spans]; lh += heads[d]
        out.append((q, keys, np.concatenate(cos).astype(np.float64), lt, lh))
    return out
