"""Learned parameters: the attention aggregation (index time) and the search (query time).

The method aggregates chunk attention as A = sum_{l,h} w_lh Attn(l,h) with
w = softmax(alpha) over all (layer, head) pairs: alpha shapes the trees. The search
parameters are used only when querying: the candidate threshold `delta`, the optional
relative cutoff `margin`, the weight of lexical evidence (`lexical_weight`), the size
calibration of internal nodes (`size_penalty`) and whether the best leaves seed the
candidates (`seed_leaves`); see `sproutrag.search.tree_search.SearchParams`. All are learned once
(``sproutrag train``) and stored as a small JSON file; untrained, alpha is uniform and
the search is the paper's (delta 0, cosine only). numpy only: no torch here.

`tree_fingerprint()` covers only alpha (what changes the stored trees); it enters the
index fingerprint, so re-learning a query-time parameter never re-indexes a corpus.
`fingerprint()` covers the whole file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.errors import WeightsFileError  # noqa: F401 - also importable from here

FORMAT = "sproutrag-weights/1"
DEFAULT_ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True, eq=False)
class AggregationWeights:
    """alpha: float32 (n_layers, n_heads) logits; delta: beam-search candidate threshold;
    margin: relative cutoff (a candidate must score within `margin` of the best leaf, and
    so must each of its leaves; None: no relative cutoff); lexical_weight, size_penalty,
    seed_leaves: see `sproutrag.search.tree_search.SearchParams`."""

    alpha: np.ndarray
    delta: float = 0.0
    source: str = "uniform"
    encoder: str | None = DEFAULT_ENCODER_ID
    trained_on: str | None = None
    margin: float | None = None
    lexical_weight: float = 0.0
    size_penalty: float = 0.0
    seed_leaves: bool = False

    def __post_init__(self) -> None:
        alpha = np.array(self.alpha, dtype=np.float32)  # a private copy
        if alpha.ndim != 2 or alpha.shape[0] < 1 or alpha.shape[1] < 1:
            raise ValueError(f"alpha must have shape (n_layers, n_heads), got {alpha.shape}")
        if not np.all(np.isfinite(alpha)):
            raise ValueError("alpha contains NaN or infinite values")
        if not math.isfinite(float(self.delta)):
            raise ValueError(f"delta must be finite, got {self.delta!r}")
        if self.margin is not None and not (math.isfinite(self.margin) and self.margin >= 0):
            raise ValueError(f"margin must be None or a finite number >= 0, got {self.margin!r}")
        for name in ("lexical_weight", "size_penalty"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "seed_leaves", bool(self.seed_leaves))
        alpha.setflags(write=False)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "delta", float(self.delta))
        if self.margin is not None:
            object.__setattr__(self, "margin", float(self.margin))

    @classmethod
    def uniform(cls, n_layers: int = 6, n_heads: int = 12) -> AggregationWeights:
        """Equal weight on every (layer, head): the untrained default."""
        return cls(np.zeros((n_layers, n_heads), dtype=np.float32), 0.0, "uniform")

    @property
    def n_layers(self) -> int:
        return int(self.alpha.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.alpha.shape[1])

    def mix(self) -> np.ndarray:
        """w = softmax(alpha) over all (l, h) pairs: float32 (n_layers, n_heads), sums to 1."""
        a = self.alpha.astype(np.float64)
        e = np.exp(a - a.max())
        return (e / e.sum()).astype(np.float32)

    def tree_fingerprint(self) -> str:
        """Short sha256 of what changes the trees: alpha (shape and float32 bytes)."""
        h = hashlib.sha256(FORMAT.encode())
        h.update(np.asarray(self.alpha.shape, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(self.alpha, dtype="<f4").tobytes())
        return h.hexdigest()[:16]

    def fingerprint(self) -> str:
        """Short sha256 of the whole content: alpha and every search parameter."""
        h = hashlib.sha256(self.tree_fingerprint().encode())
        h.update(np.asarray([self.delta], dtype="<f8").tobytes())
        if self.margin is not None:
            h.update(b"margin" + np.asarray([self.margin], dtype="<f8").tobytes())
        if self.search_fields() != _UNTRAINED_SEARCH:
            h.update(json.dumps(self.search_fields(), sort_keys=True).encode())
        return h.hexdigest()[:16]

    def search_fields(self) -> dict[str, Any]:
        """The query-time parameters besides delta and margin."""
        return {"lexical_weight": self.lexical_weight, "size_penalty": self.size_penalty,
                "seed_leaves": self.seed_leaves}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AggregationWeights):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "alpha": [[float(x) for x in row] for row in self.alpha],
            "delta": self.delta,
            "margin": self.margin,
            **self.search_fields(),
            "encoder": self.encoder,
            "trained_on": self.trained_on,
            "fingerprint": self.fingerprint(),
            "tree_fingerprint": self.tree_fingerprint(),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON weights file atomically (temp file + rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AggregationWeights:
        """Read a file written by `save`; raises WeightsFileError naming file and problem."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise WeightsFileError(f"{path}: no such weights file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise WeightsFileError(f"{path}: not a readable JSON weights file ({exc})") from None
        return cls._from_dict(data, str(path))

    @classmethod
    def _from_dict(cls, data: Any, where: str) -> AggregationWeights:
        if not isinstance(data, dict):
            raise WeightsFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise WeightsFileError(
                f"{where}: format is {data.get('format')!r}, expected {FORMAT!r}"
            )
        try:
            alpha = np.asarray(data["alpha"], dtype=np.float64)
        except KeyError:
            raise WeightsFileError(f"{where}: missing 'alpha'") from None
        except (TypeError, ValueError):
            raise WeightsFileError(
                f"{where}: 'alpha' is not a rectangular list of numbers"
            ) from None
        if alpha.ndim != 2 or 0 in alpha.shape:
            raise WeightsFileError(
                f"{where}: 'alpha' must be a non-empty (n_layers, n_heads) matrix, "
                f"got shape {alpha.shape}"
            )
        for key in ("n_layers", "n_heads"):
            want = alpha.shape[0 if key == "n_layers" else 1]
            if key in data and data[key] != want:
                raise WeightsFileError(f"{where}: '{key}' is {data[key]!r} but alpha has {want}")
        if not np.all(np.isfinite(alpha)):
            raise WeightsFileError(f"{where}: 'alpha' contains NaN or infinite values")
        delta = data.get("delta", 0.0)
        if isinstance(delta, bool) or not isinstance(delta, int | float):
            raise WeightsFileError(f"{where}: 'delta' must be a number, got {delta!r}")
        if not math.isfinite(delta):
            raise WeightsFileError(f"{where}: 'delta' is {delta!r}, must be finite")
        margin = data.get("margin")
        if margin is not None and (
            isinstance(margin, bool) or not isinstance(margin, int | float)
            or not math.isfinite(margin) or margin < 0
        ):
            raise WeightsFileError(
                f"{where}: 'margin' must be null or a finite number >= 0, got {margin!r}"
            )
        search = _search_fields(data, where)
        return cls(
            alpha.astype(np.float32),
            float(delta),
            where,
            encoder=data.get("encoder"),
            trained_on=data.get("trained_on"),
            margin=None if margin is None else float(margin),
            **search,
        )


_UNTRAINED_SEARCH = {"lexical_weight": 0.0, "size_penalty": 0.0, "seed_leaves": False}


def _search_fields(data: dict[str, Any], where: str) -> dict[str, Any]:
    """lexical_weight, size_penalty (numbers >= 0) and seed_leaves (bool); absent: untrained."""
    out = dict(_UNTRAINED_SEARCH)
    for key in ("lexical_weight", "size_penalty"):
        value = data.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value >= 0
        ):
            raise WeightsFileError(f"{where}: '{key}' must be a number >= 0, got {value!r}")
        out[key] = float(value)
    seed = data.get("seed_leaves", False)
    if not isinstance(seed, bool):
        raise WeightsFileError(f"{where}: 'seed_leaves' must be true or false, got {seed!r}")
    out["seed_leaves"] = seed
    return out


PACKAGED_WEIGHTS = Path(__file__).parents[1] / "resources" / "weights.json"


def load_default_weights(path: str | os.PathLike[str] | None) -> AggregationWeights:
    """The weights file at `path`; without one, the packaged trained weights, else uniform."""
    if path is not None:
        return AggregationWeights.load(path)
    if PACKAGED_WEIGHTS.is_file():
        return AggregationWeights.load(PACKAGED_WEIGHTS)
    return AggregationWeights.uniform()
