"""The ranges of the search settings and the checks against them (only light imports:
the command line checks its flags against them before anything heavy loads)."""

from __future__ import annotations

import math
import numbers

from sproutrag.errors import QueryError

#: The largest k and beam width: LanceDB's search takes at most 2**32 - 1 rows and a tree's
#: node ids are int32, so no search can use more.
MAX_COUNT = 2**31 - 1

#: (lowest, highest) value of each search setting: a threshold is a cosine and a margin a
#: difference of cosines; a lexical weight stops at 1e6, far past any useful value (the
#: training grid stops at 2) and far below where the fused scores would overflow.
LIMITS: dict[str, tuple[float, float]] = {
    "k": (1, MAX_COUNT), "beam_width": (1, MAX_COUNT), "threshold": (-1.0, 1.0),
    "margin": (0.0, 2.0), "lexical_weight": (0.0, 1e6),
}


def check_number(name: str, value: float | None) -> None:
    """Refuse (QueryError) a search setting NAME that is not a finite number within
    `LIMITS[name]` (None: not set, the default applies)."""
    if value is None:
        return
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
        math.isfinite(value) and low <= value <= high
    ):
        raise QueryError(f"{name} must be a finite number between {low:g} and {high:g}, "
                         f"got {value!r}")


def check_count(name: str, value: int, *, limits: str | None = None) -> None:
    """Refuse (QueryError) a k or beam width NAME that is not an integer within
    `LIMITS[limits or name]`."""
    low, high = LIMITS[limits or name]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not (
        low <= value <= high
    ):
        raise QueryError(f"{name} must be an integer between {low} and {high}, "
                         f"got {value!r}")
