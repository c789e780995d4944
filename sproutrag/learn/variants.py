"""Retrieval variants of the evaluation: how relations, trees and search are made.

A `Variant` is one row of the evaluation table (alpha, relations, parent embeddings,
beam, cutoffs, lexical weight, ...). Its retrieval is composed of the library's
functions exactly as the served path does: `build_tree` over the variant's relations,
then `sproutrag.search.tree_search.search_trees` (tree mode, what `Retriever` runs) or
`sproutrag.search.leaf_search.search_leaves` (flat mode) over features held in memory.
A `NameFree` gives the tree and leaves rows the vectors and BM25 texts of rules 62 and 80-82
(the question less its names, for the long documents that open with them), as
`Retriever` scores them in a query with doc_ids. Scoring is in `sproutrag.learn.evaluation`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from sproutrag.learn.features import DocFeatures
from sproutrag.params import SearchParams
from sproutrag.search.leaf_search import leaves_mode, search_leaves
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.name_free import NAME_FREE_LEAVES, own_questions
from sproutrag.search.tree_search import node_scores, search_trees
from sproutrag.storage.rows import StoredTree
from sproutrag.trees.tree import Tree, build_tree


@dataclass(frozen=True)
class Variant:
    """One row of the evaluation table: how relations, trees and search are made."""

    name: str
    mode: str = "tree"  # "tree" | "leaves" | "flat"
    mix: np.ndarray | None = None  # (L, H) aggregation weights; None = uniform
    search: SearchParams = SearchParams()  # flat mode: threshold, margin, lexical_weight
    parent_embedding: str = "mean_of_children"
    relation: str = "attention"  # "attention" | "embedding"
    band: int = 0  # drop pairs with |i - j| <= band (0: keep all)
    notes: str = field(default="", compare=False)


@dataclass(frozen=True)
class NameFree:
    """Rules 62 and 80-82's name-free question in the in-memory search (`own_questions`), as
    `Retriever` scores a query with doc_ids: TEXTS, doc_id -> its leaves' texts; EMBED
    encodes the name-free question; FLOOR, `search.name_free_leaves` (0: off)."""

    texts: dict[str, list[str]]
    spans: dict[str, np.ndarray]
    embed: Callable[[list[str]], np.ndarray]
    floor: int = NAME_FREE_LEAVES

    @classmethod
    def of(cls, feats: dict[str, DocFeatures], docs: Sequence[dict[str, Any]],
           embed: Callable[[list[str]], np.ndarray], floor: int = NAME_FREE_LEAVES
           ) -> NameFree:
        """The leaf texts of FEATS' documents, cut from DOCS' texts by their spans."""
        text = {str(d["doc_id"]): str(d["text"]) for d in docs}
        held = [d for d in feats if d in text]
        return cls({d: [text[d][a:b] for a, b in feats[d].spans.tolist()] for d in held},
                   {d: feats[d].spans for d in held}, embed, floor)

    def own(self, query: str, qvec: np.ndarray, trees: dict[str, Tree],
            doc_ids: Sequence[str]) -> tuple[dict[str, np.ndarray] | None,
                                             dict[str, str] | None]:
        """(doc_id -> the blended vector, doc_id -> the BM25 text) of DOC_IDS' documents
        that open with the question's names ((None, None): none, or off)."""
        if self.floor <= 0 or not query:
            return None, None
        stored = {d: StoredTree(d, trees[d], self.spans[d], self.texts[d]) for d in doc_ids}
        vectors, questions = own_questions(query, qvec, stored, self.embed, self.floor)
        return vectors or None, questions


_SEARCH_FIELDS = frozenset(f.name for f in fields(SearchParams))


def with_name(v: Variant, name: str, **changes: Any) -> Variant:
    """V renamed, with CHANGES to its own fields or to its search's (by field name)."""
    search = {k: changes.pop(k) for k in list(changes) if k in _SEARCH_FIELDS}
    return replace(v, name=name, search=replace(v.search, **search), **changes)


def relations(f: DocFeatures, v: Variant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, m) of one document for a variant."""
    i, j = f.pair_i, f.pair_j
    if v.relation == "embedding":
        m = (1.0 + np.einsum("ed,ed->e", f.emb[i], f.emb[j])) / 2
    elif v.relation == "attention":
        w = (np.full(f.heads.shape[1], 1.0 / max(f.heads.shape[1], 1)) if v.mix is None
             else np.asarray(v.mix, np.float64).ravel())
        m = f.heads.astype(np.float64) @ w if len(i) else np.zeros(0)
    else:
        raise ValueError(f"relation must be 'attention' or 'embedding', got {v.relation!r}")
    keep = np.abs(j.astype(np.int64) - i) > v.band
    return i[keep], j[keep], np.maximum(m[keep], 0).astype(np.float32)


def variant_trees(feats: dict[str, DocFeatures], v: Variant) -> dict[str, Tree]:
    """One tree per document, with the variant's relations and parent embeddings."""
    return {
        d: build_tree(f.emb, *relations(f, v), parent_embedding=v.parent_embedding)
        for d, f in feats.items()
    }


#: Rows of the paper's ablation table (Table 3) plus this project's search ablations.
PAPER_MODES = ("flat", "tree", "untrained", "embedding", "b1", "b3", "b10")
SEARCH_MODES = ("leaves", "flat_lexical", "tree_paper", "tree_cosine", "tree_nocalib",
                "tree_noseed", "untrained_search")
EXTRA_MODES = ("flat_delta", "flat_cutoffs", "nomargin", "size_weighted",
               "untrained_size_weighted", "noband", "b5")


#: The keys `make_variants` knows (`sproutrag evaluate --modes` checks them before the
#: model loads).
VARIANT_NAMES = ("flat", "leaves", "flat_lexical", "flat_delta", "flat_cutoffs",
                 "nomargin", "tree", "tree_paper", "tree_cosine", "tree_nocalib",
                 "tree_noseed", "untrained", "untrained_search", "untrained_size_weighted",
                 "embedding", "b1", "b3", "b5", "b10", "size_weighted", "noband")


def make_variants(
    modes: Sequence[str], weights: Any, parent_embedding: str
) -> list[Variant]:
    """Variants by key; 'tree' is the shipped method: `weights`' alpha and every learned
    search parameter (delta, margin, lexical weight, size penalty, seeds), b = 5."""
    learned = weights.search
    delta, margin, w = learned.threshold, learned.margin, learned.lexical_weight
    tree = Variant("tree (trained)", mix=weights.mix(), search=learned,
                   parent_embedding=parent_embedding,
                   notes=f"weights {weights.source} ({weights.fingerprint()})")
    paper = {"lexical_weight": 0.0, "size_penalty": 0.0, "seed_leaves": False}
    other = "size_weighted" if parent_embedding != "size_weighted" else "mean_of_children"
    flat = Variant("flat (leaf only)", mode="flat")
    table = {
        "flat": flat,
        "leaves": Variant("leaves (tree's fused score and cutoffs, no tree)", mode="leaves",
                          search=learned),
        "flat_lexical": with_name(flat, f"flat, cosine + {w:g} x BM25 (leaves)",
                                  lexical_weight=w),
        "flat_delta": with_name(flat, f"flat, scores >= delta {delta:g}", threshold=delta),
        "flat_cutoffs": with_name(flat, f"flat, the tree's cutoffs (delta {delta:g}, margin "
                                  f"{margin})", threshold=delta, margin=margin),
        "nomargin": with_name(tree, "tree (trained), no margin", margin=None),
        "tree": tree,
        "tree_paper": with_name(tree, "tree, the paper's search (cosine, no seeds or "
                                "calibration)", **paper),
        "tree_cosine": with_name(tree, "tree (trained), cosine only (no BM25)",
                                 lexical_weight=0.0),
        "tree_nocalib": with_name(tree, "tree (trained), no size calibration",
                                  size_penalty=0.0),
        "tree_noseed": with_name(tree, "tree (trained), no leaf seeds", seed_leaves=False),
        "untrained": Variant("tree (not trained: uniform, paper's search, delta 0)",
                             parent_embedding=parent_embedding),
        "untrained_search": with_name(tree, "tree, uniform alpha, trained search", mix=None),
        "untrained_size_weighted": Variant(f"tree (not trained), {other} parents",
                                           parent_embedding=other),
        "embedding": with_name(tree, "tree, embedding-similarity relations",
                               relation="embedding"),
        "b1": with_name(tree, "tree (trained), greedy b = 1", beam_width=1),
        "b3": with_name(tree, "tree (trained), b = 3", beam_width=3),
        "b5": with_name(tree, "tree (trained), b = 5", beam_width=5),
        "b10": with_name(tree, "tree (trained), b = 10", beam_width=10),
        "size_weighted": with_name(tree, f"tree (trained), {other} parents",
                                   parent_embedding=other),
        "noband": with_name(tree, "tree (trained), without the |i-j|<=1 band", band=1),
    }
    unknown = [m for m in modes if m not in table]
    if unknown:
        raise ValueError(f"unknown modes {unknown}; choose from {sorted(table)}")
    return [table[m] for m in modes]


def _terms(feats: dict[str, DocFeatures], doc_ids: Sequence[str]) -> dict[str, LeafTerms]:
    missing = [d for d in doc_ids if feats[d].terms is None]
    if missing:
        raise ValueError(f"no leaf terms for {missing[:3]}: call attach_terms(feats, docs)")
    return {d: feats[d].terms for d in doc_ids}


def retrieve_tree(
    trees: dict[str, Tree], feats: dict[str, DocFeatures], qvec: np.ndarray,
    doc_ids: Sequence[str], *, k: int, params: SearchParams, query: str = "",
    stats: dict | None = None, scores: dict | None = None,
    doc_vectors: dict[str, np.ndarray] | None = None,
    doc_questions: dict[str, str] | None = None,
) -> list[tuple[str, int, int]]:
    """Ranked evidence units: `search_trees`, exactly what `Retriever` runs in tree mode.

    `stats` (optional) counts hits and internal-node hits; `scores` may hold the query's
    node scores (`query_node_scores`) to share them between budgets; DOC_VECTORS and
    DOC_QUESTIONS: some documents' vectors and BM25 texts in place of QVEC and QUERY
    (`NameFree.own`)."""
    lexical = _terms(feats, doc_ids) if params.lexical_weight > 0 else None
    chosen = search_trees({d: trees[d] for d in doc_ids}, qvec, k=k, params=params,
                          query=query, lexical=lexical, scores=scores,
                          doc_vectors=doc_vectors, doc_questions=doc_questions)
    if stats is not None:
        stats["hits"] = stats.get("hits", 0) + len(chosen)
        stats["internal_hits"] = stats.get("internal_hits", 0) + sum(
            len(c.leaves) > 1 for c in chosen)
    return [
        (c.doc_id, int(feats[c.doc_id].spans[u, 0]), int(feats[c.doc_id].spans[u, 1]))
        for c in chosen for u in c.leaves
    ]


def query_node_scores(
    trees: dict[str, Tree], feats: dict[str, DocFeatures], q: dict[str, Any], qvec: np.ndarray,
    lexical_weight: float, doc_vectors: dict[str, np.ndarray] | None = None,
    doc_questions: dict[str, str] | None = None,
) -> dict:
    """`node_scores` of one query over its documents' trees, for a lexical weight
    (DOC_VECTORS, DOC_QUESTIONS: see `retrieve_tree`)."""
    docs = q["doc_ids"]
    return node_scores({d: trees[d] for d in docs}, qvec, query=q.get("query", ""),
                       lexical=_terms(feats, docs) if lexical_weight > 0 else None,
                       lexical_weight=lexical_weight, doc_vectors=doc_vectors,
                       doc_questions=doc_questions)


def retrieve_flat(
    feats: dict[str, DocFeatures], qvec: np.ndarray, doc_ids: Sequence[str], *, k: int,
    delta: float | None = None, margin: float | None = None, lexical_weight: float = 0.0,
    query: str = "",
) -> list[tuple[str, int, int]]:
    """Ranked evidence units of flat mode: `search_leaves` over `doc_ids`' leaves (top-k
    by cosine, optionally only cosine >= delta and within `margin` of the best leaf;
    with `lexical_weight` ranked by z(cosine) + w z(BM25))."""
    chosen = search_leaves({d: feats[d].emb for d in doc_ids}, qvec, k=k, threshold=delta,
                           margin=margin, query=query, lexical_weight=lexical_weight,
                           lexical=_terms(feats, doc_ids) if lexical_weight > 0 else None)
    return [(d, int(feats[d].spans[u, 0]), int(feats[d].spans[u, 1])) for d, u, _ in chosen]


def retrieve_leaves(
    feats: dict[str, DocFeatures], qvec: np.ndarray, doc_ids: Sequence[str], *, k: int,
    params: SearchParams, query: str = "", doc_vectors: dict[str, np.ndarray] | None = None,
    doc_questions: dict[str, str] | None = None,
) -> list[tuple[str, int, int]]:
    """Ranked evidence units of leaves mode: `leaf_search.leaves_mode`, exactly what
    `Retriever` runs with mode="leaves" (tree mode's fused score and cutoffs, no tree;
    DOC_VECTORS, DOC_QUESTIONS: see `retrieve_tree`)."""
    lexical = _terms(feats, doc_ids) if params.lexical_weight > 0 else None
    chosen = leaves_mode({d: feats[d].emb for d in doc_ids}, qvec, k=k, params=params,
                         query=query, lexical=lexical, doc_vectors=doc_vectors,
                         doc_questions=doc_questions)
    return [(d, int(feats[d].spans[u, 0]), int(feats[d].spans[u, 1])) for d, u, _ in chosen]


def run_variant(
    v: Variant, feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]],
    qvecs: np.ndarray, ks: Sequence[int], trees: dict[str, Tree] | None = None,
    stats: dict | None = None, name_free: NameFree | None = None,
) -> dict[int, list[list[tuple[str, int, int]]]]:
    """Ranked units per k per query (`stats`: hit counts at the largest k); NAME_FREE:
    rules 62 and 80-82's vectors and BM25 texts in tree and leaves modes, as `Retriever` has
    them (None: none)."""
    if v.mode != "flat" and trees is None and (v.mode == "tree" or name_free is not None):
        trees = variant_trees(feats, v)
    out: dict[int, list] = {k: [] for k in ks}
    p = v.search
    for q, qv in zip(queries, qvecs, strict=True):
        query = q.get("query", "")
        own, texts = (name_free.own(query, qv, trees, q["doc_ids"])
                      if name_free is not None and v.mode != "flat" else (None, None))
        scores = (query_node_scores(trees, feats, q, qv, p.lexical_weight, own, texts)
                  if v.mode == "tree" else None)
        for k in ks:
            if v.mode == "leaves":
                units = retrieve_leaves(feats, qv, q["doc_ids"], k=k, params=p, query=query,
                                        doc_vectors=own, doc_questions=texts)
            elif v.mode == "flat":
                units = retrieve_flat(feats, qv, q["doc_ids"], k=k,
                                      delta=p.threshold if p.threshold > 0 else None,
                                      margin=p.margin, lexical_weight=p.lexical_weight,
                                      query=query)
            else:
                units = retrieve_tree(trees, feats, qv, q["doc_ids"], k=k, params=p,
                                      query=query, stats=stats if k == max(ks) else None,
                                      scores=scores, doc_vectors=own, doc_questions=texts)
            out[k].append(units)
    return out
