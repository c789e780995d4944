"""The Retriever's arguments: doc_ids as the API takes them (integers as their strings, a
bare string or an empty list refused, not split or searched), and a --db that is a file
(toy documents)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.errors import DatabaseNotFoundError
from sproutrag.params import SearchParams
from sproutrag.search.hits import QueryError
from sproutrag.search.retriever import Retriever
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store


@pytest.fixture
def retriever(tmp_path) -> Retriever:
    store = toy_store(tmp_path / "db")
    store.write([toy_document(d, "alpha beta gamma delta", seed=n)
                 for n, d in enumerate(["3", "a.md", "b.md"])], "fp")
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))

    def encode(texts):
        return np.random.default_rng(0).normal(size=(len(texts), TOY_DIM)).astype(np.float32)

    return Retriever(store.uri, encoder=toy_encoder(weights, encode_texts=encode))


def test_integer_doc_ids_are_taken_as_their_strings(retriever):
    hits = retriever.search("koalas", doc_ids=[3])
    assert hits and {h.doc_id for h in hits} == {"3"}
    many = retriever.search_many(["koalas", "rocket"], doc_ids=[[3], (np.int64(3), "a.md")])
    assert {h.doc_id for h in many[0]} == {"3"} and {h.doc_id for h in many[1]} <= {"3", "a.md"}


@pytest.mark.parametrize("doc_ids, why", [
    ([None], "doc_ids must hold strings, got None at position 0"),
    (["a.md", 2.5], "doc_ids must hold strings, got 2.5 at position 1"),
    ("a.md", "doc_ids must be a list of doc ids, got the string 'a.md' \\(write \\[\"a.md\"\\]\\)"),
    ([], "doc_ids is empty: leave it out to search every document"),
    (3, "doc_ids must be a list of doc ids, got int"),
])
def test_bad_doc_ids_are_refused_naming_the_problem(retriever, doc_ids, why):
    with pytest.raises(QueryError, match=why):
        retriever.search("rocket", doc_ids=doc_ids)
    with pytest.raises(QueryError, match=why):
        retriever.context("rocket", budget_chars=100, doc_ids=doc_ids)


@pytest.mark.parametrize("queries, doc_ids, why", [
    ("rocket", None, "queries must be a list of questions, got the string 'rocket'"),
    (["q1", "q2"], "a.md", "doc_ids must be a list of doc-id lists .* got the string 'a.md'"),
    (["q1", "q2"], ["a.md", "b.md"], "doc_ids\\[0\\] must be a list of doc ids, got the "
     "string 'a.md'"),
    (["q1", "q2"], [["a.md"], []], "doc_ids\\[1\\] is empty"),
])
def test_search_many_refuses_strings_where_lists_belong(retriever, queries, doc_ids, why):
    with pytest.raises(QueryError, match=why):
        retriever.search_many(queries, doc_ids=doc_ids)


@pytest.mark.parametrize("batch_size", [0, -1, 2.5])
def test_search_many_refuses_a_batch_size_that_is_no_count(retriever, batch_size):
    with pytest.raises(QueryError, match=f"batch_size .*got {batch_size!r}"):
        retriever.search_many(["q1", "q2"], batch_size=batch_size)


def test_a_db_that_is_a_file_is_named_not_a_folder(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    with pytest.raises(DatabaseNotFoundError, match=f"database {afile} is not a folder"):
        Retriever(str(afile))
    assert afile.read_text(encoding="utf-8") == "x"


def test_weights_are_taken_as_a_file_path_too(tmp_path, retriever):
    """`weights="w.json"` failed inside with an AttributeError: a path is loaded (a bad
    file named), anything else but `TrainedWeights` refused naming its type."""
    from sproutrag.encoder.weights import WeightsFileError

    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    path = tmp_path / "w.json"
    weights.save(path)
    encoder = toy_encoder(weights)
    for given in (str(path), path):
        r = Retriever(retriever.store.uri, encoder=encoder, weights=given)
        assert r.params.threshold == -1.0
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(WeightsFileError, match="bad.json"):
        Retriever(retriever.store.uri, encoder=encoder, weights=str(tmp_path / "bad.json"))
    with pytest.raises(TypeError, match="weights must be a TrainedWeights .* got dict"):
        Retriever(retriever.store.uri, encoder=encoder, weights={"alpha": [[0]]})


@pytest.mark.parametrize("bad", [-1, 1.5, "1GB", True])
def test_a_bad_cache_size_is_a_query_error_naming_it(retriever, bad):
    """It was the cache's own "max_bytes must be >= 0", a plain ValueError (or a
    TypeError inside, for a string)."""
    with pytest.raises(QueryError, match=f"cache_bytes must be an integer of 0 or more.*got "
                       f"{re.escape(repr(bad))}"):
        Retriever(retriever.store.uri, encoder=retriever.encoder, cache_bytes=bad)
    kept = Retriever(retriever.store.uri, encoder=retriever.encoder,
                     cache_bytes=np.int64(1 << 20))  # numpy's integers, as n_docs takes
    assert kept.documents.cache.max_bytes == 1 << 20 and type(kept.documents.cache.max_bytes) is int
