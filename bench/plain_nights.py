"""The plain reference of `bench/nights.py`: what a sentence-transformers + LanceDB user
keeps under the same nightly changes. One table `chunks` (doc_id, idx, start, end, text,
vector: the index's chunks, no tree), built from the leaves of the stored database, with
LanceDB's default vector index (cosine IVF_PQ) once it holds `indexes.ANN_MIN_ROWS` rows.
Each night: the corpus is read and hashed against a manifest of the last night's hashes
(kept in memory: the cheapest a plain user can do), the changed documents' chunks are
encoded by sentence-transformers, their old rows deleted and the new ones added, then
`table.optimize(cleanup_older_than=...)` with the same retention as the index run
(LanceDB's own compaction, index update and version cleanup). Not a test."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

TABLE = "chunks"
COLUMNS = ["doc_id", "idx", "start", "end", "text", "vector"]


def _hashes(corpus: Path) -> dict[str, str]:
    from sproutrag.documents import content_hash

    with open(corpus, encoding="utf-8") as f:
        return {d["doc_id"]: content_hash(d["text"]) for d in map(json.loads, f)}


class PlainIndex:
    """The reference's table at DB and the manifest of the corpus it holds."""

    def __init__(self, db: str, corpus: Path) -> None:
        from sentence_transformers import SentenceTransformer

        from sproutrag.encoder.encoder import DEFAULT_MODEL

        self.db, self.manifest = db, _hashes(corpus)
        self.model = SentenceTransformer(DEFAULT_MODEL, device="cpu")

    @classmethod
    def from_leaves(cls, stored_db: str, db: str, corpus: Path) -> PlainIndex:
        """The leaves of STORED_DB's `nodes` (the same chunks and vectors) as DB's table."""
        import lancedb
        import pyarrow as pa

        from sproutrag.storage.indexes import ANN_MIN_ROWS

        nodes = lancedb.connect(stored_db).open_table("nodes")
        batches = (nodes.search().where("height = 0").select(COLUMNS).limit(None)
                   .to_batches())
        first = next(batches)
        schema = pa.schema([f.with_nullable(False) for f in first.schema])
        tbl = lancedb.connect(db).create_table(
            TABLE, data=pa.RecordBatchReader.from_batches(
                schema, (b.cast(schema) for b in [first, *batches])))
        if tbl.count_rows() >= ANN_MIN_ROWS:
            tbl.create_index(metric="cosine")  # LanceDB's default kind (IVF_PQ)
        return cls(db, corpus)

    def night(self, corpus: Path, keep: timedelta) -> float:
        """One night: the changed documents re-indexed, the table optimized; seconds."""
        import lancedb
        import pyarrow as pa
        from index import leaf_rows  # bench/index.py: the index's chunks of documents

        t0 = time.perf_counter()
        now = _hashes(corpus)
        changed = {d for d, h in now.items() if self.manifest.get(d) != h}
        gone = self.manifest.keys() - now.keys()
        with open(corpus, encoding="utf-8") as f:
            rows = leaf_rows([d for d in map(json.loads, f) if d["doc_id"] in changed])
        vecs = self.model.encode(rows["text"], batch_size=64, normalize_embeddings=True)
        tbl = lancedb.connect(self.db).open_table(TABLE)
        ids = sorted(changed | gone)
        for i in range(0, len(ids), 1000):
            tbl.delete("doc_id IN (" + ", ".join(f"'{d}'" for d in ids[i:i + 1000]) + ")")
        table = pa.table({**rows, "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(vecs.ravel(), pa.float32()), vecs.shape[1])})
        tbl.add(table.cast(tbl.schema))
        tbl.optimize(cleanup_older_than=keep)
        self.manifest = now
        return time.perf_counter() - t0


def disk_ratio(db: str) -> float:
    """The table's bytes on disk over the Arrow bytes of its live rows."""
    import scale

    return scale.disk_bytes(db, names=(TABLE,)) / scale.live_bytes(db, names=(TABLE,))
