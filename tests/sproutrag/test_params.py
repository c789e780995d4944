"""One `SearchParams`, checked once, serialised by its fields."""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np
import pytest

from sproutrag.errors import QueryError
from sproutrag.limits import LIMITS
from sproutrag.params import (
    DEFAULT,
    SearchParams,
    SearchParamsError,
    check_count,
    check_number,
)


def test_defaults_are_the_papers_search():
    p = SearchParams()
    assert (p.beam_width, p.threshold, p.margin, p.lexical_weight, p.size_penalty,
            p.seed_leaves) == (5, 0.0, None, 0.0, 0.0, False)
    assert (p.doc_weight, p.ancestor_weight, p.doc_diversity) == (0.0, 0.0, 0.0)  # off


@pytest.mark.parametrize("name, bad", [
    ("beam_width", 0), ("beam_width", 2.5), ("beam_width", True), ("beam_width", 2**31),
    ("threshold", float("nan")), ("threshold", 1.5), ("threshold", "0.1"),
    ("margin", -0.1), ("margin", 3.0), ("margin", float("inf")),
    ("lexical_weight", -1.0), ("lexical_weight", 1e7), ("size_penalty", -0.5),
    ("size_penalty", float("inf")), ("seed_leaves", 1), ("seed_leaves", None),
    ("doc_weight", -0.1), ("doc_weight", float("nan")), ("ancestor_weight", -1.0),
    ("ancestor_weight", 1e7), ("doc_diversity", -0.5), ("doc_diversity", "1"),
])
def test_every_field_is_checked_against_its_range(name, bad):
    with pytest.raises(SearchParamsError, match=f"^{name} must be") as err:
        SearchParams(**{name: bad})
    assert isinstance(err.value, QueryError) and isinstance(err.value, ValueError)
    with pytest.raises(SearchParamsError, match=name):  # replace checks too
        replace(SearchParams(), **{name: bad})


def test_ranges_come_from_limits():
    low, high = LIMITS["threshold"]
    assert SearchParams(threshold=low).threshold == -1.0
    assert SearchParams(threshold=high, margin=LIMITS["margin"][1]).margin == 2.0
    with pytest.raises(SearchParamsError, match="between -1 and 1"):
        SearchParams(threshold=math.nextafter(high, 2))


def test_values_are_normalised():
    p = SearchParams(threshold=np.float32(0.5), lexical_weight=1, size_penalty=np.int64(2),
                     beam_width=np.int32(3), margin=0)
    assert [type(getattr(p, f.name)) for f in fields(p)] == [int, float, float, float, float,
                                                              bool, float, float, float]


def test_learned_round_trips_by_stored_name():
    p = SearchParams(beam_width=3, threshold=0.2, margin=0.05, lexical_weight=1.0,
                     size_penalty=2.0, seed_leaves=True, doc_weight=0.5, ancestor_weight=0.25,
                     doc_diversity=1.0)
    record = p.learned()
    assert record == {"delta": 0.2, "margin": 0.05, "lexical_weight": 1.0,
                      "size_penalty": 2.0, "seed_leaves": True, "doc_weight": 0.5,
                      "ancestor_weight": 0.25, "doc_diversity": 1.0}  # beam width: not learned
    assert SearchParams.from_learned(record, beam_width=3) == p
    assert SearchParams.from_learned({}) == SearchParams()  # absent keys: defaults

    with pytest.raises(SearchParamsError, match="^'delta' must be"):
        SearchParams.from_learned({"delta": 5})


def test_overrides_are_checked_and_default_means_not_set():
    got = SearchParams.overrides({"threshold": 0.3, "margin": DEFAULT, "seed_leaves": True})
    assert got == {"threshold": 0.3, "seed_leaves": True}
    assert replace(SearchParams(), **got).threshold == 0.3
    assert SearchParams.overrides({"margin": None}) == {"margin": None}  # None: no cutoff
    with pytest.raises(SearchParamsError, match="unknown search parameter 'delta'"):
        SearchParams.overrides({"delta": 0.1})
    with pytest.raises(SearchParamsError, match="lexical_weight must be"):
        SearchParams.overrides({"lexical_weight": -2})


def test_check_count_and_number_name_the_setting():
    assert check_count("k", 3) == 3
    with pytest.raises(SearchParamsError, match="^k must be an integer between 1 and 2147483647"):
        check_count("k", 0)
    with pytest.raises(SearchParamsError, match="^beam must be an integer between 1 and"):
        check_count("beam", 0, limits="beam_width")
    assert check_number("threshold", 1) == 1.0
    with pytest.raises(SearchParamsError, match="size_penalty must be a finite number >= 0"):
        check_number("size_penalty", -1)
