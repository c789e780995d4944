"""Settings of a reader (`sproutrag query`, the `query-corpus` flow, the `Retriever`): the
database's own encoder unless the settings name one, the weights file they name, if any,
and an s3:// database's storage options from the environment's settings."""

from __future__ import annotations

from sproutrag.encoder.loading import PACKAGED_MODEL_ID
from sproutrag.encoder.weights import TrainedWeights
from sproutrag.errors import StoragePathError, describe_storage_error
from sproutrag.schemas.settings import Settings, is_s3, load_settings
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


def open_reader(db: str, storage_options: dict[str, str] | None = None) -> Reader:
    """`Reader.open(DB)`. An s3:// DB without STORAGE_OPTIONS takes them from the
    settings of the environment (`SPROUTRAG_STORAGE__*`, `AWS_*`: the endpoint, region
    and credentials), as the commands do; an S3 failure raises `StoragePathError`, the one
    line naming the database, the endpoint and what to check."""
    if storage_options is None and is_s3(str(db)):
        storage_options = load_settings().storage.lance_options(str(db))
    try:
        return Reader.open(db, storage_options=storage_options)
    except Exception as exc:
        line = describe_storage_error(exc, [str(db)], (storage_options or {}).get("endpoint"))
        if line is None:
            raise
        raise StoragePathError(line) from exc
