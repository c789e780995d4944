"""What training learns: the attention aggregation (index time) and the search (query time).

The method aggregates chunk attention as A = sum_{l,h} w_lh Attn(l,h) with
w = softmax(alpha) over all (layer, head) pairs: alpha shapes the trees. The search
parameters (`sproutrag.params.SearchParams`: the candidate threshold delta, the optional
relative cutoff margin, the lexical weight, the size penalty and the leaf seeds) are
used only when querying. Both are learned once (``sproutrag train``) and stored as a
small JSON file; untrained, alpha is uniform and the search is the paper's (delta 0,
cosine only). numpy only: no torch here.

`layers` (optional) limits the aggregation to the heads of the first `layers` layers:
their weights are softmax(alpha) over those heads, every deeper head weighs 0, and the
window pass stops after that layer (`sproutrag.encoder.attention.window_forward`), so
the relations cost a fraction of a whole forward (docs/results.md, "The tree's cost").

`tree_fingerprint()` covers only alpha and `layers` (what changes the stored trees); it enters the
index fingerprint (`sproutrag.ingest.index_identity`), so re-learning a query-time
parameter never re-indexes a corpus. `fingerprint()` covers the whole file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.errors import (
    SearchParamsError,
    WeightsFileError,  # noqa: F401 - also importable from here
    WeightsMismatchError,
)
from sproutrag.params import SearchParams

FORMAT = "sproutrag-weights/1"

log = logging.getLogger(__name__)

#: The search parameters the weights fingerprint always hashed (when any is trained);
#: a parameter added later enters it only when it differs from its default, so the
#: files written before it keep their fingerprints.
_FINGERPRINT_V1 = ("lexical_weight", "size_penalty", "seed_leaves")
_UNTRAINED = SearchParams().learned()
#: The search parameters every weights file holds (the later ones: when not the default).
_FILE_V1 = ("delta", "margin", *_FINGERPRINT_V1)
#: The keys of a weights file besides the search parameters (an unknown one is refused:
#: a misspelt parameter would otherwise be its default without a word).
_FILE_KEYS = frozenset({"format", "n_layers", "n_heads", "alpha", "layers", "encoder",
                        "trained_on", "fingerprint", "tree_fingerprint"})


@dataclass(frozen=True, eq=False)
class TrainedWeights:
    """alpha: float32 (n_layers, n_heads) logits; search: the learned search parameters
    (their beam width is not learned: the default); source: the file it was read from;
    encoder and trained_on: what it was trained with (recorded, not checked); layers:
    how many of the first layers the aggregation uses (None: all)."""

    alpha: np.ndarray
    search: SearchParams = SearchParams()
    source: str = "uniform"
    encoder: str | None = None
    trained_on: str | None = None
    layers: int | None = None

    def __post_init__(self) -> None:
        alpha = np.array(self.alpha, dtype=np.float32)  # a private copy
        if alpha.ndim != 2 or alpha.shape[0] < 1 or alpha.shape[1] < 1:
            raise ValueError(f"alpha must have shape (n_layers, n_heads), got {alpha.shape}")
        if not np.all(np.isfinite(alpha)):
            raise ValueError("alpha contains NaN or infinite values")
        if self.layers is not None and not (
                isinstance(self.layers, int) and 1 <= self.layers <= alpha.shape[0]):
            raise ValueError(f"layers must be an integer from 1 to {alpha.shape[0]} (the "
                             f"number of layers of alpha), got {self.layers!r}")
        if self.layers == alpha.shape[0]:
            object.__setattr__(self, "layers", None)  # all layers: one identity
        if not isinstance(self.search, SearchParams):
            raise TypeError(f"search must be a SearchParams, got {type(self.search).__name__}")
        alpha.setflags(write=False)
        object.__setattr__(self, "alpha", alpha)

    @classmethod
    def uniform(cls, n_layers: int = 6, n_heads: int = 12) -> TrainedWeights:
        """Equal weight on every (layer, head), the paper's search: the untrained default."""
        return cls(np.zeros((n_layers, n_heads), dtype=np.float32))

    @property
    def n_layers(self) -> int:
        return int(self.alpha.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.alpha.shape[1])

    @property
    def used_layers(self) -> int:
        """How many of the first layers carry weight (all unless `layers` is set)."""
        return self.layers or self.n_layers

    def mix(self) -> np.ndarray:
        """w = softmax(alpha) over the (l, h) pairs of the used layers, 0 on deeper
        layers: float32 (n_layers, n_heads), sums to 1."""
        a = self.alpha[: self.used_layers].astype(np.float64)
        e = np.exp(a - a.max())
        w = np.zeros(self.alpha.shape, dtype=np.float64)
        w[: self.used_layers] = e / e.sum()
        return w.astype(np.float32)

    def tree_fingerprint(self) -> str:
        """Short sha256 of what changes the trees: alpha (shape and float32 bytes), and
        `layers` when set (so every all-layer fingerprint stays what it was)."""
        h = hashlib.sha256(FORMAT.encode())
        h.update(np.asarray(self.alpha.shape, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(self.alpha, dtype="<f4").tobytes())
        if self.layers is not None:
            h.update(b"layers" + np.asarray([self.layers], dtype="<i8").tobytes())
        return h.hexdigest()[:16]

    def fingerprint(self) -> str:
        """Short sha256 of the whole content: alpha and every search parameter."""
        h = hashlib.sha256(self.tree_fingerprint().encode())
        learned = self.search.learned()
        h.update(np.asarray([learned.pop("delta")], dtype="<f8").tobytes())
        margin = learned.pop("margin")
        if margin is not None:
            h.update(b"margin" + np.asarray([margin], dtype="<f8").tobytes())
        rest = {k: v for k, v in learned.items() if k in _FINGERPRINT_V1 or v != _UNTRAINED[k]}
        if rest != {k: _UNTRAINED[k] for k in _FINGERPRINT_V1}:
            h.update(json.dumps(rest, sort_keys=True).encode())
        return h.hexdigest()[:16]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrainedWeights):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def _written_search(self) -> dict[str, Any]:
        """The search parameters the file holds: those of the first format always, a
        parameter added later only when it is not its default (files written before it
        existed stay byte for byte what they were)."""
        return {k: v for k, v in self.search.learned().items()
                if k in _FILE_V1 or v != _UNTRAINED[k]}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "alpha": [[float(x) for x in row] for row in self.alpha],
            **({"layers": self.layers} if self.layers is not None else {}),
            **self._written_search(),
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
    def load(cls, path: str | os.PathLike[str]) -> TrainedWeights:
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
    def _from_dict(cls, data: Any, where: str) -> TrainedWeights:
        if not isinstance(data, dict):
            raise WeightsFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise WeightsFileError(
                f"{where}: format is {data.get('format')!r}, expected {FORMAT!r}"
            )
        if unknown := sorted(set(data) - _FILE_KEYS - set(_UNTRAINED)):
            raise WeightsFileError(
                f"{where}: unknown key {', '.join(map(repr, unknown))} (a misspelt name, or a "
                f"file written by a newer sproutrag: upgrade, or retrain with this one); a "
                f"weights file holds {', '.join(sorted(_FILE_KEYS | set(_UNTRAINED)))}")
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
        if np.abs(alpha).max() > np.finfo(np.float32).max:  # infinite once stored as float32
            raise WeightsFileError(f"{where}: 'alpha' holds values beyond float32's range "
                                   f"(+/-{np.finfo(np.float32).max:.3g})")
        layers = data.get("layers")
        if layers is not None and (isinstance(layers, bool) or not isinstance(layers, int)
                                   or not 1 <= layers <= alpha.shape[0]):
            raise WeightsFileError(f"{where}: 'layers' must be an integer from 1 to "
                                   f"{alpha.shape[0]}, got {layers!r}")
        try:
            search = SearchParams.from_learned(data)
        except SearchParamsError as exc:
            raise WeightsFileError(f"{where}: {exc}") from None
        return cls(alpha.astype(np.float32), search, where, encoder=data.get("encoder"),
                   trained_on=data.get("trained_on"), layers=layers)


PACKAGED_WEIGHTS = Path(__file__).parents[1] / "resources" / "weights.json"


def load_default_weights(path: str | os.PathLike[str] | None) -> TrainedWeights:
    """The weights file at `path`; without one, the packaged trained weights, else uniform."""
    if path is not None:
        return TrainedWeights.load(path)
    if PACKAGED_WEIGHTS.is_file():
        return TrainedWeights.load(PACKAGED_WEIGHTS)
    return TrainedWeights.uniform()


def for_model(weights: TrainedWeights, model: str, n_layers: int,
              n_heads: int) -> TrainedWeights:
    """WEIGHTS for MODEL (N_LAYERS x N_HEADS). The packaged weights (learned for
    all-MiniLM-L6-v2) of another shape give way to uniform alpha over the same first
    layers (all of them when the model has fewer) with the packaged search parameters,
    and a warning says how to learn weights for MODEL; any other weights of another
    shape (a file the user named, weights a caller passed) raise WeightsMismatchError."""
    if weights.alpha.shape == (n_layers, n_heads):
        return weights
    shape = f"{weights.n_layers} layers x {weights.n_heads} heads"
    train = ("learn weights for it with `sproutrag train --docs D.jsonl --queries Q.jsonl "
             "--out DIR` (with this encoding.model) and set encoding.weights: DIR/weights.json")
    if Path(weights.source) != PACKAGED_WEIGHTS:
        raise WeightsMismatchError(
            f"weights {weights.source} were learned for a model of {shape} "
            f"({weights.encoder or 'encoder not recorded'}), but encoding.model {model} has "
            f"{n_layers} layers x {n_heads} heads: name weights learned for this model in "
            f"encoding.weights, or none (uniform attention weights); {train}")
    layers = weights.layers if weights.layers is not None and weights.layers <= n_layers else None
    log.warning("the packaged weights were learned for %s (%s); encoding.model %s has %d "
                "layers x %d heads, so its trees use uniform attention weights (untrained) "
                "and the packaged search parameters: %s", weights.encoder, shape, model,
                n_layers, n_heads, train)
    return TrainedWeights(np.zeros((n_layers, n_heads), np.float32), weights.search,
                          f"uniform ({model}; packaged search parameters)", layers=layers)
