"""The scores of one query over the nodes of the trees it searches: cosine, and the fused
rank score ``z(cosine) + w * z(BM25)`` that tree mode ranks and searches by.

Pure functions over arrays (no model, no database), shared by tree mode, leaves mode and
the hierarchy's document and section evidence (`sproutrag.search.hierarchy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sproutrag.search.lexical import LeafTerms, bm25_each
from sproutrag.trees.tree import Tree


def cosine_scores(vectors: np.ndarray, query: np.ndarray,
                  norms: np.ndarray | None = None) -> np.ndarray:
    """Cosine similarity of every row of `vectors` with `query` (float32); NORMS: the
    rows' L2 norms when known (`Tree.norms`)."""
    q = np.asarray(query, dtype=np.float32).ravel()
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    norms = np.linalg.norm(vectors, axis=1) if norms is None else norms
    return (vectors @ q) / np.maximum(norms, 1e-12)


#: A corpus-wide query's statistics (BM25's collection, the z-scores' mean and SD) come
#: from the first stage's leading documents until they hold this many leaves
#: (`anchor_documents`): fitted on the three train pools (16, 32, 64, 128 tried) and
#: adopted by its rule on dev (docs/whole-corpus.md, rule 11; `bench/research/anchored_stats.py`).
ANCHOR_LEAVES = 32


@dataclass(frozen=True)
class NodeScores:
    """Scores of every node of one tree for one query."""

    cosine: np.ndarray  # float32 (2n-1,)
    rank: np.ndarray  # float64 (2n-1,): the fused score nodes are ranked and searched by


def _standardise(values: list[np.ndarray], n_leaves: list[int],
                 among: Sequence[int] | None = None) -> list[np.ndarray]:
    """(x - mean) / sd with mean and sd over the leaves of all trees, or of the trees
    AMONG (their indices) (sd 0 -> 1)."""
    among = range(len(values)) if among is None else among
    leaves = np.concatenate([values[i][: n_leaves[i]] for i in among] or [np.zeros(0)])
    mean = float(leaves.mean()) if leaves.size else 0.0
    sd = float(leaves.std()) if leaves.size else 0.0
    sd = sd if sd > 1e-9 else 1.0
    return [(v.astype(np.float64) - mean) / sd for v in values]


def node_scores(
    trees: dict[str, Tree], query_vec: np.ndarray, *, query: str = "",
    lexical: dict[str, LeafTerms] | None = None, lexical_weight: float = 0.0,
    anchor: Sequence[str] | None = None, doc_vectors: Mapping[str, np.ndarray] | None = None,
    doc_questions: Mapping[str, str] | None = None,
) -> dict[str, NodeScores]:
    """Cosine of every node and the score nodes are ranked by (DOC_VECTORS: a vector that
    replaces QUERY_VEC for the cosine of a document's nodes; DOC_QUESTIONS: a text that
    replaces QUERY for its BM25, `bm25_each`).

    With ``lexical_weight`` w > 0 (and each tree's `LeafTerms`), the rank score is
    ``z(cosine) + w * z(BM25 of the node's text)``; otherwise it is the cosine itself.
    ANCHOR: the documents whose leaves give BM25's collection and the z-scores' mean and
    SD (`anchor_documents`; default every tree).
    """
    ids = list(trees)
    own = doc_vectors or {}
    cos = [cosine_scores(trees[d].vectors, own.get(d, query_vec), trees[d].norms) for d in ids]
    if lexical_weight <= 0 or not ids:
        return {d: NodeScores(c, c.astype(np.float64)) for d, c in zip(ids, cos)}
    if lexical is None or any(d not in lexical for d in ids):
        raise ValueError("lexical_weight > 0 needs the LeafTerms of every searched tree")
    among, collection = anchor_collection(ids, anchor, lexical)
    lex = bm25_each(query, doc_questions, ids, [lexical[d] for d in ids],
                    [trees[d] for d in ids], collection)
    fused = fuse(cos, lex, [trees[d].n for d in ids], lexical_weight, among=among)
    return {d: NodeScores(c, f) for d, c, f in zip(ids, cos, fused)}


def anchor_documents(docs: Sequence[str], leaves: Mapping[str, int],
                     min_leaves: int) -> list[str] | None:
    """The leading DOCS (in their order: the first stage's ranking) until they hold at
    least MIN_LEAVES leaves (LEAVES: per document): the documents a corpus-wide query's
    statistics come from, so that look-alike documents further down do not change how
    the leading one ranks its own leaves. None (every document) when MIN_LEAVES is 0 or
    every document is needed."""
    if min_leaves <= 0:
        return None
    out, held = [], 0
    for d in docs:
        if held >= min_leaves:
            return out
        out.append(d)
        held += leaves.get(d, 0)
    return None


def anchor_collection(ids: Sequence[str], anchor: Sequence[str] | None,
                      lexical: Mapping[str, LeafTerms]
                      ) -> tuple[list[int] | None, list[LeafTerms] | None]:
    """(indices in IDS, `LeafTerms`) of the ANCHOR documents: `fuse`'s AMONG and BM25's
    COLLECTION; (None, None) for every document."""
    if anchor is None:
        return None, None
    wanted = set(anchor)
    among = [i for i, d in enumerate(ids) if d in wanted]
    return among, [lexical[ids[i]] for i in among]


def fuse(
    cosine: list[np.ndarray], lexical: list[np.ndarray], n_leaves: list[int], weight: float,
    among: Sequence[int] | None = None,
) -> list[np.ndarray]:
    """``z(cosine) + weight * z(lexical)`` per document, each standardised over the leaves
    (the first n_leaves entries of each array) of all the documents together, or of the
    documents AMONG (their indices)."""
    zc = _standardise(cosine, n_leaves, among)
    zl = _standardise(lexical, n_leaves, among)
    return [a + weight * b for a, b in zip(zc, zl)]
