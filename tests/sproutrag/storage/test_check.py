"""Damaged tables and documents: found by the checks, never made worse by garbage
collection, re-indexed by the plan (sproutrag.storage.check, Store.collect_garbage)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sproutrag.documents import SourceDocument, content_hash
from sproutrag.ingest.plan import plan_changes
from sproutrag.ingest.run_summary import RunSummary
from sproutrag.ingest.sources import Listed
from sproutrag.storage.check import (
    DamagedTableError,
    check_database,
    damaged_documents,
    explain_damage,
    move_aside,
)
from sproutrag.storage.garbage import tree_damage
from sproutrag.storage.run_check import check_files
from sproutrag.storage.store import DatabaseNotFoundError, Store
from tests.helpers import toy_document


@pytest.fixture
def store(store):
    """The toy store holding three documents."""
    docs = [("a", "one two three"), ("b", "x y"), ("c", "p q r s")]
    store.write([toy_document(doc_id, text) for doc_id, text in docs], "fp")
    return store


def _rolled_back(store: Store) -> None:
    """`a` re-indexed with a new tree, then `nodes` restored to its older version: the
    documents row of `a` names a tree that is gone, its older tree is back."""
    version = store.table("nodes").version
    store.write([toy_document("a", "one two three four five", seed=1)], "fp")
    nodes = store.table("nodes")
    nodes.checkout(version)
    nodes.restore()


def _data_file(store: Store, table: str) -> Path:
    return next((Path(store.uri) / f"{table}.lance" / "data").glob("*.lance"))


def test_a_healthy_database_checks_healthy(store):
    report = check_database(store.uri)
    assert report.healthy and report.problems == []
    assert report.lines()[-1].endswith("3 documents, 15 nodes rows checked: healthy")
    assert check_files(store.uri) == {}


def test_rolled_back_nodes_the_document_is_damaged_and_gc_keeps_its_old_tree(store):
    _rolled_back(store)
    old = store.table("nodes").count_rows()
    damage = tree_damage(store.table("nodes"), store.stored_state())
    assert list(damage.damaged) == ["a"] and "has no nodes" in damage.damaged["a"]
    assert store.collect_garbage() == 0  # the only tree `a` has stays
    assert store.table("nodes").count_rows() == old
    report = check_database(store.uri)
    assert not report.healthy and report.problems[0].startswith("document 'a': its tree")
    assert damage.stale == []  # its older tree is kept (the document is damaged)
    texts = {"a": "one two three four five", "b": "x y", "c": "p q r s"}
    listed = [Listed(d, content_hash=content_hash(t)) for d, t in texts.items()]
    plan = plan_changes(listed, store.stored_state(), "fp", damaged=damage.damaged)
    assert [i.doc_id for i in plan.to_read] == ["a"] and plan.n_unchanged == 2
    assert plan.verdict(SourceDocument("a", "a", texts["a"], content_hash(texts["a"]))) == (
        "changed")
    # re-indexing `a` leaves exactly the current trees
    store.write([toy_document("a", "one two three four five", seed=1)], "fp")
    assert check_database(store.uri).healthy
    assert store.table("nodes").count_rows() == 9 + 3 + 7



def test_a_search_of_a_document_whose_tree_is_gone_says_so_in_one_line(store):
    """A `documents` row naming a tree `nodes` does not hold: the search names the
    document and the command that mends it (it was an internal error, a KeyError)."""
    import numpy as np

    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.errors import DamagedDocumentError, SproutragError
    from sproutrag.params import SearchParams
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, toy_encoder

    _rolled_back(store)
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    r = Retriever(store.uri, encoder=toy_encoder(weights))
    q = np.ones(TOY_DIM, np.float32)
    with pytest.raises(DamagedDocumentError, match="document 'a' of .* names a tree the "
                       "nodes table does not hold.*--verify` re-indexes them") as got:
        r.search_vector("q", q, k=3, doc_ids=["a", "b"])
    assert isinstance(got.value, SproutragError) and got.value.doc_ids == ["a"]
    assert {h.doc_id for h in r.search_vector("q", q, k=3, doc_ids=["b"])} == {"b"}

def test_a_search_of_a_document_whose_tree_is_invalid_says_so_in_one_line(store):
    """A stored tree made invalid in place: the search names the document, what is wrong
    and the commands that find and mend it (it said the tree's problem alone)."""
    import numpy as np

    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.errors import DamagedDocumentError
    from sproutrag.params import SearchParams
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, toy_encoder

    store.table("nodes").update(where="doc_id = 'c' AND idx = 1", values={"height": 4})
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    r = Retriever(store.uri, encoder=toy_encoder(weights))
    q = np.ones(TOY_DIM, np.float32)
    with pytest.raises(DamagedDocumentError, match="document 'c' of .* has an invalid stored "
                       "tree .*leaf 1 has height 4.*check --db .*--verify` re-indexes them"):
        r.search_vector("q", q, k=3, doc_ids=["a", "c"])
    assert {h.doc_id for h in r.search_vector("q", q, k=3, doc_ids=["a"])} == {"a"}
    assert damaged_documents(store.uri).keys() == {"c"}


def test_gc_does_not_run_without_a_documents_table(store):
    import lancedb

    lancedb.connect(store.uri).drop_table("documents")
    assert store.collect_garbage() == 0
    assert store.table("nodes").count_rows() == 5 + 3 + 7
    # No run finished: what an interrupted first run leaves (a note, healthy) ...
    report = check_database(store.uri)
    assert report.healthy and "an interrupted first run" in report.notes[0]
    # ... but once runs stored documents, the missing table is the damage it is.
    run = RunSummary(corpus="c", fingerprint="fp", n_new=3)
    store.start_run(run.to_row())
    store.finish_run(run.finish().to_row())
    report = check_database(store.uri)
    assert report.problems == ["table 'documents' cannot be read: it is missing, though "
                               "finished index runs stored documents (the `runs` table)"]
    assert report.notes == [] and "--full` rebuilds the database" in report.lines()[-1]


def test_a_stored_text_that_does_not_match_its_hash_is_found(store):
    # What nine changed bytes in a data file can do without any read error (the text
    # is compressed in the file, so the test changes it through LanceDB).
    store.table("documents").update(where="doc_id = 'b'", values={"text": "x z"})
    assert damaged_documents(store.uri) == {
        "b": "its stored text does not match its content hash"}
    report = check_database(store.uri)
    assert report.problems == ["document 'b': its stored text does not match its content hash"]
    assert "--verify` re-indexes the damaged documents" in report.lines()[-1]


@pytest.mark.parametrize("change", [{"name_key": 5}, {"name": "'another name'"},
                                    {"doc_key": 5}, {"metadata_json": "'{\"a\": 1}'"}])
def test_a_stored_name_that_its_text_does_not_give_is_found(store, change):
    """A name or name key that is not what the text and title give (the corpus-wide
    fetch would miss the document, or find it by another name), a doc key that is not
    the doc_id's (a query would not find the document), or metadata text without its
    JSON column (a field filter would miss it) is damage: `check` and `--verify` name
    the document, as the fallback reads do."""
    from sproutrag.doc_keys import KEY_CHANGED
    from sproutrag.names import NAME_CHANGED
    from sproutrag.storage.check_fallback import check_tables
    from sproutrag.storage.document_problems import METADATA_CHANGED

    why = (KEY_CHANGED if "doc_key" in change else
           METADATA_CHANGED if "metadata_json" in change else NAME_CHANGED)

    assert store.table("documents").to_arrow().to_pydict()["name"] == [
        "one two three", None, "p q r s"]  # "x y" is too short to name anything
    store.table("documents").update(where="doc_id = 'c'", values_sql={
        k: str(v) for k, v in change.items()})
    assert damaged_documents(store.uri) == {"c": why}
    report = check_database(store.uri)
    assert report.problems == [f"document 'c': {why}"]
    assert "--verify` re-indexes the damaged documents" in report.lines()[-1]
    assert check_tables(store.uri, None).documents == {"c": why}


@pytest.mark.parametrize("damage", ["delete", "truncate"])
@pytest.mark.parametrize("table", ["nodes", "documents", "runs"])
def test_a_lost_or_truncated_data_file_is_found_at_the_start(store, table, damage):
    store.start_run(RunSummary(corpus="c", fingerprint="fp").to_row())
    path = _data_file(store, table)
    if damage == "delete":
        path.unlink()
    else:
        os.truncate(path, path.stat().st_size // 2)
    assert list(check_files(store.uri)) == [table]
    with pytest.raises(DamagedTableError, match=f"table '{table}' of .*sproutrag check --db"):
        with explain_damage(store.uri):
            store.table(table).to_arrow()  # what a query's read does
    report = check_database(store.uri)
    assert report.problems[0].startswith(f"table '{table}' cannot be read")
    assert "--full" in report.lines()[-1]
    assert f"nodes rows read, {table} unreadable: 1 problem found" in report.lines()[-1]
    assert "checked" not in report.lines()[-1]  # rows read before the failure: no check


def test_move_aside_keeps_the_damaged_table_out_of_sight(store):
    _data_file(store, "nodes").unlink()
    moved = move_aside(store.uri, ["nodes"])
    assert Path(moved["nodes"]).is_dir() and ".lance.damaged-" in moved["nodes"]
    store.refresh()  # a Store sees what other connections did once it refreshes
    assert store.table("nodes") is None
    assert check_files(store.uri) == {}


def test_check_of_a_missing_database_creates_nothing(tmp_path):
    with pytest.raises(DatabaseNotFoundError, match="no such folder"):
        check_database(str(tmp_path / "none"))
    assert not (tmp_path / "none").exists()


def _index_files(store: Store, table: str, index: str) -> list[Path]:
    [found] = [i for i in store.table(table).list_indices() if i.name == index]
    return sorted((Path(store.uri) / f"{table}.lance" / "_indices" / found.index_uuid).iterdir())


@pytest.mark.parametrize("index", ["text_idx", "tree_id_idx", "left_idx"])
def test_a_damaged_index_is_reported_and_dropped_for_the_run_to_rebuild(store, index):
    from sproutrag.storage.indexes import damaged_indexes, drop_damaged, ensure_scalar_indexes

    store.ensure_text_index()
    ensure_scalar_indexes(store.written_tables())
    assert check_database(store.uri).healthy
    victim = next(p for p in _index_files(store, "nodes", index) if "docs" in p.name
                  or index != "text_idx")
    victim.unlink()
    report = check_database(store.uri)
    assert report.problems[0].startswith(f"index '{index}' of table 'nodes' cannot be read")
    assert "rebuilds the damaged indexes" in report.lines()[-1]
    assert list(damaged_indexes(store.table("nodes"))) == [index]
    assert list(drop_damaged(store.table("nodes"))) == [index]  # what a run does first
    assert store.load_tree("b").texts == ["x", "y"]  # reads scan meanwhile
    store.maintain(run_id="r", keep_versions_days=0, min_fragments=8, min_old_versions=1)
    assert index in {i.name for i in store.table("nodes").list_indices()}  # built again
    assert check_database(store.uri).healthy


def test_a_json_index_that_loses_documents_is_reported_and_dropped(tmp_path):
    """Lance 9.0.0's JSON index (one a user builds on `documents.metadata`) finds no row
    for some of its values: `check` names it, an index run's first step drops it, and
    filters scan (right) again."""
    import dataclasses
    import json

    from lance.indices import IndexConfig

    from sproutrag.storage.indexes import drop_damaged, wrong_indexes
    from tests.helpers import toy_store

    store = toy_store(tmp_path / "db")
    docs = []
    for i in range(100):
        doc = toy_document(f"d{i:03d}", "one two three", seed=i)
        meta = json.dumps({"customer": f"c{i % 50}"})
        docs.append(dataclasses.replace(doc, doc=dataclasses.replace(doc.doc, metadata=meta)))
    store.write(docs, "fp")
    where = "json_get_string(metadata, 'customer') = 'c7'"

    def matching() -> list[str]:
        tbl = store.table("documents")
        tbl.checkout_latest()
        rows = tbl.search().where(where).select(["doc_id"]).to_list()
        return sorted(r["doc_id"] for r in rows)

    assert matching() == ["d007", "d057"]
    store.table("documents").to_lance().create_scalar_index(
        "metadata", IndexConfig("json", {"target_index_type": "btree", "path": "customer"}),
        name="customer_idx")
    assert matching() == []  # the defect this guards against (a fixed Lance: relax WRONG_INDEXES)
    report = check_database(store.uri)
    assert report.problems == ["index 'customer_idx' of table 'documents' gives wrong "
                               "answers: " + wrong_indexes(store.table("documents"))
                               ["customer_idx"]]
    assert report.lines()[-1].endswith("drops them (derived data: nothing is lost; it "
                                       "builds its own indexes)")
    dropped = drop_damaged(store.table("documents"))  # what a run does first
    assert list(dropped) == ["customer_idx"] and dropped["customer_idx"].startswith(
        "gives wrong answers: a JSON index")
    assert matching() == ["d007", "d057"] and check_database(store.uri).healthy


def test_a_database_whose_documents_were_all_deleted_checks_healthy(store):
    """The probe of a scalar index looks up a value the table holds: an emptied table
    holds none, and its indexes were reported unreadable."""
    from sproutrag.storage.indexes import damaged_indexes, ensure_scalar_indexes

    ensure_scalar_indexes(store.written_tables())
    store.delete(["a", "b", "c"])
    assert damaged_indexes(store.table("nodes")) == {}
    assert check_database(store.uri).healthy
