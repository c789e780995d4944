"""The search settings' ranges and the checks against them (`sproutrag.limits`)."""

from __future__ import annotations

import math

import pytest

from sproutrag.errors import QueryError
from sproutrag.limits import LIMITS, MAX_COUNT, check_count, check_number


@pytest.mark.parametrize("value", [None, -1.0, 0, 0.5, 1.0])
def test_check_number_accepts_numbers_in_range_and_none(value):
    check_number("threshold", value)


@pytest.mark.parametrize("value", [1.5, -2, math.nan, math.inf, True, "0.5"])
def test_check_number_names_the_setting_and_its_range(value):
    with pytest.raises(QueryError, match=r"threshold must be a finite number between -1 and 1"):
        check_number("threshold", value)


def test_check_count_accepts_integers_up_to_max_count():
    check_count("k", 1)
    check_count("k", MAX_COUNT)
    check_count("beam", 3, limits="beam_width")


@pytest.mark.parametrize("value", [0, MAX_COUNT + 1, 2.0, True])
def test_check_count_refuses_what_is_not_an_integer_in_range(value):
    with pytest.raises(QueryError, match=rf"beam must be an integer between 1 and {MAX_COUNT}"):
        check_count("beam", value, limits="beam_width")
    assert LIMITS["beam_width"] == (1, MAX_COUNT)
