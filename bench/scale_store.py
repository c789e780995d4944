"""The store alone at scale (`bench/scale.py --store-only N`): the documents of a JSONL
corpus chunked by the index's chunker, their leaf vectors drawn from a pool of real chunk
vectors computed once, trees built over a chain of relations, stored in batches cut as
the flow cuts them (`pipeline.batch_chars`) and tidied as the flow tidies, then
maintained once; the documents carry the flow's fingerprint and content hashes, so an
index run over the same corpus finds them unchanged. Not a test."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import numpy as np


def _documents(corpus: str) -> Iterator:
    from sproutrag.documents import SourceDocument, content_hash

    with open(corpus, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            raw = raw.rstrip(b"\n")
            d = json.loads(raw)
            yield SourceDocument(d["doc_id"], f"{corpus}:{lineno}", d["text"],
                                 content_hash(d["text"]), size=len(raw))


def _pool(corpus: str, encoder, chunking: dict, size: int = 2048) -> np.ndarray:
    """SIZE real chunk vectors of the corpus's first documents."""
    from sproutrag.ingest.chunking import chunk_text

    texts = []
    for doc in _documents(corpus):
        texts += [doc.text[s:e] for s, e in chunk_text(doc.text, **chunking)]
        if len(texts) >= size:
            break
    return encoder.encode_texts(texts[:size])


def _indexed(doc, chunking: dict, pool: np.ndarray, rng) -> object:
    from sproutrag.ingest.chunking import chunk_text
    from sproutrag.storage.rows import IndexedDocument
    from sproutrag.trees.tree import build_tree

    spans = np.asarray(chunk_text(doc.text, **chunking), dtype=np.int64).reshape(-1, 2)
    n = len(spans)
    vectors = pool[rng.integers(0, len(pool), n)]
    i = np.arange(n - 1)
    tree = build_tree(vectors, i, i + 1, rng.uniform(0.1, 1, n - 1).astype(np.float32))
    return IndexedDocument(doc, spans, tree)


def store_only(corpus: str, db: str, n: int) -> dict:
    """Store the N documents of CORPUS into DB as an index run would (see the module
    docstring); returns seconds and counts."""
    from sproutrag.schemas.settings import load_settings
    from sproutrag.tasks.database import index_fingerprint, open_store

    from sproutrag.encoder.factory import shared_encoder
    from sproutrag.ingest.batching import batches

    settings = load_settings()
    pipeline, chunking = settings.pipeline, settings.chunking.model_dump()
    fp = index_fingerprint(settings)
    pool = _pool(corpus, shared_encoder(settings), chunking)
    store, rng = open_store(db, settings), np.random.default_rng(0)
    t0, n_nodes, prepare = time.perf_counter(), 0, 0.0
    for batch in batches(_documents(corpus), max_chars=pipeline.batch_chars,
                         max_docs=pipeline.batch_docs):
        t1 = time.perf_counter()
        items = [_indexed(d, chunking, pool, rng) for d in batch]
        prepare += time.perf_counter() - t1
        n_nodes += store.write(items, fp, stored=[])
        store.tidy(run_id="bench", keep_versions_days=pipeline.keep_versions_days,
                   min_small=pipeline.compact_fragments)
    t2 = time.perf_counter()
    store.maintain(run_id="bench", keep_versions_days=pipeline.keep_versions_days,
                   min_fragments=pipeline.optimize_fragments,
                   min_old_versions=pipeline.prune_versions)
    return {"wall_s": time.perf_counter() - t0, "prepare_s": prepare,
            "maintain_s": time.perf_counter() - t2, "n_nodes": n_nodes}
