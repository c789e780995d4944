"""A Retriever shared by a thread pool while an index run replaces documents: no error,
and every answer from one version of each document (toy documents, no model)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.retriever import Retriever
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store

DOCS = [f"d{i}" for i in range(12)]


def _version(doc_id: str, v: int):
    """Version V of a document: every word carries its version ("v3w0 v3w1 ...")."""
    return toy_document(doc_id, " ".join(f"v{v}w{j}" for j in range(3 + v % 3)), seed=v)


def _replacing(db, done: threading.Event, versions: int):
    """An index run that replaces a third of DOCS per commit and prunes every old version,
    until DONE or VERSIONS commits; returns the commits made."""

    def index_run() -> int:
        writer, v = toy_store(db), 0
        while not done.is_set() and v < versions:
            v += 1
            writer.write([_version(d, v) for d in DOCS[v % 3::3]], "fp", stored=DOCS)
            writer.tidy(run_id="r", keep_versions_days=0, min_small=4)
        return v

    return index_run


def test_threads_share_a_retriever_while_a_run_replaces_documents(tmp_path):
    store = toy_store(tmp_path / "db")
    store.write([_version(d, 0) for d in DOCS], "fp")
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    retriever = Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=0,
                          cache_bytes=20_000)  # a small cache: entries evicted all along
    done = threading.Event()
    index_run = _replacing(tmp_path / "db", done, 40)

    rng = np.random.default_rng(0)
    queries = rng.normal(size=(240, TOY_DIM)).astype(np.float32)

    def ask(n: int) -> list:
        mode = ("tree", "leaves", "flat")[n % 3]
        doc_ids = [DOCS[n % 12], DOCS[(n + 5) % 12]] if n % 2 else None
        return retriever.search_vector("q", queries[n], k=4, mode=mode, doc_ids=doc_ids)

    with ThreadPoolExecutor(max_workers=9) as pool:
        writer = pool.submit(index_run)
        answers = list(pool.map(ask, range(len(queries))))
        done.set()
        assert writer.result() > 1  # the run wrote while the queries ran
    for n, hits in enumerate(answers):
        assert len(hits) >= 1, (n, ("tree", "leaves", "flat")[n % 3], n % 2)
        for hit in hits:
            versions = {word.split("w")[0] for word in hit.text.split()}
            assert len(versions) == 1, hit  # one version of the document
    assert len(retriever.documents.cache) >= 1 and retriever.documents.cache.nbytes <= 20_000


def test_contexts_while_a_run_replaces_documents(tmp_path):
    """A context cuts its spans from the documents' texts, read with their trees: none
    fails when the run replaces them between the two reads, and every span is one
    version of its document."""
    store = toy_store(tmp_path / "db")
    store.write([_version(d, 0) for d in DOCS], "fp")
    rng = np.random.default_rng(1)
    queries = rng.normal(size=(150, TOY_DIM)).astype(np.float32)
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    encoder = toy_encoder(weights, encode_texts=lambda texts: queries[
        [int(t.split()[1]) for t in texts]])
    retriever = Retriever(store.uri, encoder=encoder, memory_rows=0, cache_bytes=20_000)
    done = threading.Event()
    index_run = _replacing(tmp_path / "db", done, 30)

    def ask(n: int):
        doc_ids = [DOCS[n % 12], DOCS[(n + 5) % 12]] if n % 2 else None
        return retriever.context(f"q {n}", budget_chars=40, doc_ids=doc_ids,
                                 mode=("tree", "leaves", "flat")[n % 3])

    with ThreadPoolExecutor(max_workers=9) as pool:
        writer = pool.submit(index_run)
        contexts = list(pool.map(ask, range(len(queries))))
        done.set()
        assert writer.result() > 1
    for n, ctx in enumerate(contexts):
        assert ctx.spans, n
        for span in ctx.spans:
            versions = {word.split("w")[0] for word in span.text.split()}
            assert len(versions) == 1, (n, span)


def test_search_many_encodes_in_batches_and_answers_as_search_does(tmp_path):
    import pytest

    from sproutrag.search.hits import QueryError

    store = toy_store(tmp_path / "db")
    store.write([_version(d, 0) for d in DOCS], "fp")
    calls = []

    def encode_texts(texts):
        calls.append(len(texts))
        return np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=TOY_DIM)
                         for t in texts]).astype(np.float32)

    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    r = Retriever(store.uri, encoder=toy_encoder(weights, encode_texts=encode_texts))
    questions = [f"question {n}" for n in range(70)]
    scopes = [None if n % 2 else [DOCS[n % 12]] for n in range(70)]
    many = r.search_many(questions, k=3, doc_ids=scopes, batch_size=32)
    assert calls == [32, 32, 6]  # three forward passes, not seventy
    calls.clear()
    one = [r.search(q, k=3, doc_ids=s) for q, s in zip(questions, scopes)]
    assert [[h.node_id for h in hits] for hits in many] == [
        [h.node_id for h in hits] for hits in one]
    with pytest.raises(QueryError, match="query 1: query is empty"):
        r.search_many(["fine", "  "])
