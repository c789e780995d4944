"""Out of memory while encoding a batch: the batch is encoded again in halves, and a
document alone with forward batches half as large, before any document fails; other
errors fail the documents they hit, with their tracebacks logged (no model)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sproutrag.documents import SourceDocument, content_hash
from sproutrag.encoder.encoder import DocumentEncoding
from sproutrag.ingest.stages import chunk_documents, encode_chunks, is_out_of_memory


class TightEncoder:
    """Encodes one document at a time, in forward batches of at most LIMIT tokens; past
    either it runs out of memory as torch does. BROKEN documents raise a bug's error."""

    dim = 4
    device = "cpu"

    def __init__(self, limit: int, broken: tuple[str, ...] = ()) -> None:
        self.tokens_per_batch, self.limit, self.broken = None, limit, broken
        self.calls: list[tuple[int, int]] = []

    @property
    def batch_tokens(self) -> int:
        return self.tokens_per_batch or 4096

    def encode_documents(self, pairs):
        self.calls.append((len(pairs), self.batch_tokens))
        if len(pairs) > 1 or self.batch_tokens > self.limit:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        text, spans = pairs[0]
        if any(b in text for b in self.broken):
            raise TypeError("unsupported operand type(s)")
        n = len(spans)
        return [DocumentEncoding(np.ones((n, self.dim), np.float32), np.zeros(0, np.int32),
                                 np.zeros(0, np.int32), np.zeros(0, np.float32), 1, n)]


def _docs(*texts: str) -> list[SourceDocument]:
    return [SourceDocument(f"d{i}", "mem", t, content_hash(t)) for i, t in enumerate(texts)]


def _chunks(docs):
    chunks, _ = chunk_documents(docs, sentences_per_chunk=2, max_chunk_chars=1000)
    return chunks


def test_a_batch_out_of_memory_is_encoded_in_smaller_pieces():
    docs = _docs("One sentence. Two sentences.", "Three. Four. Five.", "Six here.")
    encoder = TightEncoder(limit=1024)
    emb, _, failures = encode_chunks(docs, _chunks(docs), encoder)
    assert failures == [] and sorted(set(emb.column("doc_id").to_pylist())) == [
        "d0", "d1", "d2"]
    assert encoder.calls[0] == (3, 4096)  # the whole batch first
    assert (1, 1024) in encoder.calls and encoder.tokens_per_batch is None  # restored


def test_out_of_memory_at_the_floor_fails_the_document_alone(caplog):
    docs = _docs("One sentence. Two sentences.", "Three. Four.")
    encoder = TightEncoder(limit=256)  # below the 512-token floor: never fits
    _, _, failures = encode_chunks(docs, _chunks(docs), encoder)
    assert [f.doc_id for f in failures] == ["d0", "d1"]
    assert all("out of memory" in f.reason for f in failures)


def test_a_bug_fails_its_document_with_its_traceback_logged(caplog):
    docs = _docs("A good one. Fine.", "A broken one. Bad.")
    encoder = TightEncoder(limit=8192, broken=("broken",))
    with caplog.at_level(logging.WARNING, logger="sproutrag.ingest.stages"):
        emb, _, failures = encode_chunks(docs, _chunks(docs), encoder)
    assert [f.doc_id for f in failures] == ["d1"] and "TypeError" in failures[0].reason
    assert set(emb.column("doc_id").to_pylist()) == {"d0"}
    assert any(r.exc_info and r.exc_info[0] is TypeError for r in caplog.records)


@pytest.mark.parametrize("text, oom", [
    ("CUDA out of memory. Tried to allocate 20.00 MiB", True),
    ("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes", True),
    ("index out of range in self", False),
])
def test_out_of_memory_is_told_apart(text, oom):
    assert is_out_of_memory(RuntimeError(text)) is oom
    assert is_out_of_memory(MemoryError())
