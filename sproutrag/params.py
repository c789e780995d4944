"""The query-time search parameters: one `SearchParams`, validated once, and the checks
of a search setting's range (`sproutrag.limits.LIMITS`) that everything else reuses.

`SearchParams` is held by the weights file (`sproutrag.encoder.weights.TrainedWeights`:
what training learned), by the database's index settings
(`sproutrag.storage.index_info`), by the evaluation's variants and by the `Retriever`;
overrides are `dataclasses.replace(params, **overrides)`. Each field says, in its
metadata, how it is checked (`kind`) and under which name the weights file and the
`index_settings` table store it (`key`; None: not learned, not stored). A new search
parameter is a new field here, plus the code that uses it (and a column of
`index_settings`, `schemas/tables.py`); readers and writers of the weights file and of
the table, the overrides and the checks follow the fields.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any

from sproutrag.errors import SearchParamsError
from sproutrag.limits import LIMITS

__all__ = ["DEFAULT", "MODES", "SELECTIONS", "SearchParams", "SearchParamsError", "check_count",
           "check_number",
           "count_problem", "number_problem"]


#: The search modes: tree (the method), leaves (tree mode's fused score and cutoffs over
#: the same documents' leaves, no tree: the tree's own contribution is tree minus
#: leaves), flat (cosine top-k over the leaves: the paper's baseline).
MODES: tuple[str, ...] = ("tree", "leaves", "flat")

#: How evidence competes for a context's budget (`sproutrag.search.context`): each leaf
#: alone; each leaf with its neighbours (a window of adjacent leaves); every tree node
#: (leaf or internal) with all its leaves.
SELECTIONS: tuple[str, ...] = ("leaves", "window", "tree")


class _Default:
    """The type of `DEFAULT`."""

    def __repr__(self) -> str:
        return "DEFAULT"


#: A keyword left at DEFAULT takes the default of its source (the database, the weights
#: file), as opposed to None, which for `margin` means "no relative cutoff".
DEFAULT: Any = _Default()


def _bounds(low: float, high: float, fmt: str) -> str:
    return f">= {low:{fmt}}" if math.isinf(high) else f"between {low:{fmt}} and {high:{fmt}}"


def count_problem(limits: str, value: Any) -> str | None:
    """What is wrong with VALUE as an integer within `LIMITS[limits]` (None: nothing)."""
    low, high = LIMITS[limits]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not (
        low <= value <= high
    ):
        return f"must be an integer {_bounds(low, high, '')}"
    return None


def number_problem(limits: str, value: Any) -> str | None:
    """What is wrong with VALUE as a finite number within `LIMITS[limits]` (None: nothing)."""
    low, high = LIMITS[limits]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
        math.isfinite(value) and low <= value <= high
    ):
        return f"must be a finite number {_bounds(low, high, 'g')}"
    return None


def check_count(name: str, value: Any, *, limits: str | None = None) -> int:
    """VALUE as an int; SearchParamsError (a QueryError) naming NAME unless it is an
    integer within `LIMITS[limits or name]` (k, beam width)."""
    problem = count_problem(limits or name, value)
    if problem:
        raise SearchParamsError(f"{name} {problem}, got {value!r}")
    return int(value)


def check_number(name: str, value: Any, *, limits: str | None = None) -> float:
    """VALUE as a float; SearchParamsError naming NAME unless it is a finite number within
    `LIMITS[limits or name]`."""
    problem = number_problem(limits or name, value)
    if problem:
        raise SearchParamsError(f"{name} {problem}, got {value!r}")
    return float(value)


def _check(f: Field, value: Any, name: str) -> Any:
    """VALUE of field F, checked (errors name it NAME) and normalised (float, int, bool)."""
    kind = f.metadata["kind"]
    if kind == "count":
        return check_count(name, value, limits=f.name)
    if kind == "flag":
        if not isinstance(value, bool):
            raise SearchParamsError(f"{name} must be true or false, got {value!r}")
        return value
    if kind == "optional number" and value is None:
        return None
    problem = number_problem(f.name, value)
    if problem:
        off = "None (off) or " if kind == "optional number" else ""
        raise SearchParamsError(f"{name} must be {off}{problem[len('must be '):]}, "
                                f"got {value!r}")
    return float(value)


def _param(default: Any, kind: str, key: str | None) -> Any:
    return field(default=default, metadata={"kind": kind, "key": key})


@dataclass(frozen=True)
class SearchParams:
    """How tree mode finds and ranks evidence (the learned values come from the weights).

    * ``beam_width`` (b), ``threshold`` (delta, on a node's cosine) and ``margin`` (the
      relative cutoff on cosine; None = off): as in the paper and `tree_candidates`;
    * ``lexical_weight`` (w): nodes are ranked by ``z(cosine) + w * z(BM25)``, both
      standardised over the leaves being searched (w = 0: plain cosine);
    * ``size_penalty`` (g): an internal node of m leaves competes at
      ``score - g * log2(m)``, a calibration that decides when a node beats its leaves;
    * ``seed_leaves``: the k best leaves are candidates even when the beam never reaches
      them, so the search cannot miss the best leaf of a deep tree;
    * ``doc_weight`` (w_d): every node of a document also scores ``w_d * D(d)``, D the
      document's own match among the searched documents (`hierarchy.document_scores`:
      its leaves' mean vector and its whole text's BM25, no tree), so a document that
      matches as a whole lends its units weight against look-alike units elsewhere;
    * ``ancestor_weight`` (w_a, tree and search over trees only): a node also scores
      ``w_a`` times the mean rank score of its ancestors below the root (the sections
      that hold it; `tree_search.hierarchical_scores`);
    * ``doc_diversity`` (lambda): a unit competes at its score less ``lambda`` times the
      units already taken from its document, so a document holding the best units does
      not take all k and a question's second document keeps room (`select_evidence`).

    Every value is checked against its range (`sproutrag.limits.LIMITS`) on creation, by
    `replace` too: SearchParamsError (a QueryError) names the parameter.
    """

    beam_width: int = _param(5, "count", None)
    threshold: float = _param(0.0, "number", "delta")
    margin: float | None = _param(None, "optional number", "margin")
    lexical_weight: float = _param(0.0, "number", "lexical_weight")
    size_penalty: float = _param(0.0, "number", "size_penalty")
    seed_leaves: bool = _param(False, "flag", "seed_leaves")
    doc_weight: float = _param(0.0, "number", "doc_weight")
    ancestor_weight: float = _param(0.0, "number", "ancestor_weight")
    doc_diversity: float = _param(0.0, "number", "doc_diversity")

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _check(f, getattr(self, f.name), f.name))

    def learned(self) -> dict[str, Any]:
        """The learned parameters by stored name (the keys of the weights file and the
        columns of `index_settings`: delta, margin, lexical_weight, ...)."""
        return {f.metadata["key"]: getattr(self, f.name) for f in fields(self)
                if f.metadata["key"] is not None}

    @classmethod
    def from_learned(cls, record: Mapping[str, Any], **others: Any) -> SearchParams:
        """The parameters RECORD stores (by stored name; an absent key: the default, as
        in files written before the parameter existed), OTHERS for the rest. Errors name
        the stored key."""
        values = dict(others)
        for f in fields(cls):
            key = f.metadata["key"]
            if key is not None and key in record:
                values[f.name] = _check(f, record[key], repr(key))
        return cls(**values)

    @classmethod
    def overrides(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """VALUES checked as overrides (field name -> value; DEFAULT: not overridden), for
        `dataclasses.replace(params, **overrides)`."""
        by_name = {f.name: f for f in fields(cls)}
        out = {}
        for name, value in values.items():
            if name not in by_name:
                raise SearchParamsError(f"unknown search parameter {name!r}; choose from "
                                        f"{', '.join(by_name)}")
            if value is not DEFAULT:
                out[name] = _check(by_name[name], value, name)
        return out
