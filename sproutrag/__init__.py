"""SproutRAG: attention-guided tree search with progressive embeddings for long documents.

The library: pure functions over arrays and Arrow tables, in packages a reader can follow
the pipeline through (docs/architecture.md): `ingest` (corpus, chunks, the diff, the
stages), `encoder` (vectors and attention relations), `trees` (single linkage,
progressive embeddings), `storage` (the LanceDB tables), `search` (tree, leaves and flat
mode; the `Retriever`), `learn` (training and evaluation). It never imports Prefect,
flows or tasks; orchestration, the command line included (flows/cli.py), lives in
flows/ and tasks/.

The public API is what this module exports (imported lazily: `import sproutrag` loads
neither torch nor lancedb)::

    from sproutrag import Retriever
    hits = Retriever(".sproutrag/db").search("termination notice period", k=5)
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def _installed_version() -> str:
    """The installed package's version (pyproject.toml; CHANGELOG.md says what changed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sproutrag")
    except PackageNotFoundError:  # a checkout that was not installed
        return "unknown (not installed)"


__version__ = _installed_version()

#: name -> module that defines it: the public API.
_PUBLIC = {
    "Retriever": "sproutrag.search.retriever",
    "Hit": "sproutrag.search.hits",
    "Context": "sproutrag.search.context",
    "TrainedWeights": "sproutrag.encoder.weights",
    "SearchParams": "sproutrag.params",
    "QueryError": "sproutrag.errors",
    "Encoder": "sproutrag.encoder.encoder",
    "Store": "sproutrag.storage.store",
    "Tree": "sproutrag.trees.tree",
    "build_tree": "sproutrag.trees.tree",
    "validate_tree": "sproutrag.trees.tree",
    "chunk_text": "sproutrag.ingest.chunking",
    "discover": "sproutrag.ingest.corpus",
    "SourceDocument": "sproutrag.documents",
    "check_database": "sproutrag.storage.check",
}

__all__ = ["__version__", *_PUBLIC]

def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'sproutrag' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
