"""Settings of a reader (`sproutrag query`, the `query-corpus` flow): the database's own
encoder unless the settings name one, and the weights file they name, if any."""

from __future__ import annotations

from sproutrag.encoder.loading import PACKAGED_MODEL_ID
from sproutrag.encoder.weights import TrainedWeights
from sproutrag.schemas.settings import Settings
from sproutrag.storage.reader import Reader


def reader_settings(reader: Reader, settings: Settings) -> Settings:
    """SETTINGS with the encoder the database READER reads was built with (its model and
    query truncation) where `encoding.model` is unset; unchanged where it is set (the
    Retriever then refuses a model whose content differs from the database's)."""
    if settings.encoding.model is not None:
        return settings
    info = reader.latest_info()
    model = info.encoder if info is not None else reader.store.encoder_id
    update: dict[str, object] = {"model": None if model == PACKAGED_MODEL_ID else model}
    if info is not None and "chunk_max_tokens" in info.encoding():
        update["chunk_max_tokens"] = info.encoding()["chunk_max_tokens"]
    encoding = settings.encoding.model_copy(update=update)
    return settings.model_copy(update={"encoding": encoding})


def reader_weights(settings: Settings) -> TrainedWeights | None:
    """The weights file the settings name (its search parameters replace the database's
    defaults; its alpha must be the database's), or None: the database's defaults."""
    path = settings.encoding.weights
    return TrainedWeights.load(path) if path is not None else None
