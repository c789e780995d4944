"""The search parameters of a database as its tables are now (a `Retriever`'s).

They default to those the database was indexed with (its `index_settings` table,
`sproutrag.storage.index_info.search_defaults`: a weights file given instead must have
the database's alpha, an encoder whose content differs from the indexing one is
refused), then the caller's overrides. They are resolved again whenever the tables
change, so a long-lived Retriever follows re-index runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sproutrag.errors import StaleIndexError
from sproutrag.params import SearchParams
from sproutrag.search.current import Current
from sproutrag.storage.index_info import search_defaults
from sproutrag.storage.reader import Reader


class DatabaseParams:
    """READER's search parameters for ENCODER (and WEIGHTS, when given) at the tables'
    version CURRENT() reads, with OVERRIDES (`SearchParams.overrides`, checked) applied;
    cached per version."""

    def __init__(self, reader: Reader, encoder: Any, weights: Any,
                 overrides: Mapping[str, Any], current: Callable[[], Current]) -> None:
        self.reader, self.encoder, self.weights = reader, encoder, weights
        self.overrides, self.current = dict(overrides), current
        self._cached: tuple[tuple[int, int], SearchParams, Any] | None = None

    def resolve(self) -> tuple[SearchParams, Any]:
        """(search parameters, their defaults: `SearchDefaults`) for the tables as they
        are now: the database's index settings (or the weights, or the encoder's), then
        the overrides."""
        current = self.current()
        infos_version, stored = self.reader.index_infos()
        key = (current.version, infos_version)
        if self._cached is None or self._cached[0] != key:
            infos = {f: stored[f] for f in current.fingerprints if f in stored}
            base = search_defaults(infos, encoder=self.encoder, weights=self.weights,
                                   uri=self.reader.store.uri)
            self._cached = (key, replace(base.params, **self.overrides), base)
        return self._cached[1], self._cached[2]

    @property
    def fills_k(self) -> bool:
        """Whether tree and leaves modes return k units whenever the searched documents
        hold k: yes with the database's threshold and margin (they order the evidence:
        what passes them comes first), no with a threshold or a margin given explicitly
        (then a cutoff, as flat mode's threshold; an explicit margin of None is none)."""
        return "threshold" not in self.overrides and self.overrides.get("margin") is None

    @property
    def flat_threshold(self) -> float | None:
        """Flat mode cuts only at an explicit threshold."""
        return self.overrides.get("threshold")


def given_weights(weights: Any) -> Any:
    """A `Retriever`'s WEIGHTS: None, a `TrainedWeights`, or a weights file's path (loaded
    here: `WeightsFileError` names a bad file); a `TypeError` naming anything else."""
    import os

    from sproutrag.encoder.weights import TrainedWeights

    if isinstance(weights, str | os.PathLike):
        return TrainedWeights.load(weights)
    if weights is not None and not isinstance(weights, TrainedWeights):
        raise TypeError("weights must be a TrainedWeights or a weights file's path, got "
                        f"{type(weights).__name__}")
    return weights


def database_encoder(reader: Reader) -> Any:
    """The encoder READER's database names (model, query truncation), packaged weights."""
    from sproutrag.encoder.factory import shared_encoder
    from sproutrag.schemas.settings import EncodingSettings

    fields = reader.encoding_fields()
    return shared_encoder(EncodingSettings(
        model=reader.store.encoder_id, chunk_max_tokens=fields.get("chunk_max_tokens", 256)))


def check_query_encoder(encoder: Any, store: Any) -> None:
    """`StaleIndexError` unless ENCODER is the one STORE's database was built with (its
    model id and dimension)."""
    if encoder.model_id != store.encoder_id or encoder.dim != store.dim:
        raise StaleIndexError(
            f"database {store.uri!r} was built with encoder {store.encoder_id!r} "
            f"(dim {store.dim}, index fingerprint {stored_fingerprints(store)}); this query "
            f"uses {encoder.model_id!r} (dim {encoder.dim}): query with the encoder the "
            "database was built with (settings encoding.model)")


def stored_fingerprints(store: Any) -> str:
    """The index fingerprints of STORE's documents, for error messages."""
    tbl = store.table("documents")
    if tbl is None:
        return "none"
    rows = tbl.search().select(["index_fingerprint"]).limit(None).to_arrow()
    return ", ".join(sorted(set(rows.column(0).to_pylist()))) or "none"


__all__ = ["DatabaseParams", "check_query_encoder", "database_encoder", "stored_fingerprints"]
