"""The yardstick: the search a LanceDB user builds in fifty lines, scored like ours.

Two baselines for `sproutrag evaluate` (modes `lancedb_bm25` and `lancedb_hybrid`), built
with LanceDB's own documented API and nothing of the project's search:

* units: plain two-sentence chunks (`plain_chunks`: sentences end at ``.``, ``!`` or
  ``?`` followed by white space, and at every line end; two consecutive sentences of one
  line make a chunk), the encoder's chunk-alone embeddings (`Encoder.encode_texts`,
  all-MiniLM-L6-v2 by default: what sentence-transformers gives);
* one LanceDB table (doc_id, start, end, text, vector) with the native full-text index
  on `text` (`create_index(config=FTS(...))`: LanceDB's English analyzer, its defaults:
  stemming, stop words removed, lower case, ASCII folding);
* `lancedb_bm25`: `table.search(query, query_type="fts")`, LanceDB's BM25;
* `lancedb_hybrid`: `table.search(query_type="hybrid").vector(v).text(query)` with
  `RRFReranker()` (the documented default fusion);

each restricted to the query's documents by a prefilter (`where doc_id IN (...)`), the
first k rows are the ranked units. The table lives in a temporary folder.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from sproutrag.storage.filters import doc_filter

#: Evaluation modes of the baselines and their report row names.
ANCHORS = {
    "lancedb_bm25": "LanceDB BM25 (native FTS, two-sentence chunks)",
    "lancedb_hybrid": "LanceDB hybrid (vector + FTS, RRF, two-sentence chunks)",
}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def plain_chunks(text: str, sentences: int = 2) -> list[tuple[int, int]]:
    """(start, end) of chunks of SENTENCES consecutive regex sentences of one line each:
    what a user writes without a sentence model. Offsets index `text`; no chunk is
    blank or crosses a line end."""
    out = []
    pos = 0
    for line in text.splitlines(keepends=True):
        bounds, start = [], 0
        for m in _SENTENCE_END.finditer(line):
            bounds.append((start, m.start()))
            start = m.end()
        bounds.append((start, len(line.rstrip())))
        bounds = [(s, e) for s, e in bounds if line[s:e].strip()]
        for k in range(0, len(bounds), sentences):
            group = bounds[k : k + sentences]
            s, e = group[0][0], group[-1][1]
            s += len(line[s:e]) - len(line[s:e].lstrip())
            out.append((pos + s, pos + e))
        pos += len(line)
    return out


#: Lance's log filter while the baselines run (`quiet_lance_deprecations`).
LANCE_LOG_FILTER = "warn,lance::dataset::scanner=error"


def quiet_lance_deprecations() -> None:
    """Keep LanceDB's hybrid baseline from logging a deprecation warning per question:
    its full-text half selects our columns without `_score`, which Lance (scanner)
    warns will stop being returned; LanceDB reads it there itself. Other warnings stay;
    a LANCEDB_LOG the user set is kept. Read once, when LanceDB is first imported."""
    os.environ.setdefault("LANCEDB_LOG", LANCE_LOG_FILTER)


class AnchorTable:
    """The baselines' LanceDB table over DOCS ({doc_id, text} dicts), in a temporary
    folder removed by `close` (or on leaving a `with` block)."""

    def __init__(self, docs: Sequence[dict[str, Any]], encoder: Any) -> None:
        import lancedb
        import pyarrow as pa
        from lancedb.index import FTS

        rows: dict[str, list] = {"doc_id": [], "start": [], "end": [], "text": []}
        for d in docs:
            for s, e in plain_chunks(d["text"]):
                for col, v in zip(rows, (str(d["doc_id"]), s, e, d["text"][s:e]), strict=True):
                    rows[col].append(v)
        vecs = np.asarray(encoder.encode_texts(rows["text"]), dtype=np.float32)
        self._dir = tempfile.TemporaryDirectory(prefix="sproutrag-anchors-")
        table = pa.table({**rows, "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(vecs.ravel(), pa.float32()), vecs.shape[1])})
        self.table = lancedb.connect(self._dir.name).create_table("chunks", table)
        self.table.create_index("text", config=FTS(language="English", stem=True,
                                                   remove_stop_words=True))
        self.spans = {}
        for d, s, e in zip(rows["doc_id"], rows["start"], rows["end"], strict=True):
            self.spans.setdefault(d, []).append((s, e))
        self.spans = {d: np.asarray(v, np.int64) for d, v in self.spans.items()}

    def __enter__(self) -> AnchorTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._dir.cleanup()

    def search(self, mode: str, query: str, qvec: np.ndarray, doc_ids: Sequence[str],
               k: int) -> list[tuple[str, int, int]]:
        """The first K units (doc_id, start, end) of MODE for QUERY within DOC_IDS."""
        from lancedb.rerankers import RRFReranker

        where = doc_filter(doc_ids)
        if mode == "lancedb_bm25":
            q = self.table.search(query, query_type="fts")
        elif mode == "lancedb_hybrid":
            q = (self.table.search(query_type="hybrid").vector(np.asarray(qvec, np.float32))
                 .text(query).rerank(RRFReranker()))
        else:
            raise ValueError(f"unknown baseline {mode!r}; choose from {', '.join(ANCHORS)}")
        # BM25 selects its `_score` (Lance warns, per search, that a full-text search
        # without it will stop returning it); the hybrid's own full-text half still warns
        # (LanceDB's own: `quiet_lance_deprecations`)
        columns = ["doc_id", "start", "end", *(["_score"] if mode == "lancedb_bm25" else [])]
        res = q.where(where, prefilter=True).limit(k).select(columns)
        t = res.to_arrow()
        return list(zip(t.column("doc_id").to_pylist(), t.column("start").to_pylist(),
                        t.column("end").to_pylist(), strict=True))[:k]

    def runs(self, mode: str, queries: Sequence[dict[str, Any]], qvecs: np.ndarray,
             ks: Sequence[int]) -> dict[int, list[list[tuple[str, int, int]]]]:
        """Ranked units per k per query (the largest k searched once, cut for the rest)."""
        top = max(ks)
        ranked = [self.search(mode, q["query"], v, [str(d) for d in q["doc_ids"]], top)
                  for q, v in zip(queries, qvecs, strict=True)]
        return {k: [r[:k] for r in ranked] for k in ks}
