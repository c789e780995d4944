"""The database records how it was built; readers default to it and refuse mismatches."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.storage.index_info import (
    IndexInfo,
    read_index_infos,
    record_index_info,
    remove_unused_infos,
    search_defaults,
)
from sproutrag.storage.store import StaleIndexError
from tests.helpers import TOY_DIM, TOY_ENCODER, toy_document, toy_encoder


def _weights(delta: float, alpha: float = 0.0, **search) -> TrainedWeights:
    return TrainedWeights(np.full((1, 1), alpha, np.float32),
                          SearchParams(threshold=delta, **search),
                          source=f"w-{delta}-{alpha}.json")


def _encoder(weights: TrainedWeights, sha: str = "content-1") -> SimpleNamespace:
    return toy_encoder(weights, model_sha256=sha, model_path="/models/fake")


def _info(fp: str, weights: TrainedWeights, sha: str = "content-1") -> IndexInfo:
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
    assert (got.search.threshold, got.tree_fingerprint) == (
        0.25, _weights(0, alpha=1.0).tree_fingerprint())
    store.write([toy_document("a", "one two three")], "fp3")  # the fp3 run re-indexes it
    assert remove_unused_infos(store, "fp3")  # after its writes: fp2 is no document's
    assert set(read_index_infos(store)) == {"fp3"}
    assert not remove_unused_infos(store, "fp3")
    store.delete(["a"])  # every document deleted: only the running fp4 row would stay
    assert remove_unused_infos(store, "fp4") and read_index_infos(store) == {}


def test_readers_default_to_the_database_and_refuse_mismatches_by_name():
    built = _weights(0.3, lexical_weight=0.5, margin=0.1)
    infos = {"fp": _info("fp", built)}
    other = _weights(-1.0, lexical_weight=0.0)  # what the reader's encoder carries
    got = search_defaults(infos, encoder=_encoder(other), weights=None, uri="db")
    assert got.params == built.search == SearchParams(threshold=0.3, lexical_weight=0.5,
                                                      margin=0.1)
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
    assert got.params == relearned.search and got.source == f"weights {relearned.source}"
    got = search_defaults({}, encoder=_encoder(other), weights=None, uri="db")
    assert got.params.threshold == -1.0  # no index settings: the encoder's weights


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


def test_the_row_keeps_the_tables_columns_and_round_trips(store):
    """`IndexInfo.search` is stored as the columns delta, margin, lexical_weight, ...:
    `index_settings` keeps its schema."""
    from sproutrag.schemas.tables import INDEX_SETTINGS

    w = _weights(0.25, margin=0.05, lexical_weight=0.5, size_penalty=1.0, seed_leaves=True)
    info = _info("fp", w)
    row = info.to_row()
    assert list(row) != [] and set(row) == set(INDEX_SETTINGS.names)
    assert (row["delta"], row["margin"], row["lexical_weight"], row["size_penalty"],
            row["seed_leaves"]) == (0.25, 0.05, 0.5, 1.0, True)
    record_index_info(store, info)
    assert store.table("index_settings").schema == INDEX_SETTINGS
    [back] = read_index_infos(store).values()
    assert back.search == w.search and back.same_settings(info)


def test_retriever_overrides_replace_the_database_defaults(store):
    from sproutrag.params import DEFAULT
    from sproutrag.search.retriever import QueryError, Retriever

    store.write([toy_document("a", "one two three four")], "fp")
    learned = dict(margin=0.1, lexical_weight=0.5, size_penalty=1.0, seed_leaves=True)
    record_index_info(store, _info("fp", _weights(0.3, **learned)))
    reader = _encoder(_weights(-1.0))
    assert Retriever(store.uri, encoder=reader).params == SearchParams(threshold=0.3, **learned)
    assert Retriever(store.uri, encoder=reader, margin=DEFAULT).margin == 0.1
    assert Retriever(store.uri, encoder=reader, margin=None).margin is None  # off
    r = Retriever(store.uri, encoder=reader, beam_width=3, margin=0.2,
                  overrides={"size_penalty": 0.0, "seed_leaves": False})
    want = SearchParams(beam_width=3, threshold=0.3, margin=0.2, lexical_weight=0.5)
    assert r.params == want and r.beam_width == 3 and r.flat_threshold is None
    record_index_info(store, _info("fp", _weights(0.1, **learned)))  # new defaults ...
    assert r.params == SearchParams(**{**vars(want), "threshold": 0.1})  # ... overrides stay
    for bad in ({"margin": "trained"}, {"overrides": {"delta": 0.1}},
                {"overrides": {"size_penalty": -1.0}}):
        with pytest.raises(QueryError, match="margin must be|unknown search|size_penalty"):
            Retriever(store.uri, encoder=reader, **bad)


def test_one_query_setup_reads_index_settings_once(store, monkeypatch):
    """What `sproutrag query` and the query-corpus flow do to set up (the reader's
    settings, the Retriever) opens each table once and reads `index_settings` once; more
    queries read it again only when it changed, and never re-open a table."""
    from collections import Counter

    from lancedb.db import LanceDBConnection
    from lancedb.table import LanceTable
    from sproutrag.schemas.settings import Settings

    from sproutrag.search.reader_settings import reader_settings
    from sproutrag.search.retriever import Retriever
    from sproutrag.storage.reader import Reader

    store.write([toy_document("a", "one two three four")], "fp")
    record_index_info(store, _info("fp", _weights(0.3)))
    opened, reads = Counter(), Counter()
    real_open, real_search = LanceDBConnection.open_table, LanceTable.search

    def open_table(self, name, *args, **kwargs):
        opened[name] += 1
        return real_open(self, name, *args, **kwargs)

    def search(self, *args, **kwargs):
        reads[self.name] += 1
        return real_search(self, *args, **kwargs)

    monkeypatch.setattr(LanceDBConnection, "open_table", open_table)
    monkeypatch.setattr(LanceTable, "search", search)
    reader = Reader.open(store.uri)
    assert reader_settings(reader, Settings()).encoding.model == "fake/encoder"
    r = Retriever(reader, encoder=_encoder(_weights(-1.0)))
    qvec = np.ones(TOY_DIM, np.float32)
    assert r.search_vector("q", qvec, k=2) and r.threshold == 0.3
    assert reads["index_settings"] == 1
    assert set(opened.values()) == {1}
    for _ in range(3):
        r.search_vector("q", qvec, k=2)
    assert reads["index_settings"] == 1 and set(opened.values()) == {1}
    record_index_info(store, _info("fp", _weights(0.1)))  # another writer's new defaults
    reads.clear()  # (the writer read the table too)
    assert r.search_vector("q", qvec, k=2) is not None and r.threshold == 0.1
    assert reads["index_settings"] == 1 and set(opened.values()) == {1}


def test_the_full_text_index_is_recorded_and_added_to_an_older_table(store):
    """A table written before `text_index_json` existed gains the column in place (its
    schema metadata kept: no migration, no re-index); a row records the full-text index
    that exists (none before the first maintenance), updated once the index is built."""
    import json

    import pyarrow as pa
    from sproutrag.schemas import tables

    from sproutrag.storage.index_info import built_text_index, update_text_index
    from sproutrag.storage.store import TEXT_ANALYZER, TEXT_INDEX

    older = pa.schema([f for f in tables.INDEX_SETTINGS if f.name != "text_index_json"])
    old_row = _info("fp", _weights(0.3)).to_row()
    del old_row["text_index_json"]
    tbl = store.table("index_settings", create=False)
    assert tbl is None
    meta = tables.with_metadata(older, encoder_id=TOY_ENCODER, dim=TOY_DIM)
    store._db.create_table("index_settings", data=pa.Table.from_pylist([old_row], meta))
    [before] = read_index_infos(store).values()
    assert before.text_index() is None  # read as "not recorded"
    store.write([toy_document("a", "one two three")], "fp")
    assert built_text_index(store) is None  # no full-text index yet: none recorded
    info = IndexInfo.build(fingerprint="fp", encoder=_encoder(_weights(0.3), "sha"),
                           fields={"x": 1}, run_id="r1", text_index=built_text_index(store))
    record_index_info(store, info)
    store.refresh()
    tbl = store.table("index_settings")
    assert tbl.schema.metadata == meta.metadata  # still this schema version
    assert read_index_infos(store)["fp"].text_index() is None
    assert not update_text_index(store, "fp")  # nothing built: nothing to record
    assert store.ensure_text_index()  # what a run's maintenance does, then records
    assert update_text_index(store, "fp")
    after = read_index_infos(store)["fp"]
    assert after.text_index() == TEXT_INDEX
    assert after.text_index()["analyzer"] == TEXT_ANALYZER
    store.refresh()
    column = store.table("index_settings").to_arrow()["text_index_json"][0].as_py()
    assert json.loads(column)["column"] == "text"
    assert not update_text_index(store, "fp")  # then unchanged

def test_the_hierarchy_columns_are_added_in_place_and_read_null_as_off(store):
    """A table written before doc_weight, ancestor_weight and doc_diversity existed reads
    them as 0 (off); recording a row that sets them adds the columns in place (no
    migration) and the older row still reads 0."""
    import pyarrow as pa
    from sproutrag.schemas import tables

    added = ("doc_weight", "ancestor_weight", "doc_diversity")
    older = pa.schema([f for f in tables.INDEX_SETTINGS if f.name not in added])
    old_row = _info("old", _weights(0.3)).to_row()
    for name in added:
        del old_row[name]
    meta = tables.with_metadata(older, encoder_id=TOY_ENCODER, dim=TOY_DIM)
    store._db.create_table("index_settings", data=pa.Table.from_pylist([old_row], meta))
    [before] = read_index_infos(store).values()
    assert before.search == SearchParams(threshold=0.3)
    store.write([toy_document("a", "one two three")], "new")
    store.write([toy_document("b", "four five")], "old")
    weights = _weights(0.3, doc_weight=0.5, ancestor_weight=0.25, doc_diversity=1.0)
    assert record_index_info(store, _info("new", weights))
    store.refresh()
    assert store.table("index_settings").schema.metadata == meta.metadata
    infos = read_index_infos(store)
    assert infos["new"].search == weights.search
    assert infos["old"].search == SearchParams(threshold=0.3)  # null: the default
    assert not record_index_info(store, _info("new", weights))  # unchanged: not rewritten
