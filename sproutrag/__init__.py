"""SproutRAG: attention-guided tree search with progressive embeddings for long documents.

The library: pure functions over arrays and Arrow tables (chunking, encoding, tree
building, storage, search). It never imports Prefect, flows or tasks; orchestration,
the command line included (flows/cli.py), lives in flows/ and tasks/
(docs/architecture.md). Heavy dependencies (torch, transformers, lancedb) load lazily.
"""

from __future__ import annotations

__version__ = "0.1.0"
