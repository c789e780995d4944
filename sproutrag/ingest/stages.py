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
    emb = {"doc_id": [], "idx": [], "vector": []}
    rel = {"doc_id": [], "i": [], "j": [], "m": []}
    for doc, enc in results:
        n = len(enc.embeddings)
        emb["doc_id"] += [doc.doc_id] * n
        emb["idx"] += list(range(n))
        emb["vector"] += list(enc.embeddings.astype(np.float32))
        rel["doc_id"] += [doc.doc_id] * len(enc.rel_i)
        rel["i"] += enc.rel_i.tolist()
        rel["j"] += enc.rel_j.tolist()
        rel["m"] += enc.rel_m.tolist()
    emb_table = pa.table(emb, schema=tables.embeddings_schema(encoder.dim))
    return emb_table, pa.table(rel, schema=tables.RELATIONS), failures


def _group_rows(table: pa.Table, key: str = "doc_id") -> dict[str, pa.Table]:
    if table.num_rows == 0:
        return {}
    table = table.sort_by(key)
    ids = table.column(key).to_pylist()
    groups, start = {}, 0
    for k in range(1, len(ids) + 1):
        if k == len(ids) or ids[k] != ids[start]:
            groups[ids[start]] = table.slice(start, k - start)
            start = k
    return groups


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
    emb, rel = _group_rows(embeddings), _group_rows(relations)

    def one(doc: SourceDocument) -> IndexedDocument:
        e = emb[doc.doc_id].sort_by("idx")
        vectors = e.column("vector").combine_chunks().flatten().to_numpy()
        vectors = vectors.reshape(e.num_rows, -1).astype(np.float32)
        r = rel.get(doc.doc_id)
        ri, rj, rm = (
            (np.asarray(r.column(c).to_numpy(), dtype=t) for c, t in
             (("i", np.int64), ("j", np.int64), ("m", np.float32)))
            if r is not None else (np.zeros(0, np.int64),) * 2 + (np.zeros(0, np.float32),)
        )
        tree = build_tree(vectors, ri, rj, rm, parent_embedding=parent_embedding)
        return IndexedDocument(doc, spans[doc.doc_id], tree)

    done, failures = _isolate(
        [d for d in docs if d.doc_id in emb], one, lambda d: d.doc_id, "build_trees"
    )
    return [item for _, item in done], failures
