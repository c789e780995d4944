"""Pure window and batch arithmetic (`sproutrag.encoder.windows`): no model."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.windows import (
    MIN_FILL,
    budget_batches,
    cut_windows,
    merge_pairs,
    own_tokens,
    pad_rows,
    plan_document,
    plan_windows,
    window_pairs,
)


@pytest.mark.parametrize("seed", range(20))
def test_budget_batches_cover_items_within_budget(seed):
    rng = np.random.default_rng(seed)
    lengths = sorted(rng.integers(3, 514, rng.integers(1, 300)).tolist(), reverse=True)
    budget = int(rng.choice([512, 2048, 16384]))
    batches = list(budget_batches(lengths, budget))
    assert [i for r in batches for i in r] == list(range(len(lengths)))
    for r in batches:
        longest = lengths[r.start]
        assert len(r) == 1 or len(r) * longest <= budget  # padded tokens within the budget
        assert all(lengths[i] >= MIN_FILL * longest for i in r)  # padding under half


def test_budget_batches_fixed_size():
    assert [len(r) for r in budget_batches([9] * 10, 100, 4)] == [4, 4, 2]


def test_pad_rows_and_window_pairs():
    ids = pad_rows([np.array([5, 6, 7]), np.array([8])], cls_id=1, sep_id=2, pad_id=0)
    assert ids.tolist() == [[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]]
    block = np.arange(9, dtype=np.float32).reshape(3, 3)
    i, j, m = window_pairs(block, np.array([2, 0, 1]), start=10)  # chunk 1 has no tokens
    assert (i.tolist(), j.tolist()) == ([10], [12])
    assert m.tolist() == [(2 + 6) / 2]


def test_merge_pairs_averages_over_windows():
    parts = [(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0])),
             (np.array([1]), np.array([2]), np.array([4.0]))]
    i, j, m = merge_pairs(parts, 3)
    assert (i.tolist(), j.tolist(), m.tolist()) == ([0, 1], [1, 2], [1.0, 3.0])
    assert [len(x) for x in merge_pairs([], 3)] == [0, 0, 0]


def test_plan_document_assigns_tokens_to_chunks_and_caps_them():
    ids = np.arange(10, 20, dtype=np.int64)
    starts = np.array([0, 3, 6, 10, 12, 14, 20, 22, 24, 26])  # characters
    spans = np.array([[0, 8], [10, 16], [22, 30]])  # 10..19 and 20..21 fall outside
    plan = plan_document(ids, starts, spans, budget=2, stride=2)
    assert [c.tolist() for c in plan.chunk_ids] == [[10, 11], [13, 14], [17, 18]]
    assert plan.n_tokens == 9  # counted before the cap; token 16 (start 20) is outside
    assert plan.windows == plan_windows([2, 2, 2], 2, 2)
    cut = cut_windows([plan, plan])
    assert [(w.doc, w.start) for w in cut] == [(0, a) for a, _ in plan.windows] + [
        (1, a) for a, _ in plan.windows
    ]
    assert all(w.lens.sum() == len(w.ids) for w in cut)


def test_own_tokens_are_whole_words_at_both_edges():
    """Chunks of a toy WordPiece document "ab cd ##ef gh ij" (id 3 continues a word):
    a chunk is its text's own tokens only when it starts and ends on the edges of
    whole words."""
    continues = np.array([False, False, False, True, False, False])
    ids = np.array([1, 2, 3, 4, 5])  # ab cd ##ef gh ij
    starts, ends = np.array([0, 3, 5, 8, 11]), np.array([2, 5, 7, 10, 13])
    where, counts = np.arange(5), np.array([1, 2, 1, 1])

    def own(spans):
        return own_tokens(ids, starts, ends, where, counts, np.array(spans),
                          continues).tolist()

    assert own([[0, 2], [3, 7], [8, 10], [11, 13]]) == [True, True, True, True]
    assert own([[0, 2], [3, 8], [8, 10], [11, 13]])[1] is False  # ends past its last token
    assert own([[0, 2], [2, 7], [8, 10], [11, 13]])[1] is False  # starts before its first
    counts = np.array([1, 1, 2, 1])  # "cd" | "##ef gh": a word cut by the edge
    assert own([[0, 2], [3, 5], [5, 10], [11, 13]]) == [True, False, False, True]
    counts = np.array([1, 0, 3, 1])  # a chunk without tokens is tokenized alone
    assert own([[0, 2], [2, 3], [3, 10], [11, 13]]) == [True, False, True, True]


def test_plan_document_knows_own_tokens_only_when_told():
    ids, starts = np.array([1, 2, 3]), np.array([0, 3, 6])
    spans = np.array([[0, 2], [3, 8]])
    assert plan_document(ids, starts, spans, budget=4, stride=4).own_tokens is None
    plan = plan_document(ids, starts, spans, budget=4, stride=4, ends=starts + 2,
                         continues=np.zeros(4, bool))
    assert plan.own_tokens.tolist() == [True, True]
    capped = plan_document(ids, starts, spans, budget=1, stride=1, ends=starts + 2,
                           continues=np.zeros(4, bool))
    assert capped.own_tokens.tolist() == [True, False]  # capped: tokenized alone
