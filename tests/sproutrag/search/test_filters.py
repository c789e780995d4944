"""Queries restricted by a filter on `documents` columns (LanceDB SQL): a prefilter, so k
is filled from the matching documents, in every mode, whether a few documents match
(searched all) or many (ranked by the first stage among them) (toy documents)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sproutrag.documents import SourceDocument
from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.hits import QueryError
from sproutrag.search.retriever import Retriever
from sproutrag.search.view import FILTER_DIRECT
from sproutrag.storage.rows import IndexedDocument
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store


def _with_metadata(item: IndexedDocument, year: int, kind: str) -> IndexedDocument:
    doc = item.doc
    meta = json.dumps({"kind": kind, "year": year}, sort_keys=True)
    return IndexedDocument(SourceDocument(doc.doc_id, doc.source, doc.text, doc.content_hash,
                                          title=f"{kind} {year}", metadata=meta),
                           item.spans, item.tree)


@pytest.fixture
def retriever(tmp_path) -> Retriever:
    store = toy_store(tmp_path / "db")
    docs = [_with_metadata(toy_document(f"d{i:03d}", "alpha beta gamma delta", seed=i),
                           2020 + i % 6, "contract" if i % 4 else "ticket")
            for i in range(160)]
    store.write(docs, "fp")
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    return Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=0)


@pytest.mark.parametrize("mode", ["tree", "leaves", "flat"])
@pytest.mark.parametrize("where, n_match", [
    ("title = 'ticket 2020'", 14),  # few: searched all
    ("title LIKE 'contract%'", 120),  # many: ranked among them by the first stage
])
def test_a_filter_restricts_every_stage_and_fills_k(retriever, mode, where, n_match):
    matching = set(retriever.view.matching(where))
    assert len(matching) == n_match and (n_match <= FILTER_DIRECT) == (n_match == 14)
    q = np.random.default_rng(1).normal(size=TOY_DIM).astype(np.float32)
    with retriever._one_view():
        doc_ids, allowed = retriever.scope(None, where)
        hits = retriever.search_vector("q", q, k=12, mode=mode, doc_ids=doc_ids,
                                       allowed=allowed)
    assert hits and {h.doc_id for h in hits} <= matching
    assert sum(len(h.spans) for h in hits) == 12  # k filled from the matching documents


def test_a_filter_with_doc_ids_and_its_errors(retriever):
    with retriever._one_view():
        ids, allowed = retriever.scope(["d000", "d001", "d004"], "title LIKE 'ticket%'")
    assert (ids, allowed) == (["d000", "d004"], None)
    for bad, why in (("title = ", "where 'title = '"), ("colour = 'red'", "colour"),
                     ("title = 'nothing'", "no document matches the filter")):
        with pytest.raises(QueryError, match=why):
            retriever.scope(None, bad)


def test_a_filter_on_a_column_no_document_fills_says_so(tmp_path, retriever):
    """A filter that finds nothing names the optional columns it uses that every document
    leaves null (a JSONL corpus without "title" fields), and only those."""
    store = toy_store(tmp_path / "untitled")
    store.write([toy_document(f"u{i}", "alpha beta gamma", seed=i) for i in range(3)], "fp")
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    untitled = Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=0)
    with pytest.raises(QueryError, match="no document has a value in 'title'"):
        untitled.scope(None, "title LIKE '%Q3 2024%'")
    with pytest.raises(QueryError) as found:
        retriever.scope(None, "title = 'nothing'")  # titled documents: no such hint
    assert "no document has a value" not in str(found.value)


@pytest.mark.parametrize("bad, why", [
    ("title = 'ticket 2020') AND (title = 'nope'", "closes no '\\('"),
    ("title = 'ticket 2020'; AND title = 'nope'", "Expected: \\), found: ;"),
    ("title = 'ticket 2020' garbage", "found: garbage"),
    ("(title = 'ticket 2020'", "not closed"),
    ("title = 'ticket 2020' -- x", "comments"),
    ("title = E'ticket 2020'", "prefixed string"),
    ("title = 'ticket 2020", "quote ' at character 8 is not closed"),
    ("", "non-empty string"),
])
def test_a_filter_with_trailing_text_is_refused_not_cut_short(retriever, bad, why):
    with pytest.raises(QueryError, match=why):
        retriever.view.matching(bad)
    with pytest.raises(QueryError, match="where"):
        retriever.scope(None, bad)  # what search, search_many and context use


@pytest.mark.parametrize("where, n_match", [
    ("(title = 'ticket 2020') OR (title = 'ticket 2022')", 27),
    ("title IN ('ticket 2020', 'x)y', 'a;b')", 14),
    ("title = 'it''s (not) here;'", 0),
    ("`title` LIKE 'ticket%' AND (title != 'ticket 2020')", 26),
    ("title = 'ticket 2020' ", 14),
])
def test_valid_filters_with_parentheses_and_quotes_still_match(retriever, where, n_match):
    assert len(retriever.view.matching(where)) == n_match
