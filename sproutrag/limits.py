"""The ranges of the search settings (import-free: the command line checks its flags
against them before anything heavy loads; `sproutrag.params` checks values against them)."""

from __future__ import annotations

#: The largest k and beam width: LanceDB's search takes at most 2**32 - 1 rows and a tree's
#: node ids are int32, so no search can use more.
MAX_COUNT = 2**31 - 1

#: (lowest, highest) value of each search setting: a threshold is a cosine and a margin a
#: difference of cosines; a lexical weight stops at 1e6, far past any useful value (the
#: training grid stops at 2) and far below where the fused scores would overflow, and so do
#: the document, ancestor and diversity weights (the same z scale); a size penalty has no
#: upper bound (a large one only prices internal nodes out).
LIMITS: dict[str, tuple[float, float]] = {
    "k": (1, MAX_COUNT), "beam_width": (1, MAX_COUNT), "threshold": (-1.0, 1.0),
    "margin": (0.0, 2.0), "lexical_weight": (0.0, 1e6), "size_penalty": (0.0, float("inf")),
    "doc_weight": (0.0, 1e6), "ancestor_weight": (0.0, 1e6), "doc_diversity": (0.0, 1e6),
    "budget_chars": (1, MAX_COUNT), "budget_tokens": (1, MAX_COUNT), "cutoff": (0.0, 1e6),
    "anchor_leaves": (0, MAX_COUNT), "link_weight": (0.0, 1e6),
    "fetch_named": (0, MAX_COUNT), "leader_weight": (0.0, 1e6), "mention_weight": (0.0, 1e6),
    "fetch_mentioned": (0, MAX_COUNT), "long_mention_weight": (0.0, 1e6),
    "dominant_ratio": (0.0, 1e6), "ranking_leaders": (0, 10_000), "n_docs": (1, 10_000),
    "name_free_leaves": (0, MAX_COUNT), "alone_opening_leaves": (0, MAX_COUNT),
}

