"""What `Retriever.context` checks, reads and ranks: its arguments, the searched
documents (`read_context`) and the pieces of evidence that compete for the budget
(`sproutrag.search.context` fills the budget with them)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from sproutrag.params import MODES, SearchParams, check_count
from sproutrag.search.context import (
    DEFAULT_LENGTH_PENALTY,
    DEFAULT_SELECTION,
    DEFAULT_WINDOW,
    SELECTIONS,
    Context,
    Piece,
    Units,
    build_context,
    ranked_pieces,
    selection_pieces,
)
from sproutrag.search.hits import QueryError
from sproutrag.search.node_scores import cosine_scores
from sproutrag.search.searched import Searched, SearchedDocuments
from sproutrag.search.stored_documents import StoredDocuments
from sproutrag.search.tree_search import rank_scores
from sproutrag.storage.rows import StoredTree


def check_budget(budget_chars: int | None, budget_tokens: int | None, k: int | None,
                 mode: str, selection: str | None, tokenizer: str | None = None) -> None:
    """QueryError naming the first bad argument of a context."""
    if budget_chars is None and budget_tokens is None:
        raise QueryError("a context needs a budget: give budget_chars or budget_tokens")
    if tokenizer is not None and budget_tokens is None:  # it would be ignored
        raise QueryError("tokenizer counts budget_tokens: give budget_tokens too (a "
                         "character budget is counted in characters)")
    for name, value in (("budget_chars", budget_chars), ("budget_tokens", budget_tokens)):
        if value is not None:
            check_count(name, value)
    if k is not None:
        check_count("k", k)
    if mode not in MODES:
        raise QueryError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if selection is not None and selection not in SELECTIONS:
        raise QueryError(f"selection must be one of {', '.join(SELECTIONS)}; got "
                         f"{selection!r}")
    if mode == "flat" and selection not in (None, "leaves"):  # it would be ignored
        raise QueryError(f"selection {selection!r} needs mode tree or leaves: mode flat "
                         "takes leaves by cosine")


def flat_pieces(stored: Mapping[str, StoredTree], qvec: np.ndarray
                ) -> tuple[list[Piece], str]:
    """Flat mode's pieces: every leaf of STORED by cosine, best first (overlap "skip")."""
    cos = {d: cosine_scores(st.tree.vectors[: st.tree.n], qvec) for d, st in stored.items()}
    order = sorted((-float(c[u]), d, u) for d, c in cos.items() for u in range(len(c)))
    return ranked_pieces((d, u, -r) for r, d, u in order), "skip"


def scored_pieces(found: Searched, qvec: np.ndarray, units: Mapping[str, Units], *,
                  params: SearchParams, query: str, mode: str, selection: str | None,
                  cutoff: float | None) -> tuple[list[Piece], str, str]:
    """(pieces, overlap, the selection used) of tree or leaves mode: the searched
    documents (FOUND) ranked by tree mode's score (`rank_scores`), then selected by
    SELECTION (default `DEFAULT_SELECTION`; leaves mode has no tree, so "tree" selects
    leaves) with the shipped length penalty, window and CUTOFF."""
    trees = {d: st.tree for d, st in found.stored.items()}
    scores = rank_scores(trees, qvec, params=params, query=query, lexical=found.lexical,
                         scores=found.scores, anchor=found.anchor, links=found.links,
                         doc_vectors=found.vectors, doc_questions=found.questions)
    chosen = selection or DEFAULT_SELECTION
    if mode == "leaves" and chosen == "tree":
        chosen = "leaves"  # leaves mode has no tree to select from
    pieces, overlap = selection_pieces(
        chosen, {d: s.rank for d, s in scores.items()}, units, trees=trees,
        length_penalty=DEFAULT_LENGTH_PENALTY, window=DEFAULT_WINDOW, margin=cutoff)
    return pieces, overlap, chosen


def read_context(searching: SearchedDocuments, documents: StoredDocuments,
                 params: SearchParams, query: str, qvec: np.ndarray, docs: Sequence[str],
                 corpus_wide: bool, allowed: Collection[str] | None,
                 budget_chars: int | None, budget_tokens: int | None, measure: Any,
                 k: int | None, mode: str, selection: str | None, cutoff: float | None
                 ) -> Context:
    """`Retriever.context` on one view of the tables (its arguments checked): the chosen
    DOCS for QVEC (a CORPUS_WIDE query's with its fetch, links and anchor, among ALLOWED:
    `SearchedDocuments.find`), their texts read from DOCUMENTS, their pieces ranked
    (`flat_pieces` or `scored_pieces`, with PARAMS) and the budget filled
    (`build_context`). KeyError when a document was replaced under the view (the caller
    reads again)."""
    found = None
    if mode != "flat":  # a corpus-wide query's fetch, links and anchor; texts read
        found = searching.find(query, qvec, docs, params, corpus_wide, allowed, texts=True)
        loaded, texts = found.loaded, found.texts
    else:
        loaded, texts = documents.read(docs, texts=True)
    units = {d: Units(st.spans, texts[d]) for d, (_, st) in loaded.items()}
    if found is None:
        pieces, overlap = flat_pieces({d: st for d, (_, st) in loaded.items()}, qvec)
        chosen = "flat"
    else:
        pieces, overlap, chosen = scored_pieces(
            found, qvec, units, params=params, query=query, mode=mode,
            selection=selection, cutoff=cutoff)
    ctx = build_context(pieces, units, budget_chars=budget_chars,
                        budget_tokens=budget_tokens, measure=measure, k=k, overlap=overlap)
    ctx.meta.update(selection=chosen, mode=mode, cutoff=cutoff if mode != "flat" else None)
    return ctx


__all__ = ["check_budget", "flat_pieces", "read_context", "scored_pieces"]
