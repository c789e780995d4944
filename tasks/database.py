"""Settings -> the database and the index identity (fingerprint) of the run's tasks
(computed by `sproutrag.ingest.index_identity`, with the run's shared encoder)."""

from __future__ import annotations

from sproutrag.schemas.settings import Settings

from sproutrag.encoder.factory import shared_encoder
from sproutrag.ingest import index_identity


def index_fields(settings: Settings) -> dict:
    """Everything that changes the stored trees and vectors (no storage settings)."""
    return index_identity.index_fields(shared_encoder(settings), chunking=settings.chunking,
                                       tree=settings.tree)


def index_fingerprint(settings: Settings) -> str:
    return index_identity.index_fingerprint(shared_encoder(settings),
                                            chunking=settings.chunking, tree=settings.tree)


def open_store(db: str, settings: Settings):
    from sproutrag.storage.store import Store

    enc = shared_encoder(settings)
    return Store(
        db, encoder_id=enc.model_id, dim=enc.dim,
        storage_options=settings.storage.lance_options(db),
    )
