"""A search that finds a data file gone (an index run removed the table versions it wrote
meanwhile) or, for a context, a document replaced under its view, runs once more on the
latest versions; any other error, or a second failure, reaches the caller (toy store)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.retriever import Retriever
from tests.helpers import TOY_DIM, toy_document, toy_encoder, toy_store

GONE = "lance error: Not found: /db/nodes.lance/data/0a1b.lance"


@pytest.fixture
def retriever(tmp_path) -> Retriever:
    store = toy_store(tmp_path / "db")
    store.write([toy_document(f"d{i}", "alpha beta gamma delta", seed=i) for i in range(4)],
                "fp")
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    return Retriever(store.uri, encoder=toy_encoder(weights))


def _failing(errors: list[BaseException], answer: str = "answer"):
    calls = []

    def read() -> str:
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return answer

    return read, calls


def test_a_file_gone_is_read_again_on_the_latest_versions(retriever, monkeypatch):
    view = retriever.view
    refreshed, forgotten = [], []
    refresh, forget = view.refresh, view.forget
    monkeypatch.setattr(view, "refresh", lambda: refreshed.append(1) or refresh())
    monkeypatch.setattr(view, "forget", lambda: forgotten.append(1) or forget())
    read, calls = _failing([RuntimeError(GONE)])
    assert view.retried(read) == "answer"
    assert (len(calls), len(refreshed), len(forgotten)) == (2, 1, 1)
    read, calls = _failing([OSError(GONE), OSError(GONE)])
    with pytest.raises(OSError, match="Not found"):  # twice: the caller sees it
        view.retried(read)
    assert len(calls) == 2


def test_other_errors_are_not_retried(retriever):
    view = retriever.view
    read, calls = _failing([RuntimeError("lance error: invalid schema")])
    with pytest.raises(RuntimeError, match="invalid schema"):
        view.retried(read)
    assert len(calls) == 1
    read, calls = _failing([KeyError("d1")])  # a replaced document: only when asked
    with pytest.raises(KeyError):
        view.retried(read)
    assert len(calls) == 1
    read, calls = _failing([KeyError("d1")])
    assert view.retried(read, replaced=True) == "answer" and len(calls) == 2
    read, calls = _failing([KeyError("d1"), KeyError("d1")])
    with pytest.raises(KeyError):
        view.retried(read, replaced=True)
    assert len(calls) == 2


def test_search_and_context_answer_after_a_file_gone(retriever, monkeypatch):
    qvec = np.eye(TOY_DIM, dtype=np.float32)[0]  # the toy encoder encodes no text
    monkeypatch.setattr(retriever, "_embed", lambda qs: np.tile(qvec, (len(qs), 1)))
    expected = retriever.search("alpha beta", k=2)
    assert expected
    inner = Retriever._search_vector
    gone = [RuntimeError(GONE)]

    def flaky(self, *args, **kwargs):
        if gone:
            raise gone.pop(0)
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(Retriever, "_search_vector", flaky)
    assert retriever.search("alpha beta", k=2) == expected and not gone
    before = retriever.context("alpha beta", budget_chars=200)
    import sproutrag.search.retriever as module

    read_context = module.read_context
    failures = [RuntimeError(GONE)]

    def flaky_context(*args, **kwargs):
        if failures:
            raise failures.pop(0)
        return read_context(*args, **kwargs)

    monkeypatch.setattr(module, "read_context", flaky_context)
    assert retriever.context("alpha beta", budget_chars=200) == before and not failures
