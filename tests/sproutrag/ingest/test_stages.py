"""Tests of sproutrag.ingest.stages' tables: the encode stage's rows are each document's
encoding in order, and build_trees finds each document's rows wherever they are."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sproutrag.schemas import tables

from sproutrag.documents import SourceDocument
from sproutrag.encoder.encoder import DocumentEncoding
from sproutrag.ingest.stages import _embedding_table, _relation_table, build_trees
from sproutrag.trees.tree import build_tree


def encoding(n: int, rng: np.random.Generator) -> DocumentEncoding:
    i = np.arange(n - 1, dtype=np.int32)
    return DocumentEncoding(rng.normal(size=(n, 4)).astype(np.float32), i, i + 1,
                            rng.uniform(0.1, 1, n - 1).astype(np.float32), 1, 10 * n)


def test_tables_then_trees_equal_each_document_alone():
    rng = np.random.default_rng(0)
    sizes = {"b": 4, "a": 1, "c": 6, "d": 2}
    docs = [SourceDocument(d, f"{d}.txt", "x" * 100, "h") for d in sizes]
    results = [(doc, encoding(sizes[doc.doc_id], rng)) for doc in docs]
    emb, rel = _embedding_table(results, 4), _relation_table(results)
    assert emb.schema == tables.embeddings_schema(4) and rel.schema == tables.RELATIONS
    assert emb.column("doc_id").to_pylist() == [d for d, n in sizes.items() for _ in range(n)]
    assert emb.column("idx").to_pylist() == [k for n in sizes.values() for k in range(n)]
    assert rel.num_rows == sum(n - 1 for n in sizes.values())
    # rows in any order, as a Parquet round trip or another writer may give them
    emb = emb.take(rng.permutation(emb.num_rows))
    rel = rel.take(rng.permutation(rel.num_rows))
    spans = [(d, k, 10 * k, 10 * k + 9) for d, n in sizes.items() for k in range(n)]
    chunks = pa.table({"doc_id": [s[0] for s in spans], "idx": [s[1] for s in spans],
                       "start": [s[2] for s in spans], "end": [s[3] for s in spans],
                       "text": ["t"] * len(spans)}, schema=tables.CHUNKS)
    items, failures = build_trees(docs, chunks, emb, rel, parent_embedding="mean_of_children")
    assert not failures and [i.doc.doc_id for i in items] == list(sizes)
    for item, (_, enc) in zip(items, results, strict=True):
        want = build_tree(enc.embeddings, enc.rel_i.astype(np.int64),
                          enc.rel_j.astype(np.int64), enc.rel_m)
        np.testing.assert_array_equal(item.tree.vectors, want.vectors)
        np.testing.assert_array_equal(item.tree.parent, want.parent)
        np.testing.assert_array_equal(item.spans[:, 0], 10 * np.arange(item.tree.n))
    assert _embedding_table([], 4).num_rows == _relation_table([]).num_rows == 0
