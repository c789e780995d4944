"""The database records how it was built; readers default to it and refuse mismatches."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sproutrag.encoder.weights import AggregationWeights
from sproutrag.storage.index_info import (
    IndexInfo,
    read_index_infos,
    record_index_info,
    search_defaults,
)
from sproutrag.storage.store import StaleIndexError
from tests.helpers import TOY_ENCODER, toy_document, toy_encoder


def _weights(delta: float, alpha: float = 0.0, **search) -> AggregationWeights:
    return AggregationWeights(np.full((1, 1), alpha, np.float32), delta=delta,
                              source=f"w-{delta}-{alpha}.json", **search)


def _encoder(weights: AggregationWeights, sha: str = "content-1") -> SimpleNamespace:
    return toy_encoder(weights, model_sha256=sha, model_path="/models/fake")


def _info(fp: str, weights: AggregationWeights, sha: str = "content-1") -> IndexInfo:
    return IndexInfo.build(fingerprint=fp, encoder=_encoder(weights, sha),
                           fields={"encoder": TOY_ENCODER}, run_id="r")


def test_rows_are_written_only_when_they_change_and_pruned_when_unused(store):
    w = _weights(0.25, lexical_weight=0.5, size_penalty=1.0, seed_leaves=True)
    assert record_index_info(store, _info("fp1", w))
    version = store.table("index_settings").version
    assert not record_index_info(store, _info("fp1", w))  # an unchanged run writes nothing
    assert store.table("index_settings").version == version
    store.write([toy_document("a", "one two three")], "fp1")
    assert record_index_info(store, _info("fp2", _weights(0.25, alpha=1.0)))
    assert set(read_index_infos(store)) == {"fp1", "fp2"}  # fp1 is still a document's
    store.write([toy_document("a", "one two three")], "fp2")  # re-indexed with fp2
    assert record_index_info(store, _info("fp3", _weights(0.1, alpha=2.0)))
    assert set(read_index_infos(store)) == {"fp2", "fp3"}  # fp1 pruned
    [got] = read_index_infos(store, ["fp2"]).values()
    assert (got.delta, got.tree_fingerprint) == (0.25, _weights(0, alpha=1.0).tree_fingerprint())


def test_readers_default_to_the_database_and_refuse_mismatches_by_name():
    built = _weights(0.3, lexical_weight=0.5, margin=0.1)
    infos = {"fp": _info("fp", built)}
    other = _weights(-1.0, lexical_weight=0.0)  # what the reader's encoder carries
    got = search_defaults(infos, encoder=_encoder(other), weights=None, uri="db")
    assert (got.delta, got.margin, got.lexical_weight) == (0.3, 0.1, 0.5)
    assert "the database" in got.source
    with pytest.raises(StaleIndexError, match="content-1.*content-2") as err:
        search_defaults(infos, encoder=_encoder(other, sha="content-2"), weights=None,
                        uri="db")
    assert "/models/fake" in str(err.value) and "sproutrag index" in str(err.value)
    other_alpha = _weights(0.3, alpha=1.0)
    with pytest.raises(StaleIndexError, match="alpha fingerprint") as err:
        search_defaults(infos, encoder=_encoder(other), weights=other_alpha, uri="db")
    assert built.source in str(err.value) and other_alpha.source in str(err.value)
    relearned = _weights(0.05, lexical_weight=2.0)  # same alpha, new search parameters
    got = search_defaults(infos, encoder=_encoder(other), weights=relearned, uri="db")
    assert (got.delta, got.lexical_weight) == (0.05, 2.0)
    got = search_defaults({}, encoder=_encoder(other), weights=None, uri="db")
    assert got.delta == -1.0  # a database without index settings: the encoder's weights


def test_retriever_takes_its_defaults_from_the_database(store):
    from sproutrag.search.retriever import QueryError, Retriever

    store.write([toy_document("a", "one two three four")], "fp")
    record_index_info(store, _info("fp", _weights(0.3, lexical_weight=0.5)))
    reader = _encoder(_weights(-1.0))
    r = Retriever(store.uri, encoder=reader)
    assert (r.threshold, r.lexical_weight) == (0.3, 0.5)
    assert Retriever(store.uri, encoder=reader, threshold=0.0).threshold == 0.0  # override
    for bad in ({"threshold": float("nan")}, {"lexical_weight": -1.0}, {"beam_width": 0}):
        with pytest.raises(QueryError, match="must be"):
            Retriever(store.uri, encoder=reader, **bad)
    # A long-lived reader follows the database: new defaults published for the same trees.
    record_index_info(store, _info("fp", _weights(0.1, lexical_weight=0.5)))
    assert r.threshold == 0.1
    with pytest.raises(StaleIndexError, match="content"):
        Retriever(store.uri, encoder=_encoder(_weights(0.0), sha="content-2"))
