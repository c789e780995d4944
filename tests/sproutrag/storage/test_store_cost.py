"""What storing a batch reads, and what a run leaves: new documents are appended without
reading the tables, a replaced document's rows are found through the BTREE indexes,
small fragments are compacted as a run goes and its intermediate versions removed while
the version it started from stays readable (toy documents, no model)."""

from __future__ import annotations

import pytest

from sproutrag.storage import indexes, maintenance
from sproutrag.storage.filters import replaced_trees
from sproutrag.storage.store import Store
from tests.helpers import toy_document

#: Table methods that read rows (a scan, a count with a filter, a join, a lookup).
READS = {"search", "query", "count_rows", "merge_insert", "delete", "update", "to_arrow",
         "to_pandas", "take_row_ids", "take_offsets", "to_lance", "head"}


class Recording:
    """A LanceDB table that records the names of the methods called on it."""

    def __init__(self, tbl, calls: list[str]) -> None:
        self._tbl, self._calls = tbl, calls

    def __getattr__(self, name: str):
        self._calls.append(name)
        return getattr(self._tbl, name)


def _docs(prefix: str, n: int, seed: int = 0) -> list:
    return [toy_document(f"{prefix}{k:04d}", "one two three four", seed=seed + k)
            for k in range(n)]


def _recorded(store: Store) -> dict[str, list[str]]:
    calls: dict[str, list[str]] = {"nodes": [], "documents": []}
    for name, log in calls.items():
        store._tables[name] = Recording(store.table(name), log)
    return calls


def test_a_batch_of_new_documents_reads_nothing(store):
    store.write(_docs("old", 50), "fp")
    calls = _recorded(store)
    assert store.write(_docs("new", 10), "fp", stored=[]) == 70
    assert calls == {"nodes": ["add"], "documents": ["add"]}
    assert len(store.indexed()) == 60


def test_a_replaced_document_is_found_through_the_indexes(store):
    store.write(_docs("d", 300), "fp")
    indexes.ensure_scalar_indexes(store.written_tables())
    calls = _recorded(store)
    replacement = toy_document("d0007", "five six seven", seed=99)
    store.write([replacement], "fp", stored=["d0007"])
    assert "search" not in calls["nodes"] and "to_arrow" not in calls["nodes"]
    assert store.load_tree("d0007").texts == ["five", "six", "seven"]
    assert store.table("nodes").count_rows() == 299 * 7 + 5
    # The predicate that removed its old tree is answered by the BTREE indexes: the
    # rows it reads are the document's, not the table's 2,000.
    new = {"d0007": "not-this-tree"}
    plan = store.table("nodes").search().where(replaced_trees(["d0007"], new)).analyze_plan()
    assert "ScalarIndexQuery" in plan
    scanned = int(plan.split("rows_scanned=")[1].split(",")[0])
    assert scanned <= 2 * 5, plan


def test_without_stored_the_write_looks_the_documents_up(store):
    store.write(_docs("d", 3), "fp")
    store.write([toy_document("d0001", "five six", seed=7), toy_document("e", "x y")], "fp")
    assert sorted(store.indexed()) == ["d0000", "d0001", "d0002", "e"]
    assert store.load_tree("d0001").texts == ["five", "six"]
    assert store.table("nodes").count_rows() == 2 * 7 + 3 + 3


def test_tidy_compacts_folds_and_prunes_keeping_the_start_version(store):
    store.write(_docs("a", 5), "fp")
    store.protect_versions("run1")
    start = store.table("nodes").version
    for k in range(6):
        store.write(_docs(f"b{k}-", 4, seed=k), "fp", stored=[])
    nodes = store.table("nodes")
    assert maintenance.small_fragments(nodes) == 7
    assert store.tidy(run_id="run1", keep_versions_days=7, min_small=8) == {}
    removed = store.tidy(run_id="run1", keep_versions_days=7, min_small=4)
    assert set(removed) == {"nodes", "documents"} and removed["nodes"] >= 5
    assert maintenance.small_fragments(nodes) == 1
    versions = [v["version"] for v in nodes.list_versions()]
    assert versions == [start, nodes.version]  # the start version and the latest
    nodes.checkout(start)
    assert nodes.count_rows() == 5 * 7  # still readable: its files were kept
    nodes.checkout_latest()
    assert nodes.count_rows() == 29 * 7
    assert store.load_tree("b3-0002").tree.n == 4


@pytest.mark.parametrize("keep_days", [0.0, 7.0])
def test_maintain_keeps_earlier_start_versions_for_the_retention(store, keep_days):
    store.write(_docs("a", 2), "fp")
    store.protect_versions("r1")
    store.write(_docs("b", 2), "fp", stored=[])
    store.maintain(run_id="r1", keep_versions_days=keep_days, min_fragments=8,
                   min_old_versions=1)
    store.protect_versions("r2")
    store.write(_docs("c", 2), "fp", stored=[])
    store.maintain(run_id="r2", keep_versions_days=keep_days, min_fragments=8,
                   min_old_versions=1)
    tags = store.table("documents").tags.list()
    want = {"sproutrag-before-r2"} | ({"sproutrag-before-r1"} if keep_days else set())
    assert set(tags) == want
    assert len(store.table("documents").list_versions()) == len(want) + 1


def test_a_search_on_a_version_a_run_removed_runs_again_on_the_latest(store):
    import numpy as np

    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.params import SearchParams
    from sproutrag.search.retriever import Retriever
    from tests.helpers import toy_encoder, toy_store

    for k in range(6):
        store.write(_docs(f"d{k}-", 3, seed=10 * k), "fp", stored=[])
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    reader = Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=0)
    qvec = store.load_tree("d2-0001").tree.vectors[0]
    with reader._one_view():
        reader._current()  # the search's view: the tables as they are now
        run = toy_store(store.uri)  # an index run in another process
        run.write([toy_document("d1-0001", "five six", seed=3)], "fp", stored=["d1-0001"])
        assert run.tidy(run_id="r", keep_versions_days=7, min_small=2)
        hits = reader.search_vector("q", qvec, k=3)
    fresh = Retriever(store.uri, encoder=toy_encoder(weights), memory_rows=0)
    assert [h.node_id for h in hits] == [h.node_id for h in fresh.search_vector("q", qvec, k=3)]
    assert hits[0].doc_id == "d2-0001"


def _unreferenced(tbl) -> set[str]:
    """Data files of TBL (local) that no version it keeps refers to."""
    import os

    import lance

    ds = tbl.to_lance()
    used = {f.path for v in tbl.list_versions()
            for fragment in lance.dataset(ds.uri, version=v["version"]).get_fragments()
            for f in fragment.data_files()}
    return set(os.listdir(f"{ds.uri}/data")) - used


def test_files_of_removed_versions_are_deleted_within_a_week(store):
    """pylance 9's cleanup lists only files older than the oldest kept version (lance
    #8516, fixed upstream after the pinned release): the batch files a run compacts stay
    on disk, unreferenced, while its start version is kept. Once a week old they are
    deleted by the next run that prunes: the cost is bounded by a week of runs."""
    import os
    import time

    store.write(_docs("a", 5), "fp")
    store.protect_versions("run1")
    for k in range(6):
        store.write(_docs(f"b{k}-", 4, seed=k), "fp", stored=[])
    store.tidy(run_id="run1", keep_versions_days=7, min_small=4)
    nodes = store.table("nodes")
    left = _unreferenced(nodes)  # empty once the storage library deletes them at once
    week_ago = time.time() - 8 * 86400
    data = f"{nodes.to_lance().uri}/data"
    for name in os.listdir(data):
        os.utime(f"{data}/{name}", (week_ago, week_ago))
    store.protect_versions("run2")
    for k in range(6):
        store.write(_docs(f"c{k}-", 4, seed=k), "fp", stored=[])
    store.tidy(run_id="run2", keep_versions_days=7, min_small=4)
    assert not left & _unreferenced(nodes)  # last week's leftovers are gone
    assert nodes.count_rows() == 53 * 7 and store.load_tree("b3-0002").tree.n == 4
