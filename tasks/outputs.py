"""What each per-batch task hands to the next: Parquet paths, failures, seconds taken."""

from __future__ import annotations

from dataclasses import dataclass, field

from sproutrag.documents import Failure
from sproutrag.storage.store import IndexedDocument


@dataclass(frozen=True)
class Chunked:
    chunks_path: str
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Encoded:
    chunks_path: str
    embeddings_path: str
    relations_path: str
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Built:
    items: list[IndexedDocument]
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
