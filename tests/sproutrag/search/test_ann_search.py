"""The first stage's ANN search: probes from the index's partitions, filters that look
past them, leaves found by the full-text index without a filter."""

from __future__ import annotations

from types import SimpleNamespace

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from sproutrag.search import first_stage, node_memory
from sproutrag.search.current import Current
from sproutrag.search.first_stage import FirstStage, ann_probes
from sproutrag.storage import indexes

DIM = 8


def test_probes_are_a_share_of_the_partitions():
    assert ann_probes(None) == first_stage.UNRECORDED_PROBES
    assert ann_probes(4) == 4  # never more than the index has
    assert ann_probes(first_stage.MIN_PROBES + 1) == first_stage.MIN_PROBES
    assert ann_probes(3162) == int(np.ceil(first_stage.PROBE_SHARE * 3162))
    assert ann_probes(10_000) > ann_probes(3162)


@pytest.fixture
def two_clusters(tmp_path):
    """A FirstStage over 10,000 `nodes` rows of two documents far apart ("a" around e0,
    "b" around -e0; leaves with a text, internal nodes without), with a vector index of
    100 partitions and a full-text index."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(8000, DIM)) * 0.3 + np.eye(DIM)[0] * 3
    b = rng.normal(size=(2000, DIM)) * 0.3 - np.eye(DIM)[0] * 3
    vecs = np.vstack([a, b]).astype(np.float32)
    docs = ["a"] * 8000 + ["b"] * 2000
    leaf = np.arange(10_000) % 2 == 0
    tbl = lancedb.connect(str(tmp_path / "db")).create_table("nodes", pa.table({
        "doc_id": docs, "tree_id": [f"t-{d}" for d in docs], "idx": np.arange(10_000),
        "left": np.where(leaf, -1, 0).astype(np.int32),
        "start": np.zeros(10_000, np.int64), "end": np.zeros(10_000, np.int64),
        "text": [f"clause {d} word{i}" if leaf[i] else None for i, d in enumerate(docs)],
        "vector": pa.FixedSizeListArray.from_arrays(vecs.ravel(), DIM)}))
    assert indexes.ensure_vector_index(tbl, min_rows=0)
    assert indexes.ensure_text_index(tbl)
    current = Current.of(1, {"a": "t-a", "b": "t-b"}, {"a": 4000, "b": 1000})
    store = SimpleNamespace(table=lambda name: tbl, version=lambda name: tbl.version,
                            text_index=lambda: indexes.text_index(tbl), dim=DIM)
    return FirstStage(store, lambda: current, n_docs=1, kind="hybrid", memory_rows=0), tbl


def test_probes_follow_the_recorded_index(two_clusters):
    stage, tbl = two_clusters
    assert indexes.vector_index_record(tbl)["partitions"] == 100
    assert stage.probes(tbl) == ann_probes(100) < 100


def test_a_narrow_filter_is_searched_past_the_probed_partitions(two_clusters):
    stage, tbl = two_clusters
    q = np.eye(DIM, dtype=np.float32)[0]  # near "a": the probed partitions hold no "b"
    fixed = (tbl.search(q).distance_type("cosine").nprobes(stage.probes(tbl))
             .where("doc_id = 'b'", prefilter=True).limit(5).to_list())
    assert len(fixed) < 5  # what a fixed number of probes finds
    rows = stage.nearest_nodes(q, 5, "doc_id = 'b'")
    assert len(rows) == 5 and {r["doc_id"] for r in rows} == {"b"}
    assert {r["doc_id"] for r in stage.nearest_nodes(q, 5, None)} == {"a"}
    few = stage.nearest_nodes(q, 5, None, columns=("_distance",))
    assert [set(r) for r in few] == [{"doc_id", "tree_id", "_distance"}] * 5


@pytest.mark.parametrize("memory_rows", [0, 20_000])  # hits read with their rows / from memory
def test_the_text_search_finds_leaves_of_current_trees(two_clusters, memory_rows):
    stage, _ = two_clusters
    stage.memory_rows = memory_rows
    assert stage.ranked_by_text("clause b", 5) == ["b"]
    assert stage.ranked_by_text("word10", 5) == ["a"]
    assert stage.ranked_by_text("word10 word9998 b", 5) == ["b", "a"]  # best first
    assert stage.ranked_by_text("zebra", 5) == []
    stage.current = lambda: Current.of(2, {"a": "t-a"}, {"a": 4000})
    assert "b" not in stage.ranked_by_text("clause b", 5)  # rows of other trees dropped
    assert stage.ranked_by_text("word10 word9998 b", 5) == ["a"]


def test_leaf_rows_name_the_documents_of_known_rows_only():
    rows = node_memory.LeafRows(np.array([7, 3, 12], np.uint64), np.array(["x", "y", "x"]))
    assert rows.documents(np.array([12, 5, 3, 7, 99], np.uint64)) == ["x", "y"]
    assert rows.documents(np.array([], np.uint64)) == []
    none = node_memory.LeafRows(np.array([], np.uint64), np.array([], object))
    assert none.documents(np.array([3], np.uint64)) == []
