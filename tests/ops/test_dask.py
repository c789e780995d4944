"""Scale-out: the index flow on a local Dask cluster of 2 worker processes gives the same
tables as the default thread runner."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.storage.store import Store

pytestmark = pytest.mark.model

STRUCTURE = ("node_id", "doc_id", "idx", "parent", "left", "right", "height", "n_leaves",
             "leaf_start", "leaf_end", "start", "end", "text")


def _tables(db: str):
    store = Store.open_existing(db)
    nodes = store.table("nodes").to_arrow().sort_by("node_id")
    docs = store.table("documents").to_arrow().sort_by("doc_id")
    return nodes, docs


def test_dask_runner_gives_the_same_tables(prefect_harness, small_corpus, tmp_path):
    from sproutrag.flows.index_corpus import index_corpus

    def config(runner: str) -> str:
        path = tmp_path / f"{runner}.yaml"
        path.write_text(
            f"pipeline:\n  task_runner: {runner}\n  dask_workers: 2\n  batch_docs: 1\n",
            encoding="utf-8",
        )
        return str(path)

    threads = index_corpus(corpus=str(small_corpus), db=str(tmp_path / "t"),
                           config=config("threads"))
    dask = index_corpus(corpus=str(small_corpus), db=str(tmp_path / "d"), config=config("dask"))
    assert dask["n_new"] == threads["n_new"] == 3 and dask["n_failed"] == 0
    assert dask["n_nodes"] == threads["n_nodes"] > 0
    assert dask["index_fingerprint"] == threads["index_fingerprint"]

    (n_t, d_t), (n_d, d_d) = _tables(str(tmp_path / "t")), _tables(str(tmp_path / "d"))
    for col in STRUCTURE:
        assert n_d.column(col).to_pylist() == n_t.column(col).to_pylist(), col
    v_t = np.stack(n_t.column("vector").to_numpy(zero_copy_only=False))
    v_d = np.stack(n_d.column("vector").to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(v_d, v_t, atol=1e-5)
    for col in ("doc_id", "content_hash", "n_chunks", "index_fingerprint", "text"):
        assert d_d.column(col).to_pylist() == d_t.column(col).to_pylist(), col
