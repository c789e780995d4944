"""Leaves held in memory, ranked without a tree: leaves mode and the evaluation's flat mode.

Pure functions over arrays (no model, no database). `search_leaves` ranks the leaves of
several documents by cosine, optionally fused with BM25 (`sproutrag.search.node_scores`),
with a document prior, diversity across documents and tree mode's cutoffs; `leaves_mode`
is tree mode's own fused score and cutoffs with no tree, the baseline that measures what
the tree adds (`sproutrag.search.tree_search`: tree mode). `Retriever` runs flat mode as a
LanceDB vector search over the stored leaves (`sproutrag.search.flat_search`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sproutrag.params import SearchParams
from sproutrag.search.hierarchy import best_first, document_scores
from sproutrag.search.lexical import LeafTerms, bm25_each
from sproutrag.search.links import Links
from sproutrag.search.node_scores import anchor_collection, cosine_scores, fuse


def search_leaves(
    leaf_vectors: dict[str, np.ndarray],
    query_vec: np.ndarray,
    *,
    k: int,
    threshold: float | None = None,
    margin: float | None = None,
    query: str = "",
    lexical: dict[str, LeafTerms] | None = None,
    lexical_weight: float = 0.0,
    fill: bool = False,
    doc_prior: dict[str, float] | None = None,
    diversity: float = 0.0,
    anchor: Sequence[str] | None = None,
    links: Links | None = None,
    doc_vectors: Mapping[str, np.ndarray] | None = None,
    doc_questions: Mapping[str, str] | None = None,
) -> list[tuple[str, int, float]]:
    """Flat mode, whole: the k best leaves (doc_id, leaf, rank score) by cosine.

    Only leaves whose cosine reaches `threshold`, and with a `margin` only those within
    margin of the best such leaf; with `lexical_weight` w > 0 (and each document's
    `LeafTerms`) leaves are ranked by z(cosine) + w z(BM25). DOC_PRIOR adds a score per
    document to its leaves; DIVERSITY takes lambda per unit already taken from a leaf's
    document (`best_first`). Ties go to the smaller (doc_id, leaf). FILL: the leaves the
    cutoffs drop follow, in the same order, up to k. ANCHOR: the documents BM25's
    collection and the z-scores come from (`node_scores`; default all). LINKS: the
    documents named by the query or the leading document gain its weight (`links`).
    DOC_VECTORS: vectors that replace QUERY_VEC for some documents' cosines (rule 62);
    DOC_QUESTIONS: texts that replace QUERY for their BM25 (rule 80).
    """
    ids, own = list(leaf_vectors), doc_vectors or {}
    cos = {d: cosine_scores(leaf_vectors[d], own.get(d, query_vec)) for d in ids}
    rank = _leaf_ranks(ids, cos, query=query, lexical=lexical, lexical_weight=lexical_weight,
                       doc_prior=doc_prior, anchor=anchor, links=links,
                       questions=doc_questions)
    every = sorted((-float(rank[d][u]), d, u) for d in ids for u in range(len(cos[d])))
    rows = [r for r in every if threshold is None or cos[r[1]][r[2]] >= threshold]
    if margin is not None and rows:
        best = max(float(cos[d][u]) for _, d, u in rows)
        rows = [r for r in rows if cos[r[1]][r[2]] >= best - margin]
    if diversity > 0:
        rows = _diverse(rows, k, diversity)
    if fill and len(rows) < k:
        kept = set(rows)
        rows += [r for r in every if r not in kept][: k - len(rows)]
    return [(d, u, -score) for score, d, u in rows[:k]]


def _leaf_ranks(
    ids: list[str],
    cos: dict[str, np.ndarray],
    *,
    query: str,
    lexical: dict[str, LeafTerms] | None,
    lexical_weight: float,
    doc_prior: dict[str, float] | None,
    anchor: Sequence[str] | None,
    links: Links | None,
    questions: Mapping[str, str] | None = None,
) -> dict[str, np.ndarray]:
    """The rank score of each leaf of the documents IDS, an array per document: the cosine
    COS, or with LEXICAL_WEIGHT w > 0 z(cosine) + w z(BM25) (`fuse`; the statistics from
    ANCHOR; QUESTIONS: some documents' own texts for BM25, `bm25_each`), plus what LINKS
    give a document, plus its DOC_PRIOR (`search_leaves`)."""
    rank = dict(cos)
    if lexical_weight > 0:
        if lexical is None or any(d not in lexical for d in ids):
            raise ValueError("lexical_weight > 0 needs the LeafTerms of every searched document")
        among, collection = anchor_collection(ids, anchor, lexical)
        lex = bm25_each(query, questions, ids, [lexical[d] for d in ids],
                        collection=collection)
        rank = dict(zip(ids, fuse([cos[d] for d in ids], lex, [len(cos[d]) for d in ids],
                                  lexical_weight, among=among)))
    if links is not None:
        boosts = links.boosts(rank)
        rank = {d: rank[d] + boosts.get(d, 0.0) for d in ids}
    if doc_prior:
        rank = {d: rank[d] + doc_prior.get(d, 0.0) for d in ids}
    return rank


def _diverse(rows: list[tuple[float, str, int]], k: int, diversity: float
             ) -> list[tuple[float, str, int]]:
    """The first K of ROWS (-score, doc_id, leaf) in `best_first` order."""
    taken: dict[str, int] = {}
    out = []
    for d, u, score in best_first([(d, u, -r) for r, d, u in rows], diversity, taken):
        out.append((-score, d, u))
        taken[d] = taken.get(d, 0) + 1
        if len(out) == k:
            break
    return out


def leaves_mode(
    leaf_vectors: dict[str, np.ndarray],
    query_vec: np.ndarray,
    *,
    k: int,
    params: SearchParams,
    query: str = "",
    lexical: dict[str, LeafTerms] | None = None,
    fill: bool = True,
    anchor: Sequence[str] | None = None,
    links: Links | None = None,
    doc_vectors: Mapping[str, np.ndarray] | None = None,
    doc_questions: Mapping[str, str] | None = None,
) -> list[tuple[str, int, float]]:
    """Leaves mode: the k best leaves by tree mode's own score, no tree.

    The leaves of the documents tree mode searches, ranked by the same fused score
    (``z(cosine) + w z(BM25)``, w = ``params.lexical_weight``) with the same cutoffs
    (cosine >= ``params.threshold``, ``params.margin``), the same document prior and
    diversity (``params.doc_weight``, ``params.doc_diversity``), filled to k as tree mode
    is (FILL), with tree mode's per-document vectors and BM25 texts (DOC_VECTORS,
    DOC_QUESTIONS); beam width, size
    penalty, seeds and the ancestors' weight have nothing to act on. Tree mode minus
    leaves mode is the tree's own contribution. Returns (doc_id, leaf, rank score), best
    first.
    """
    prior = None
    if params.doc_weight > 0:
        found = document_scores(leaf_vectors, query_vec, query=query, lexical=lexical,
                                lexical_weight=params.lexical_weight)
        prior = {d: params.doc_weight * v for d, v in found.items()}
    return search_leaves(leaf_vectors, query_vec, k=k, threshold=params.threshold,
                         margin=params.margin, query=query, lexical=lexical,
                         lexical_weight=params.lexical_weight, fill=fill, doc_prior=prior,
                         diversity=params.doc_diversity, anchor=anchor, links=links,
                         doc_vectors=doc_vectors, doc_questions=doc_questions)


__all__ = ["leaves_mode", "search_leaves"]
