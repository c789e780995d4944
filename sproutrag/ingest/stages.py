"""The indexing stages as plain functions over documents and Arrow tables.

chunk -> encode -> build_trees, each taking a batch of documents and returning its
output plus per-document `Failure`s: one bad document never stops the batch. The
Prefect tasks in tasks/ read and write the Parquet intermediates around these calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa

from sproutrag.documents import Failure, SourceDocument
from sproutrag.errors import SproutragError
from sproutrag.ingest.chunking import chunk_text
from sproutrag.schemas import tables
from sproutrag.storage.store import IndexedDocument
from sproutrag.trees.tree import build_tree

if TYPE_CHECKING:
    from sproutrag.encoder.encoder import Encoder

log = logging.getLogger(__name__)
T = TypeVar("T")


def _isolate(
    items: Sequence[T], fn: Callable[[T], object], name: Callable[[T], str], stage: str
) -> tuple[list[tuple[T, object]], list[Failure]]:
    """FN of every item; an item whose call raises is a `Failure` (the run goes on). An
    exception the project does not raise on purpose is logged with its traceback: a
    document that fails on a bug is reported, the bug is not hidden."""
    done, failures = [], []
    for item in items:
        try:
            done.append((item, fn(item)))
        except Exception as exc:  # noqa: BLE001 - a bad document is reported, not fatal
            log.warning("%s failed for %s: %s", stage, name(item), exc,
                        exc_info=not isinstance(exc, SproutragError))
            failures.append(Failure(name(item), f"{stage}: {type(exc).__name__}: {exc}"))
    return done, failures


def is_out_of_memory(exc: BaseException) -> bool:
    """A device or host out of memory (torch's CUDA / CPU allocators, Python)."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or "out of memory" in text or (
        "can't allocate memory" in text)


@contextmanager
def _fewer_tokens(encoder: Encoder) -> Iterator[bool]:
    """The encoder's forward batches halved for the block (False: already at the floor,
    512 tokens); the device's cached memory released first."""
    before = encoder.tokens_per_batch
    smaller = encoder.batch_tokens // 2
    if smaller < 512:
        yield False
        return
    if str(encoder.device).startswith("cuda"):
        import torch

        torch.cuda.empty_cache()
    encoder.tokens_per_batch = smaller
    try:
        yield True
    finally:
        encoder.tokens_per_batch = before


def _encode(encoder: Encoder, pairs: list, docs: list[SourceDocument]) -> list:
    """`encode_documents` of PAIRS; out of memory, in halves of the batch, and for one
    document with forward batches half as large, down to 512 tokens."""
    try:
        return encoder.encode_documents(pairs)
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        if len(pairs) > 1:
            half = len(pairs) // 2
            log.warning("out of memory encoding %d documents: in two halves", len(pairs))
            return (_encode(encoder, pairs[:half], docs[:half])
                    + _encode(encoder, pairs[half:], docs[half:]))
        with _fewer_tokens(encoder) as smaller:
            if not smaller:
                raise
            log.warning("out of memory encoding %s: forward batches of %d tokens",
                        docs[0].doc_id, encoder.tokens_per_batch)
            return _encode(encoder, pairs, docs)


def chunk_documents(
    docs: Sequence[SourceDocument], *, sentences_per_chunk: int, max_chunk_chars: int,
    within_paragraphs: bool = False, respect_structure: bool = False,
    join_max_chars: int | None = None, lists: bool = False, sentence_rules: int = 2,
) -> tuple[pa.Table, list[Failure]]:
    """Sentence chunks of every document, as a `chunks` table."""

    def spans(doc: SourceDocument) -> list[tuple[int, int]]:
        out = chunk_text(
            doc.text, sentences_per_chunk=sentences_per_chunk, max_chunk_chars=max_chunk_chars,
            within_paragraphs=within_paragraphs, respect_structure=respect_structure,
            join_max_chars=join_max_chars, lists=lists, sentence_rules=sentence_rules,
        )
        if not out:
            raise ValueError("no sentences found (the text is only whitespace)")
        return out

    done, failures = _isolate(docs, spans, lambda d: d.doc_id, "chunk")
    cols: dict[str, list] = {"doc_id": [], "idx": [], "start": [], "end": [], "text": []}
    for doc, doc_spans in done:
        for k, (s, e) in enumerate(doc_spans):
            cols["doc_id"].append(doc.doc_id)
            cols["idx"].append(k)
            cols["start"].append(s)
            cols["end"].append(e)
            cols["text"].append(doc.text[s:e])
    return pa.table(cols, schema=tables.CHUNKS), failures


def spans_by_doc(chunks: pa.Table) -> dict[str, np.ndarray]:
    """doc_id -> int64 (n, 2) chunk spans in chunk order."""
    out: dict[str, np.ndarray] = {}
    data = chunks.sort_by([("doc_id", "ascending"), ("idx", "ascending")]).to_pydict()
    for doc_id, s, e in zip(data["doc_id"], data["start"], data["end"]):
        out.setdefault(doc_id, []).append((s, e))
    return {k: np.asarray(v, dtype=np.int64).reshape(-1, 2) for k, v in out.items()}


def encode_chunks(
    docs: Sequence[SourceDocument], chunks: pa.Table, encoder: Encoder
) -> tuple[pa.Table, pa.Table, list[Failure]]:
    """Chunk embeddings and sparse attention relations (`embeddings`, `relations`)."""
    spans = spans_by_doc(chunks)
    todo = [d for d in docs if d.doc_id in spans]
    pairs = [(d.text, [tuple(x) for x in spans[d.doc_id].tolist()]) for d in todo]
    try:
        results = list(zip(todo, _encode(encoder, pairs, todo)))
        failures: list[Failure] = []
    except Exception:  # noqa: BLE001 - retry one by one to find the bad document
        log.warning("batch encoding failed; encoding documents one at a time")
        results, failures = _isolate(
            list(zip(todo, pairs)), lambda x: _encode(encoder, [x[1]], [x[0]])[0],
            lambda x: x[0].doc_id, "encode")
        results = [(doc, enc) for (doc, _), enc in results]
    return (_embedding_table(results, encoder.dim), _relation_table(results), failures)


def _repeat_ids(doc_ids: list[str], counts: list[int]) -> pa.Array:
    """Each of DOC_IDS COUNTS times, as one string array."""
    return pa.array(doc_ids, pa.string()).take(np.repeat(np.arange(len(doc_ids)), counts))


def _embedding_table(results: list, dim: int) -> pa.Table:
    """The `embeddings` rows of (document, encoding) RESULTS, built as whole columns."""
    counts = [len(enc.embeddings) for _, enc in results]
    vectors = np.concatenate([np.zeros((0, dim), np.float32)] + [
        np.asarray(enc.embeddings, dtype=np.float32).reshape(-1, dim) for _, enc in results])
    idx = np.concatenate([np.zeros(0, np.int32)] + [np.arange(c, dtype=np.int32)
                                                     for c in counts])
    return pa.table({
        "doc_id": _repeat_ids([doc.doc_id for doc, _ in results], counts), "idx": idx,
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
    }, schema=tables.embeddings_schema(dim))


def _relation_table(results: list) -> pa.Table:
    """The `relations` rows of (document, encoding) RESULTS, built as whole columns."""

    def flat(col: str, dtype) -> np.ndarray:
        return np.concatenate([np.zeros(0, dtype)] + [np.asarray(getattr(enc, col), dtype)
                                                       for _, enc in results])

    return pa.table({
        "doc_id": _repeat_ids([doc.doc_id for doc, _ in results],
                              [len(enc.rel_i) for _, enc in results]),
        "i": flat("rel_i", np.int32), "j": flat("rel_j", np.int32), "m": flat("rel_m", np.float32),
    }, schema=tables.RELATIONS)


def _doc_ranges(table: pa.Table, then: str | None = None) -> tuple[pa.Table, dict]:
    """TABLE sorted by doc_id (then by THEN), and each doc_id's (start, stop) rows in it."""
    if table.num_rows == 0:
        return table, {}
    table = table.sort_by([("doc_id", "ascending")] + ([(then, "ascending")] if then else []))
    ids = table.column("doc_id").to_pylist()
    ranges, start = {}, 0
    for k in range(1, len(ids) + 1):
        if k == len(ids) or ids[k] != ids[start]:
            ranges[ids[start]] = (start, k)
            start = k
    return table, ranges


def build_trees(
    docs: Sequence[SourceDocument],
    chunks: pa.Table,
    embeddings: pa.Table,
    relations: pa.Table,
    *,
    parent_embedding: str,
) -> tuple[list[IndexedDocument], list[Failure]]:
    """One attention tree per encoded document."""
    spans = spans_by_doc(chunks)
    embeddings, emb = _doc_ranges(embeddings, "idx")
    relations, rel = _doc_ranges(relations)
    vectors = (embeddings.column("vector").combine_chunks().flatten().to_numpy()
               .reshape(embeddings.num_rows, -1).astype(np.float32)
               if embeddings.num_rows else None)
    rel_i, rel_j, rel_m = (relations.column(c).to_numpy().astype(t) for c, t in
                           (("i", np.int64), ("j", np.int64), ("m", np.float32)))

    def one(doc: SourceDocument) -> IndexedDocument:
        a, b = emb[doc.doc_id]
        r = slice(*rel.get(doc.doc_id, (0, 0)))
        tree = build_tree(vectors[a:b], rel_i[r], rel_j[r], rel_m[r],
                          parent_embedding=parent_embedding)
        return IndexedDocument(doc, spans[doc.doc_id], tree)

    done, failures = _isolate(
        [d for d in docs if d.doc_id in emb], one, lambda d: d.doc_id, "build_trees"
    )
    return [item for _, item in done], failures
