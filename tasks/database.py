"""Settings -> the database and the index identity (fingerprint) of the run's tasks."""

from __future__ import annotations

from schemas.settings import Settings, fingerprint
from sproutrag.encoder.factory import shared_encoder


def index_fields(settings: Settings) -> dict:
    """Everything that changes the stored trees and vectors (no storage settings)."""
    return {**shared_encoder(settings).fingerprint_fields(), **settings.tree_fields()}


def index_fingerprint(settings: Settings) -> str:
    return fingerprint(index_fields(settings))


def open_store(db: str, settings: Settings):
    from sproutrag.storage.store import Store

    enc = shared_encoder(settings)
    return Store(
        db, encoder_id=enc.model_id, dim=enc.dim,
        storage_options=settings.storage.lance_options(db),
    )
