"""End to end: the index-corpus flow on the sample corpus, real spaCy, model and LanceDB."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sproutrag.ingest.corpus import discover
from sproutrag.storage.store import Store
from sproutrag.trees.tree import validate_tree
from tests.helpers import SAMPLE

pytestmark = pytest.mark.model


@pytest.fixture
def indexed(sample_index):
    return sample_index


def test_tables_match_the_design(indexed):
    db, row = indexed
    docs, failures = _pair(discover(str(SAMPLE)))
    assert failures == [] and row["n_failed"] == 0
    assert row["n_new"] == len(docs) >= 5
    store = Store.open_existing(db)
    documents = store.table("documents").to_arrow().to_pylist()
    assert {d["doc_id"] for d in documents} == {d.doc_id for d in docs}
    by_id = {d.doc_id: d for d in docs}
    assert max(len(d.text) for d in docs) > 50_000
    nodes = store.table("nodes").to_arrow()
    assert nodes.num_rows == row["n_nodes"]
    for d in documents:
        assert d["content_hash"] == by_id[d["doc_id"]].content_hash
        assert d["text"] == by_id[d["doc_id"]].text and d["n_chars"] == len(d["text"])
        st = store.load_tree(d["doc_id"])
        n = st.tree.n
        assert n == d["n_chunks"] and len(st.tree.left) == 2 * n - 1
        validate_tree(st.tree)
        for (s, e), text in zip(st.spans.tolist(), st.texts):
            assert d["text"][s:e] == text and text.strip() == text and text
        assert np.all(np.diff(st.spans[:, 0]) > 0)  # leaves in document order
        kids = st.tree.left[n:], st.tree.right[n:]
        assert np.all(st.tree.parent[kids[0]] == np.arange(n, 2 * n - 1))
        assert np.all(st.tree.parent[kids[1]] == np.arange(n, 2 * n - 1))
    one = store.load_tree("one_sentence.txt").tree
    assert one.n == 1 and len(one.left) == 1
    meta = nodes.schema.metadata
    assert meta[b"sproutrag.encoder"] == b"sentence-transformers/all-MiniLM-L6-v2"
    assert meta[b"sproutrag.dim"] == b"384" and meta[b"sproutrag.schema_version"] == b"3"


def test_run_is_recorded_and_rerun_is_incremental(indexed):
    from flows.index_corpus import index_corpus

    db, first = indexed
    settings_version = Store.open_existing(db).table("index_settings").version
    again = index_corpus(corpus=str(SAMPLE), db=db)
    assert again["n_unchanged"] == first["n_new"] and again["n_new"] == 0
    assert again["n_nodes"] == 0
    store = Store.open_existing(db)
    assert store.table("index_settings").version == settings_version  # nothing changed
    runs = store.table("runs").to_arrow().to_pylist()
    assert len(runs) == 2
    # Each row names its Prefect flow run (a downstream job can tie rows to runs).
    assert all(r["flow_run_id"] for r in runs) and runs[0]["flow_run_id"] != runs[1][
        "flow_run_id"]
    timings = json.loads(runs[0]["timings_json"])
    assert {"discover", "chunk", "encode", "build_trees", "store"} <= set(timings)
    assert runs[0]["n_chars"] > 50_000 and runs[0]["n_chunks"] > 0


def _pair(found):
    """(documents, failures) of a `Discovery`."""
    return found.docs, found.failures
