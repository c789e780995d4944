"""The first stage of a corpus-wide query: which documents the search looks at.

`Retriever.choose_documents` ranks documents by their nearest nodes (vectors) and, with
the hybrid first stage, by their best leaves in LanceDB's full-text index (the words),
then fuses the two rankings here.
"""

from __future__ import annotations

from collections.abc import Sequence

#: How a query without doc_ids picks its documents (`Retriever.choose_documents`).
FIRST_STAGES = ("hybrid", "vector")

#: Reciprocal rank fusion's constant (Cormack et al. 2009; LanceDB's RRFReranker default).
RRF_K = 60


def fuse_rankings(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Items of several best-first RANKINGS by reciprocal rank fusion: score = sum of
    1 / (k + rank) over the rankings holding the item (rank from 1); ties keep the order
    in which items first appear."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda item: -score[item])
