from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sproutrag.learn.metrics import (
    average_over_k,
    gold_units,
    intersection_length,
    merge_spans,
    paired_difference,
    per_query_ie,
    score_query,
    span_length,
    summarize,
)

# A document of 5 units (chunks) of 10 characters: [0,10) [10,20) ... [40,50).
UNITS = [("d", 10 * i, 10 * i + 10) for i in range(5)]


def test_span_arithmetic():
    assert merge_spans([(5, 8), (0, 3), (2, 4), (8, 9), (7, 7)]) == [(0, 4), (5, 9)]
    assert span_length([(0, 10), (5, 15), (20, 21)]) == 16
    assert intersection_length([(0, 10), (20, 30)], [(5, 25)]) == 10
    assert intersection_length([(0, 5)], [(5, 9)]) == 0  # half-open: touching is no overlap


def test_internal_node_expanded_into_units_and_short_answer():
    # An internal node over units 1 and 2 was retrieved, expanded into both units;
    # gold [12, 15) lies in unit 1 only. The answer (2 units) is shorter than k = 5.
    gold = [("d", 12, 15)]
    gu = gold_units(UNITS, gold)
    assert gu == [("d", 10, 20)]
    s = score_query([("d", 10, 20), ("d", 20, 30)], gold, gu, k=5)
    assert s.n_retrieved == 2 and s.n_relevant == 1
    assert s.precision == pytest.approx(1 / 5)  # the paper's: divided by k, not by 2
    assert s.precision_returned == pytest.approx(1 / 2)
    assert s.recall == 1.0 and s.unit_recall == 1.0
    assert s.ie == pytest.approx(1 / 5)
    assert s.char_precision == pytest.approx(3 / 20)
    assert s.char_recall == 1.0


def test_budget_cut_at_k():
    gold = [("d", 40, 45)]
    gu = gold_units(UNITS, gold)
    ranked = [("d", 0, 10), ("d", 10, 20), ("d", 40, 50)]  # the relevant unit is third
    at1 = score_query(ranked, gold, gu, k=1)
    at3 = score_query(ranked, gold, gu, k=3)
    assert (at1.n_retrieved, at1.precision, at1.recall) == (1, 0.0, 0.0)
    assert at3.precision == pytest.approx(1 / 3) and at3.recall == 1.0
    assert at3.char_precision == pytest.approx(5 / 30) and at3.char_recall == 1.0
    at5 = score_query(ranked + [("d", 20, 30), ("d", 30, 40), ("d", 40, 50)], gold, gu, k=2)
    assert at5.n_retrieved == 2 and at5.precision == 0.0  # units past k never count


def test_gold_span_over_two_units_and_unit_over_two_spans():
    # Gold [15, 25) covers the end of unit 1 and the start of unit 2: one gold span,
    # touched by either unit; both units are relevant.
    gold = [("d", 15, 25)]
    gu = gold_units(UNITS, gold)
    assert gu == [("d", 10, 20), ("d", 20, 30)]
    one = score_query([("d", 10, 20), ("d", 0, 10)], gold, gu, k=2)
    assert one.recall == 1.0  # the only gold span is touched
    assert one.unit_recall == pytest.approx(1 / 2)  # one of its two units
    assert one.precision == pytest.approx(1 / 2) and one.ie == pytest.approx(1 / 2)
    both = score_query([("d", 10, 20), ("d", 20, 30)], gold, gu, k=2)
    assert both.precision == 1.0 and both.recall == 1.0 and both.ie == 1.0
    # Gold spans [2, 4) and [6, 12): unit 0 overlaps both, unit 1 the second.
    gold = [("d", 2, 4), ("d", 6, 12)]
    gu = gold_units(UNITS, gold)
    s = score_query([("d", 0, 10)], gold, gu, k=3)
    assert s.n_relevant == 1 and s.precision == pytest.approx(1 / 3)  # counted once
    assert s.recall == 1.0  # both gold spans touched
    assert s.unit_recall == pytest.approx(1 / 2)  # one of two gold units
    assert s.char_precision == pytest.approx(6 / 10)  # chars 2,3 and 6..9
    assert s.char_recall == pytest.approx(6 / 8)


def test_a_unit_or_a_gold_span_given_twice_counts_once():
    gold = [("d", 2, 8)]
    gu = gold_units(UNITS, gold)
    s = score_query([("d", 0, 10)] * 3, gold, gu, k=3)  # one unit, given three times
    assert (s.n_retrieved, s.n_relevant) == (1, 1)
    assert s.precision == pytest.approx(1 / 3) and s.precision_returned == 1.0
    twice = score_query([("d", 0, 10)], gold * 2 + [("d", 40, 45)], gu, k=1)
    assert twice.recall == pytest.approx(1 / 2)  # 1 of 2 distinct gold spans, not 2 of 3


def test_other_document_and_empty_answer():
    gold = [("d", 0, 5)]
    gu = gold_units(UNITS, gold)
    s = score_query([("e", 0, 5)], gold, gu, k=1)  # same offsets, other document
    assert s.precision == s.recall == s.char_precision == s.char_recall == 0.0
    empty = score_query([], gold, gu, k=5)
    assert empty.precision == empty.recall == empty.char_precision == 0.0
    assert empty.precision_returned == 0.0
    with pytest.raises(ValueError, match="k must be"):
        score_query([], gold, gu, k=0)


def test_summaries_average_over_k_and_paired_difference():
    gold = [("d", 12, 15)]
    gu = gold_units(UNITS, gold)
    a = score_query([("d", 10, 20)], gold, gu, k=1)  # P 1, R 1
    b = score_query([("d", 0, 10)], gold, gu, k=1)  # P 0, R 0
    s1 = summarize([a, b], 1)
    assert s1.precision == 0.5 and s1.recall == 0.5
    assert s1.ie == pytest.approx(0.5) and s1.ie_means == pytest.approx(0.25)
    c = score_query([("d", 10, 20), ("d", 0, 10)], gold, gu, k=3)  # P 1/3, R 1
    s3 = summarize([c], 3)
    assert s3.ie == pytest.approx(1 / 3) and s3.ie_returned == pytest.approx(1 / 2)
    assert s3.char_ie == pytest.approx(1 * 3 / 20)
    avg = average_over_k([s1, s3])
    assert avg["ie"] == pytest.approx((0.5 + 1 / 3) / 2)
    assert per_query_ie([[a, b], [c, c]]) == pytest.approx([(1 + 1 / 3) / 2, (0 + 1 / 3) / 2])
    mean, se = paired_difference([1.0, 0.5, 0.0], [0.5, 0.5, 0.5])
    assert mean == pytest.approx(0.0)
    assert se == pytest.approx((0.25 / 3) ** 0.5)  # sd of (0.5, 0, -0.5) is 0.5
    with pytest.raises(ValueError, match="same queries"):
        paired_difference([1.0], [1.0, 2.0])


def test_metrics_do_not_import_search_code():
    src = Path(__file__).resolve().parents[3] / "sproutrag" / "learn" / "metrics.py"
    names = set()
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    assert not {n for n in names if n.startswith("sproutrag")}


def test_char_pr_of_a_context_counts_characters_once():
    from sproutrag.learn.budgets import char_pr

    gold = [("a", 10, 20), ("b", 0, 10)]
    # 5 of "a"'s gold characters in a 15-character span, nothing of "b"'s
    p, r = char_pr([("a", 15, 30)], gold)
    assert (p, r) == (5 / 15, 5 / 20)
    # overlapping spans count their characters once
    p, r = char_pr([("a", 10, 20), ("a", 12, 18), ("b", 0, 10)], gold)
    assert (p, r) == (1.0, 1.0)
    assert char_pr([], gold) == (0.0, 0.0)
