"""Rankings of documents merged into one: reciprocal rank fusion (`fuse_rankings`) and
the leaders each ranking keeps among the first ones (`keep_leaders`; docs/whole-corpus.md,
rule 54). The hybrid first stage (`sproutrag.search.first_stage`) fuses its vector,
full-text and entity rankings with them.

Pure functions over lists of ids.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def keep_leaders(fused: Sequence[str], rankings: Sequence[Sequence[str]], n: int,
                 leaders: int) -> list[str]:
    """FUSED (`fuse_rankings` of RANKINGS) with the first LEADERS items of each ranking
    among its first N: a leader the fused order leaves out takes the place of the last of
    the first N that leads no ranking, in turn, and stays out when every one of them leads
    a ranking (docs/whole-corpus.md, rule 54); the order is otherwise FUSED's. With
    LEADERS 0, or every leader among the first N, FUSED."""
    keep = list(dict.fromkeys(item for ranking in rankings for item in ranking[:leaders]))
    head = list(fused[:n])
    missing = [item for item in keep if item not in head]
    if not missing:
        return list(fused)
    kept = set(keep)
    for item in missing:
        spare = next((i for i in range(len(head) - 1, -1, -1) if head[i] not in kept), None)
        if spare is None:  # the first N are leaders all: N documents are searched
            break
        head[spare] = item
    taken = set(head)
    return head + [item for item in fused if item not in taken]


__all__ = ["RRF_K", "fuse_rankings", "keep_leaders"]
