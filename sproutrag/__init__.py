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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see of the lazy names (`_PUBLIC`, kept in step)
    from sproutrag.documents import SourceDocument as SourceDocument
    from sproutrag.encoder.encoder import Encoder as Encoder
    from sproutrag.encoder.weights import TrainedWeights as TrainedWeights
    from sproutrag.errors import QueryError as QueryError
    from sproutrag.ingest.chunking import chunk_text as chunk_text
    from sproutrag.ingest.corpus import discover as discover
    from sproutrag.params import SearchParams as SearchParams
    from sproutrag.search.context import Context as Context
    from sproutrag.search.context import ContextSpan as ContextSpan
    from sproutrag.search.hits import Hit as Hit
    from sproutrag.search.retriever import Retriever as Retriever
    from sproutrag.storage.check import check_database as check_database
    from sproutrag.storage.store import Store as Store
    from sproutrag.trees.tree import Tree as Tree
    from sproutrag.trees.tree import build_tree as build_tree
    from sproutrag.trees.tree import validate_tree as validate_tree


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
    "ContextSpan": "sproutrag.search.context",
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
