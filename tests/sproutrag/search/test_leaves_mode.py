"""Leaves mode through the Retriever: tree mode's own fused score over the documents tree
mode searches, no tree (a deterministic fake encoder, no model)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.retriever import QueryError, Retriever
from sproutrag.search.tree_search import leaves_mode
from tests.helpers import TOY_DIM as DIM
from tests.helpers import toy_document, toy_encoder, toy_store

WORDS = "notice period payment term party law breach cure days written".split()


@pytest.fixture
def retriever(tmp_path) -> Retriever:
    store = toy_store(tmp_path / "db")
    docs = [toy_document(f"d{i:02d}", " ".join(WORDS[(i + j) % 10] for j in range(4 + i % 5)),
                  seed=i) for i in range(24)]
    docs.append(toy_document("d24", "cure", seed=24))  # a name of its own, one leaf long
    store.write(docs, "fp")
    learned = SearchParams(threshold=-1.0, lexical_weight=0.75, size_penalty=2.0,
                           seed_leaves=True)
    encoder = toy_encoder(TrainedWeights(np.zeros((1, 1), np.float32), learned))
    return Retriever(store.uri, encoder=encoder)


def _reference(vectors: dict[str, np.ndarray], q: np.ndarray, k: int, params: SearchParams,
               bm25: dict[str, np.ndarray] | None, fill: bool = True,
               among: list[str] | None = None, links: tuple | None = None
               ) -> list[tuple[str, int]]:
    """Leaves mode by brute force, written apart from the library: every leaf's cosine,
    with BM25S each document's leaf BM25 scores; z-scores over all the leaves (or those of
    the documents AMONG), fused as z(cos) + w z(BM25); with LINKS (names, unit_text,
    query, weight, lead) the best leaf's document leads and every other document whose
    name (held by no other document) is in the query's or the best leaf's words gains the
    weight, and the leader gains LEAD when it links to any (NAMES: None where another
    document of the corpus has the name);
    leaves below the threshold (or the margin) after the others (with FILL) or dropped;
    ranked best first, ties to the smaller (doc_id, leaf)."""
    rows: list[list] = []
    for d, vecs in vectors.items():
        for u, v in enumerate(vecs):
            cos = float(np.dot(v, q) / (np.linalg.norm(v) * np.linalg.norm(q)))
            rows.append([d, u, cos, float(bm25[d][u]) if bm25 else 0.0])

    def z(col: int) -> list[float]:
        xs = np.array([r[col] for r in rows], dtype=np.float64)
        stats = np.array([r[col] for r in rows if among is None or r[0] in among])
        sd = stats.std() if stats.std() > 1e-9 else 1.0
        return list((xs - stats.mean()) / sd)
    w = params.lexical_weight
    scores = ([a + w * b for a, b in zip(z(2), z(3))] if bm25 and w > 0
              else [r[2] for r in rows])
    if links is not None:
        names, unit_text, query, weight, lead = links
        _, leader, best = max(zip(scores, (r[0] for r in rows), (r[1] for r in rows)))

        def words(text):
            return " " + " ".join(re.findall(r"\w+", text.lower())) + " "

        linked = {d for d, name in names.items()
                  if name and d != leader and list(names.values()).count(name) == 1
                  and (f" {name} " in words(query)
                       or f" {name} " in words(unit_text(leader, best)))}
        gain = {**{d: weight for d in linked}, **({leader: lead} if linked else {})}
        scores = [x + gain.get(r[0], 0.0) for x, r in zip(scores, rows)]
    every = [(-s, r[0], r[1], r[2]) for s, r in zip(scores, rows)]
    kept = [x for x in every if x[3] >= params.threshold]
    if params.margin is not None and kept:
        best = max(c for *_, c in kept)
        kept = [x for x in kept if x[3] >= best - params.margin]
    ranked = sorted(kept) + (sorted(set(every) - set(kept)) if fill else [])
    return [(d, u) for _, d, u, _ in ranked[:k]]


def _expected(r: Retriever, q: np.ndarray, query: str, k: int, doc_ids=None):
    """The reference over the documents tree mode would search."""
    from sproutrag.search.lexical import bm25_leaves

    docs = r.choose_documents(q, doc_ids, k=k)
    trees = {d: r.tree(d, t) for d, t in r.documents.tree_ids(docs).items()}
    terms = {d: r.leaf_terms(d, t) for d, t in r.documents.tree_ids(docs).items()}
    among = None  # a corpus-wide query: the statistics of the leading documents
    if doc_ids is None and r.anchor_leaves:
        among, held = [], 0
        for d in docs:
            if held < r.anchor_leaves:
                among.append(d)
                held += trees[d].tree.n
    collection = None if among is None else [terms[d] for d in among]
    bm25 = dict(zip(trees, bm25_leaves(query, list(terms.values()), collection=collection)))
    vectors = {d: st.tree.vectors[: st.tree.n] for d, st in trees.items()}
    links = None
    if doc_ids is None and r.link_weight:  # names: the toy documents' one line of words
        every = {d: r.document_text(d, t) for d, t in r._current().items()}
        named = {d: " ".join(t.lower().split()) if len(t) >= 4 else None
                 for d, t in every.items()}
        held = list(named.values())  # a name another document of the corpus has: none
        names = {d: named[d] if held.count(named[d]) == 1 else None for d in trees}

        def unit_text(d, u):  # the leaf's text: names are looked for in the best leaf
            start, end = trees[d].spans[u]
            return every[d][int(start):int(end)]
        links = (names, unit_text, query, r.link_weight, r.leader_weight)
    ranked = _reference(vectors, q, k, r.params, bm25, among=among, links=links)
    return [(d, f"{d}:{u}", [tuple(trees[d].spans[u])]) for d, u in ranked]


def test_a_hand_worked_case():
    """Two documents of 2-d leaves, query (1, 0): cosines d1 [1, 0], d2 [0.6, -0.6]."""
    vectors = {"d1": np.array([[2, 0], [0, 3]], np.float32),
               "d2": np.array([[0.6, 0.8], [-0.6, 0.8]], np.float32)}
    q = np.array([1, 0], np.float32)

    def ranked(fill=False, **kw):
        params = SearchParams(lexical_weight=0.0, **kw)
        return [(d, u) for d, u, _ in leaves_mode(vectors, q, k=4, params=params, fill=fill)]

    assert ranked(threshold=-1.0) == [("d1", 0), ("d2", 0), ("d1", 1), ("d2", 1)]
    assert ranked(threshold=0.5) == [("d1", 0), ("d2", 0)]
    assert ranked(threshold=-1.0, margin=0.5) == [("d1", 0), ("d2", 0)]
    assert ranked(threshold=-1.0, margin=0.3) == [("d1", 0)]
    # filled: what the cutoffs drop follows, in the same order, up to k
    assert ranked(True, threshold=-1.0, margin=0.3) == [("d1", 0), ("d2", 0), ("d1", 1),
                                                        ("d2", 1)]
    assert ranked(True, threshold=0.9) == ranked(threshold=-1.0)
    top = leaves_mode(vectors, q, k=2, params=SearchParams(threshold=-1.0, lexical_weight=0.0))
    assert [(d, u, round(s, 6)) for d, u, s in top] == [("d1", 0, 1.0), ("d2", 0, 0.6)]
    for case in ({"threshold": -1.0}, {"threshold": 0.5}, {"threshold": -1.0, "margin": 0.3}):
        params = SearchParams(lexical_weight=0.0, **case)
        assert ranked(**case) == _reference(vectors, q, 4, params, None, fill=False)
        assert ranked(True, **case) == _reference(vectors, q, 4, params, None)


def test_the_reference_with_words_matches_on_random_documents():
    from sproutrag.search.lexical import LeafTerms, bm25_leaves

    rng = np.random.default_rng(7)
    for trial in range(20):
        texts = {f"d{i}": [" ".join(rng.choice(WORDS, rng.integers(1, 6)))
                           for _ in range(rng.integers(1, 6))] for i in range(4)}
        vectors = {d: rng.normal(size=(len(t), DIM)).astype(np.float32)
                   for d, t in texts.items()}
        terms = {d: LeafTerms.of(t) for d, t in texts.items()}
        q = rng.normal(size=DIM).astype(np.float32)
        query = " ".join(rng.choice(WORDS, 2))
        params = SearchParams(threshold=float(rng.uniform(-1, 0.2)), lexical_weight=0.75,
                              margin=None if trial % 2 else 0.6)
        bm25 = dict(zip(texts, bm25_leaves(query, [terms[d] for d in texts])))
        for fill in (False, True):
            got = [(d, u) for d, u, _ in leaves_mode(vectors, q, k=5, params=params,
                                                     query=query, lexical=terms, fill=fill)]
            assert got == _reference(vectors, q, 5, params, bm25, fill), (trial, fill)


@pytest.mark.parametrize("anchor_leaves", [0, 12, 32])  # every document / the leading ones
@pytest.mark.parametrize("doc_ids", [None, ["d03", "d07", "d11"]])
@pytest.mark.parametrize(("link_weight", "leader_weight"), [(0.0, 0.0), (1.0, 0.0), (3.0, 2.0)])
def test_leaves_mode_is_tree_modes_score_over_the_same_documents(retriever, doc_ids,
                                                                 anchor_leaves, link_weight,
                                                                 leader_weight):
    retriever.anchor_leaves, retriever.link_weight = anchor_leaves, link_weight
    retriever.leader_weight = leader_weight
    retriever.fetch_named = 0  # the searched documents are the first stage's (the reference's)
    rng = np.random.default_rng(0)
    followed = 0  # rankings the names changed
    for query in ("notice period", "payment breach", "written cure days",
                  "law breach cure days",  # the name of d05 and d15: links neither
                  "quarterly report"):  # no word of the corpus: the best leaf is d03's
        # word "cure" by its vector alone, and "cure" is d24's name
        q = rng.normal(size=DIM).astype(np.float32)
        retriever.first.n_docs = 8
        if query == "quarterly report":  # every document searched; d03's "cure" leads
            retriever.first.n_docs = 25
            tid = retriever.documents.tree_ids(["d03"])["d03"]
            q = retriever.tree("d03", tid).tree.vectors[4].copy()
        for k in (1, 5, 12):
            hits = retriever.search_vector(query, q, k=k, doc_ids=doc_ids, mode="leaves")
            got = [(h.doc_id, h.node_id, [tuple(s) for s in h.spans]) for h in hits]
            assert got == _expected(retriever, q, query, k, doc_ids)
            assert all(len(h.spans) == 1 for h in hits)  # leaves only
            assert len(hits) == k if doc_ids is None else len(hits) <= k
            if doc_ids:
                assert {h.doc_id for h in hits} <= set(doc_ids)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            if doc_ids is None and link_weight:
                retriever.link_weight = 0.0
                followed += got != _expected(retriever, q, query, k, doc_ids)
                retriever.link_weight = link_weight
    assert followed > 0 if doc_ids is None and link_weight else followed == 0


def test_leaves_mode_with_internal_nodes_priced_out_equals_tree_mode(retriever):
    """With the size penalty prohibitive, tree mode returns exactly leaves mode's units."""
    r = Retriever(retriever.store.uri, encoder=retriever.encoder,
                  overrides={"size_penalty": 1e6})
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.normal(size=DIM).astype(np.float32)
        tree = r.search_vector("notice period", q, k=6)
        leaves = r.search_vector("notice period", q, k=6, mode="leaves")
        assert [(h.node_id, h.spans) for h in tree] == [(h.node_id, h.spans) for h in leaves]


def test_unknown_mode_names_the_modes(retriever):
    with pytest.raises(QueryError, match="tree, leaves, flat"):
        retriever.search_vector("q", np.ones(DIM, np.float32), k=3, mode="nodes")


def test_k_is_filled_when_no_leaf_passes_the_threshold(tmp_path):
    """30 one-unit documents, a query every leaf points away from (cosine < 0, below the
    learned threshold): tree and leaves modes return the 30 units flat mode returns, in
    order; an explicit threshold is a cutoff (none passes it)."""
    store = toy_store(tmp_path / "db")
    rng = np.random.default_rng(3)
    q = rng.normal(size=DIM).astype(np.float32)
    docs = []
    for i in range(30):
        doc = toy_document(f"fruit{i:02d}", "apples", seed=i)
        v = doc.tree.vectors
        v[:] = -np.abs(rng.normal(size=v.shape)) * np.sign(q)  # every cosine negative
        docs.append(doc)
    store.write(docs, "fp")
    learned = SearchParams(threshold=0.0, margin=0.25)
    encoder = toy_encoder(TrainedWeights(np.zeros((1, 1), np.float32), learned))
    r = Retriever(store.uri, encoder=encoder)
    flat = r.search_vector("quantum chromodynamics", q, k=50, mode="flat")
    assert len(flat) == 30
    for mode in ("tree", "leaves"):
        hits = r.search_vector("quantum chromodynamics", q, k=50, mode=mode)
        assert sum(len(h.spans) for h in hits) == 30, mode
        assert [h.doc_id for h in hits] == [h.doc_id for h in flat]  # same order: cosine
    strict = Retriever(store.uri, encoder=encoder, threshold=0.0)
    assert not strict.fills_k and strict.search_vector("q", q, k=50, mode="leaves") == []
