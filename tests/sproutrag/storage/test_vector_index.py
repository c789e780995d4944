"""The vector index: partitions from the table's size, retrained once the table grew."""

from __future__ import annotations

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from sproutrag.storage import indexes

DIM = 16


def _rows(n: int, seed: int) -> pa.Table:
    vecs = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return pa.table({"id": np.arange(n, dtype=np.int64),
                     "vector": pa.FixedSizeListArray.from_arrays(vecs.ravel(), DIM)})


def _partitions(tbl) -> int:
    """The IVF partitions of TBL's vector index, as LanceDB reports them."""
    name = next(i.name for i in tbl.list_indices() if i.columns == ["vector"])
    stats = tbl.to_lance().stats.index_stats(name)
    return (stats.get("segments") or stats["indices"])[0]["num_partitions"]


@pytest.fixture
def table(tmp_path):
    return lancedb.connect(str(tmp_path / "db")).create_table("nodes", _rows(400, 0))


def test_partitions_are_about_the_square_root_of_the_rows():
    assert [indexes.vector_partitions(n) for n in (0, 1, 400, 10_000, 10_000_000)] == [
        1, 1, 20, 100, 3162]


def test_no_index_below_min_rows_then_one_with_its_record(table):
    assert not indexes.ensure_vector_index(table, min_rows=401)
    assert indexes.vector_index_record(table) is None
    assert indexes.ensure_vector_index(table, min_rows=400)
    assert indexes.vector_index_record(table) == {"rows": 400, "partitions": 20}
    assert _partitions(table) == 20


def test_a_table_grown_past_the_factor_is_trained_again(table):
    indexes.ensure_vector_index(table, min_rows=100)
    table.add(_rows(1200, 1))  # 1,600 rows: 4x the 400 it was trained on, not more
    indexes.fold_new_rows(table, scalar_only=False)
    version = table.version
    assert indexes.ensure_vector_index(table, min_rows=100)
    assert table.version == version  # left alone: nothing committed
    assert indexes.vector_index_record(table) == {"rows": 400, "partitions": 20}
    table.add(_rows(1, 2))  # 1,601 rows: past 4x
    assert indexes.ensure_vector_index(table, min_rows=100)
    assert indexes.vector_index_record(table) == {"rows": 1601, "partitions": 40}
    assert _partitions(table) == 40
    hits = table.search(np.zeros(DIM, np.float32) + 1).distance_type("cosine").limit(5)
    assert len(hits.to_list()) == 5


def test_an_index_without_a_record_is_built_again(table):
    from lancedb.index import IvfSq

    table.create_index("vector", config=IvfSq(distance_type="cosine", num_partitions=2))
    assert indexes.vector_index_record(table) is None
    assert indexes.ensure_vector_index(table)  # even below min_rows: it exists
    assert indexes.vector_index_record(table) == {"rows": 400, "partitions": 20}
    assert _partitions(table) == 20


def test_new_rows_fold_into_delta_indexes_merged_every_max_deltas(table, monkeypatch):
    """A fold adds the new vectors in a delta index of their own, leaving the index files
    there untouched (each kept version would hold a copy of a rewritten index), and
    merges every delta into one once MAX_VECTOR_DELTAS of them exist; every row stays
    found through the index."""
    monkeypatch.setattr(indexes, "MAX_VECTOR_DELTAS", 3)
    indexes.ensure_vector_index(table, min_rows=100)
    name = next(i.name for i in table.list_indices() if i.columns == ["vector"])

    def segments() -> list[str]:
        found = next(d for d in table.to_lance().describe_indices() if d.name == name)
        return [str(segment.uuid) for segment in found.segments]

    first = segments()
    counts = []
    for k in range(3):
        table.add(_rows(20, 10 + k).set_column(0, "id", pa.array(
            np.arange(1000 + 20 * k, 1020 + 20 * k, dtype=np.int64))))
        assert indexes.fold_new_rows(table, scalar_only=False)
        counts.append(len(segments()))
        if k < 2:
            assert segments()[0] == first[0]  # the trained index is not rewritten
    assert counts == [2, 3, 1]  # the third fold found 3 deltas: all merged with its rows
    assert table.index_stats(name).num_unindexed_rows == 0
    assert table.index_stats(name).num_indexed_rows == 460
    target = table.search().where("id = 1045").limit(1).to_list()[0]["vector"]
    hits = table.search(np.asarray(target)).distance_type("cosine").limit(1).to_list()
    assert hits[0]["id"] == 1045
    assert not indexes.fold_new_rows(table, scalar_only=False)  # nothing new: no commit
