from __future__ import annotations

import numpy as np

from sproutrag.learn.calibration import learn_search
from sproutrag.learn.features import DocFeatures, attach_terms
from sproutrag.learn.variants import Variant

TEXT = "alpha clause here. beta clause here. gamma clause here. delta clause here."
SPANS = np.array([[0, 18], [19, 36], [37, 55], [56, 74]])


def _set(n_docs: int):
    """Documents whose cosine points at leaf 0 while the gold (named in the query) is
    another leaf: only lexical evidence finds it."""
    feats, docs, queries, qvecs = {}, [], [], []
    rng = np.random.default_rng(0)
    for k in range(n_docs):
        d = f"d{k}"
        emb = np.eye(4, dtype=np.float32)
        i, j = np.array([0, 1, 2], np.int32), np.array([1, 2, 3], np.int32)
        feats[d] = DocFeatures(d, SPANS, emb, i, j, rng.uniform(0.1, 1, (3, 1)).astype("f4"))
        docs.append({"doc_id": d, "text": TEXT})
        gold = 1 + k % 3
        word = ["beta", "gamma", "delta"][gold - 1]
        queries.append({"qid": d, "query": f"{word} clause", "doc_ids": [d], "set": 0,
                        "gold": [{"doc_id": d, "start": int(SPANS[gold, 0]),
                                  "end": int(SPANS[gold, 1])}]})
        qvecs.append(np.array([1.0, 0.2, 0.2, 0.2], np.float32))
    attach_terms(feats, docs)
    return feats, queries, np.stack(qvecs)


def test_learns_the_lexical_weight_when_only_words_find_the_gold():
    feats, queries, qvecs = _set(6)
    params, rows = learn_search(feats, queries, qvecs, Variant("t", mix=np.ones((1, 1))),
                                lexical_grid=(0.0, 1.0, 2.0), size_grid=(0.0, 4.0),
                                seed_grid=(False, True), delta_grid=(0.0, 0.5),
                                log=lambda *a: None)
    assert params.lexical_weight == 1.0  # the least weight that reaches the best (1-SE rule)
    assert params.threshold == 0.0
    assert len(rows) == 3 * 2 * 2 + 1
    by = {(r["lexical_weight"], r["size_penalty"], r["seed_leaves"]): r["ie"] for r in rows}
    assert by[(1.0, 4.0, True)] > by[(0.0, 4.0, True)]
