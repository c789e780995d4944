"""The Store: writes, replacements and deletions readers see whole, old schemas migrated,
only current trees searched (toy documents, no model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sproutrag.schemas import tables

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.storage.store import StaleIndexError, Store, sql_quote
from tests.helpers import (
    TOY_DIM,
    TOY_ENCODER,
    V1_DROPPED,
    V4_ADDED,
    make_schema_1,
    make_schema_3,
    toy_document,
    toy_encoder,
    toy_store,
)


def test_write_and_read_back(store):
    item = toy_document("a.txt", "alpha beta gamma delta")
    assert store.write([item], "fp1") == 7
    got = store.load_tree("a.txt")
    assert np.array_equal(got.tree.left, item.tree.left)
    assert np.array_equal(got.tree.leaf_order, item.tree.leaf_order)
    assert np.allclose(got.tree.vectors, item.tree.vectors)
    assert got.texts == ["alpha", "beta", "gamma", "delta"]
    assert store.indexed() == {"a.txt": (item.doc.content_hash, "fp1")}
    nodes = store.table("nodes").to_arrow().to_pydict()
    for s, e, t, left in zip(nodes["start"], nodes["end"], nodes["text"], nodes["left"]):
        if left == -1:
            assert item.doc.text[s:e] == t
        else:
            assert s is None and e is None and t is None


def test_replace_removes_old_nodes_and_delete_removes_all(store):
    store.write([toy_document("a", "one two three four five"), toy_document("b", "x y")], "fp")
    store.write([toy_document("a", "short now", seed=1)], "fp")
    ids = store.table("nodes").to_arrow().column("node_id").to_pylist()
    assert sorted(i for i in ids if i.startswith("a:")) == ["a:0", "a:1", "a:2"]
    assert store.load_tree("b").tree.n == 2
    store.delete(["a"])
    assert set(store.indexed()) == {"b"}
    left = store.table("nodes").to_arrow().column("doc_id").to_pylist()
    assert set(left) == {"b"}


def test_doc_ids_with_quotes_cannot_inject(store):
    store.write([toy_document("it's", "a b"), toy_document("other", "c d e")], "fp")
    assert store.load_tree("it's").tree.n == 2
    with pytest.raises(KeyError):
        store.load_tree("x' OR '1'='1")
    store.delete(["x' OR doc_id != '"])
    assert set(store.indexed()) == {"it's", "other"}
    assert sql_quote("a'b") == "'a''b'"


def test_other_encoder_is_refused(tmp_path):
    toy_store(tmp_path / "db").write([toy_document("a", "a b")], "fp")
    other = Store(str(tmp_path / "db"), encoder_id="other/model", dim=TOY_DIM)
    with pytest.raises(StaleIndexError, match="other/model"):
        other.indexed()
    opened = Store.open_existing(str(tmp_path / "db"))
    assert (opened.encoder_id, opened.dim) == (TOY_ENCODER, TOY_DIM)


def _node_ids(store) -> list[str]:
    return store.table("nodes").to_arrow().column("node_id").to_pylist()


def test_readers_see_a_replaced_document_wholly_old_or_wholly_new(store):
    """The commit sequence of a replacement, stopped after each commit (what a kill
    leaves): load_tree always gives one whole version, the one `documents` names."""
    from sproutrag.storage.rows import document_rows, node_rows

    old = toy_document("a", "one two three", seed=1)
    new = toy_document("a", "four five six seven", seed=2)
    store.write([old, toy_document("b", "x y")], "fp")
    # 1. nodes-written: the new tree is appended under a fresh tree id
    store.table("nodes").add(node_rows(new, "t-new"))
    got = store.load_tree("a")
    assert got.texts == ["one", "two", "three"] and np.allclose(got.tree.vectors,
                                                                old.tree.vectors)
    assert store.indexed()["a"][0] == old.doc.content_hash
    # 2. documents-written: the documents row switches text and tree in one commit
    store.table("documents").merge_insert("doc_id").when_matched_update_all() \
        .when_not_matched_insert_all().execute(document_rows([new], "fp", {"a": "t-new"}))
    got = store.load_tree("a")
    assert got.texts == ["four", "five", "six", "seven"]
    assert np.allclose(got.tree.vectors, new.tree.vectors)
    assert len(_node_ids(store)) > len(set(_node_ids(store)))  # the old tree is still there
    # 3. the next run removes the tree no documents row names
    assert store.collect_garbage() == 5
    assert sorted(_node_ids(store)) == sorted(
        [f"a:{i}" for i in range(7)] + ["b:0", "b:1", "b:2"])
    assert store.load_tree("b").tree.n == 2


def test_a_completed_write_leaves_exactly_the_current_trees(store):
    store.write([toy_document("a", "one two three four five"), toy_document("b", "x y")], "fp")
    store.write([toy_document("a", "short now", seed=1), toy_document("c", "p q r")], "fp")
    trees = store.current_trees()
    nodes = store.table("nodes").to_arrow()
    assert sorted(set(zip(nodes["doc_id"].to_pylist(), nodes["tree_id"].to_pylist()))) == \
        sorted((d, t) for d, (t, _) in trees.items())
    assert len(set(_node_ids(store))) == nodes.num_rows == 3 + 3 + 5
    version = store.table("nodes").version
    assert store.collect_garbage() == 0 and store.table("nodes").version == version


def test_deleted_documents_disappear_with_their_documents_row(store):
    store.write([toy_document("a", "one two"), toy_document("b", "x y")], "fp")
    store.table("documents").delete("doc_id = 'a'")  # what a kill after that commit leaves
    with pytest.raises(KeyError, match="'a'"):
        store.load_tree("a")
    assert store.collect_garbage() == 3
    assert set(store.table("nodes").to_arrow().column("doc_id").to_pylist()) == {"b"}


def test_unchanged_maintenance_writes_nothing(store):
    store.write([toy_document("a", "one two")], "fp")
    store.start_run(_run_row("r1", "running"))
    store.finish_run(_run_row("r1", "completed"))
    store.maintain(run_id="r1", keep_versions_days=7, min_fragments=8, min_old_versions=1)
    # the first maintenance builds the scalar and full-text indexes, then prunes the
    # versions that made them: the version before the run (untagged here) and the latest
    names = {n: {i.name for i in store.table(n).list_indices()} for n in ("documents", "nodes")}
    assert names == {"documents": {"doc_id_idx"},
                     "nodes": {"doc_id_idx", "tree_id_idx", "left_idx", "text_idx"}}
    assert {n: len(store.table(n).list_versions()) for n in names} == {
        "documents": 1, "nodes": 1}
    before = {n: store.table(n).version for n in ("documents", "nodes", "runs")}
    assert store.maintain(run_id="r2", keep_versions_days=7, min_fragments=8,
                          min_old_versions=1) == {}
    assert {n: store.table(n).version for n in before} == before  # a second: nothing
    removed = store.maintain(run_id="r3", keep_versions_days=0, min_fragments=8,
                             min_old_versions=2)
    assert removed == {"runs": 2}
    assert {n: len(store.table(n).list_versions()) for n in before} == {
        "documents": 1, "nodes": 1, "runs": 1}


def _run_row(run_id: str, status: str) -> dict:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    return {"run_id": run_id, "corpus": "c", "started_at": now,
            "finished_at": None if status == "running" else now, "n_new": 0, "n_changed": 0,
            "n_deleted": 0, "n_unchanged": 0, "n_failed": 0, "n_chunks": 0, "n_nodes": 0,
            "n_chars": 0, "failures_json": "[]", "timings_json": "{}", "seconds": 0.0,
            "index_fingerprint": "fp", "status": status, "message": None}


def test_schema_1_is_refused_with_the_fix_then_migrated_in_place(store):
    from sproutrag.storage.migrate import migrate
    from sproutrag.storage.store import OldSchemaError

    store.write([toy_document("a", "one two three"), toy_document("it's", "x y")], "fp")
    store.start_run(_run_row("r1", "running"))
    store.finish_run(_run_row("r1", "completed"))
    make_schema_1(store.uri)
    with pytest.raises(OldSchemaError, match=r"schema version 1.*sproutrag index CORPUS"):
        Store.open_existing(store.uri)
    assert migrate(store.uri) == {"nodes": "1", "documents": "1", "runs": "1"}
    assert migrate(store.uri) == {}  # idempotent: a crash between tables is finished later
    opened = Store.open_existing(store.uri)
    assert opened.current_trees() == {"a": ("legacy:a", 3), "it's": ("legacy:it's", 2)}
    assert opened.load_tree("a").texts == ["one", "two", "three"]
    assert opened.collect_garbage() == 0
    [run] = opened.table("runs").to_arrow().to_pylist()
    assert (run["run_id"], run["status"], run["message"]) == ("r1", "completed", None)
    for name in V1_DROPPED:
        meta = opened.table(name).schema.metadata
        assert meta[b"sproutrag.schema_version"] == tables.SCHEMA_VERSION.encode()


def make_schema_2(db: str) -> None:
    """Rewrite a current database as schema version 2 wrote it: no `flow_run_id` in
    `runs` and `results`, `results` without any SproutRAG metadata, no `index_settings`,
    metadata version 2."""
    import lancedb
    import pyarrow as pa

    conn = lancedb.connect(db)
    if "index_settings" in conn.list_tables().tables:
        conn.drop_table("index_settings")
    for name in ("nodes", "documents", "runs", "results"):
        data = conn.open_table(name).to_arrow()
        dropped = [c for c in ["flow_run_id", *V4_ADDED.get(name, [])]
                   if c in data.schema.names]
        data = data.drop_columns(dropped)
        meta = ({**data.schema.metadata, b"sproutrag.schema_version": b"2"}
                if name != "results" else None)
        schema = pa.schema(list(data.schema), metadata=meta)
        conn.create_table(name, data=data.cast(schema), schema=schema, mode="overwrite")


def _schema_2_with_a_run_and_a_result(store) -> None:
    """STORE holding one document, one run and one `results` row, made schema 2."""
    import pyarrow as pa

    store.write([toy_document("a", "one two three")], "fp")
    store.start_run(_run_row("r1", "completed"))
    row = {"run_id": "q1", "qid": "q", "rank": 1, "doc_id": "a", "node_id": "a:0",
           "score": 0.5, "spans": [[0, 3]], "text": "one", "error": None, "mode": "tree",
           "k": 1, "created_at": _run_row("x", "running")["started_at"]}
    store.add_results(pa.Table.from_pylist([row], schema=tables.RESULTS))
    make_schema_2(store.uri)


def test_schema_2_is_migrated_in_place_with_results_metadata_and_flow_run_ids(store):
    """Version 3: `runs` and `results` gain flow_run_id (null for old rows) and
    `results` the schema metadata every table carries."""
    from sproutrag.schemas import tables

    from sproutrag.storage.migrate import migrate
    from sproutrag.storage.store import OldSchemaError

    _schema_2_with_a_run_and_a_result(store)
    with pytest.raises(OldSchemaError, match=r"schema version 2.*sproutrag index CORPUS"):
        Store.open_existing(store.uri)
    assert migrate(store.uri) == {"nodes": "2", "documents": "2", "runs": "2", "results": "?"}
    assert migrate(store.uri) == {}
    opened = Store.open_existing(store.uri)
    for name in ("nodes", "documents", "runs", "results"):
        meta = opened.table(name).schema.metadata
        assert meta[b"sproutrag.schema_version"] == tables.SCHEMA_VERSION.encode()
        assert (meta[b"sproutrag.encoder"], meta[b"sproutrag.dim"]) == (b"fake/encoder", b"8")
    [run] = opened.table("runs").to_arrow().to_pylist()
    [res] = opened.table("results").to_arrow().to_pylist()
    assert run["flow_run_id"] is None and res["flow_run_id"] is None
    assert (res["qid"], res["spans"], run["status"]) == ("q", [[0, 3]], "completed")
    assert opened.load_tree("a").texts == ["one", "two", "three"]


def test_a_migration_killed_between_tables_is_refused_and_checked_until_finished(
        store, monkeypatch):
    """A run killed while it migrated a version-2 database: `nodes` and `documents`, the
    tables readers check, are migrated last, so readers refuse the database until a run
    finishes (they had served its old trees as current); `check` names each old table
    with the command that migrates, not `--verify`, also when a run of an older release
    left only `runs` behind."""
    from sproutrag.storage.check import check_database
    from sproutrag.storage.migrate import migrate
    from sproutrag.storage.store import OldSchemaError

    _schema_2_with_a_run_and_a_result(store)
    monkeypatch.setenv("SPROUTRAG_CRASH_AT", "migrated-documents:ENOSPC")
    with pytest.raises(OSError, match="No space left"):
        migrate(store.uri)
    monkeypatch.delenv("SPROUTRAG_CRASH_AT")
    with pytest.raises(OldSchemaError, match=r"table 'nodes' .* schema version 2; .*"
                       r"sproutrag index CORPUS"):
        Store.open_existing(store.uri)
    report = check_database(store.uri)
    assert report.problems == [
        f"table 'nodes' has schema version 2, this SproutRAG reads {tables.SCHEMA_VERSION}"]
    summary = report.lines()[-1]
    assert "1 problem found: run `sproutrag index CORPUS --db" in summary
    assert "migrate the database in place" in summary and "--verify" not in summary
    assert migrate(store.uri) == {"nodes": "2"}
    assert check_database(store.uri).healthy
    assert Store.open_existing(store.uri).load_tree("a").texts == ["one", "two", "three"]
    # an older release migrated `nodes` first: its kill could leave `runs` alone behind
    Store.open_existing(store.uri).table("runs").to_lance().update_schema_metadata(
        {"sproutrag.schema_version": "6"})
    assert check_database(store.uri).problems == [
        f"table 'runs' has schema version 6, this SproutRAG reads {tables.SCHEMA_VERSION}"]
    assert migrate(store.uri) == {"runs": "6"} and check_database(store.uri).healthy


def test_schema_3_gains_the_listing_columns_without_a_row_rewritten(store):
    """Version 4: `documents` gains source_size, modified_at, source_etag (nulls for
    stored rows); no data file is rewritten and the index fingerprint stays."""
    from sproutrag.storage.migrate import migrate
    from sproutrag.storage.store import OldSchemaError

    store.write([toy_document("a", "one two three")], "fp")
    store.start_run(_run_row("r1", "completed"))
    make_schema_3(store.uri)
    with pytest.raises(OldSchemaError, match=r"schema version 3.*sproutrag index CORPUS"):
        Store.open_existing(store.uri)
    files = {p for p in Path(store.uri).rglob("data/*.lance")}
    assert migrate(store.uri) == {"nodes": "3", "documents": "3", "runs": "3"}
    assert migrate(store.uri) == {}
    # no row rewritten: every data file stays; the names are new files of new columns
    after = {p for p in Path(store.uri).rglob("data/*.lance")}
    assert files <= after
    assert {p.parent.parent.name for p in after - files} <= {"documents.lance"}
    opened = Store.open_existing(store.uri)
    state = opened.stored_state().to_pylist()
    assert [(r["doc_id"], r["index_fingerprint"], r["source_size"]) for r in state] == [
        ("a", "fp", None)]
    assert opened.load_tree("a").texts == ["one", "two", "three"]


def migrated_in_place(store, version: str) -> Store:
    """STORE turned into schema VERSION, refused until migrated, then migrated once (a
    second run finds nothing to do) without rewriting a data file; opened."""
    from sproutrag.storage.migrate import migrate
    from sproutrag.storage.store import OldSchemaError

    make_schema_3(store.uri, version)
    with pytest.raises(OldSchemaError,
                       match=rf"schema version {version}.*sproutrag index CORPUS"):
        Store.open_existing(store.uri)
    files = {p for p in Path(store.uri).rglob("data/*.lance")}
    assert migrate(store.uri) == {"nodes": version, "documents": version}
    assert migrate(store.uri) == {}
    assert files <= {p for p in Path(store.uri).rglob("data/*.lance")}
    return Store.open_existing(store.uri)


def test_schema_4_gains_each_documents_name_from_its_text_and_title(store):
    """Version 5: `documents` gains name and name_key, computed from the stored text and
    title (a title wins; a heading-like first line else; none for a sentence); no row
    rewritten, the index fingerprint stays."""
    from dataclasses import replace

    from sproutrag.names import name_key

    titled = toy_document("t", "Some text here. More.")
    titled = replace(titled, doc=replace(titled.doc, title="Tim Brown (designer)"))
    store.write([toy_document("h", "Marlow Shipping Ltd\nThe company ships. It sails."),
                 toy_document("s", "Not a name. Just a sentence."), titled], "fp")
    opened = migrated_in_place(store, "4")
    rows = {r["doc_id"]: (r["name"], r["name_key"], r["index_fingerprint"])
            for r in opened.table("documents").to_arrow().to_pylist()}
    assert rows == {"h": ("marlow shipping ltd", name_key("marlow shipping ltd"), "fp"),
                    "s": (None, None, "fp"),
                    "t": ("tim brown", name_key("tim brown"), "fp")}


def test_schema_5_gains_each_documents_key_and_a_search_finds_them(store):
    """Version 6: `documents` gains doc_key, computed from doc_id by one more commit; no
    row rewritten, the index fingerprint stays, and the view finds every document by it."""
    from sproutrag.doc_keys import doc_key
    from sproutrag.search.view import TablesView
    from sproutrag.storage.reader import Reader

    store.write([toy_document("a", "one two three"), toy_document("b/é.txt", "four five")],
                "fp")
    opened = migrated_in_place(store, "5")
    rows = {r["doc_id"]: (r["doc_key"], r["index_fingerprint"])
            for r in opened.table("documents").to_arrow().to_pylist()}
    assert rows == {"a": (doc_key("a"), "fp"), "b/é.txt": (doc_key("b/é.txt"), "fp")}
    current = TablesView(Reader.open(store.uri)).current()
    trees = opened.current_trees()
    assert current.tree_ids_of(["b/é.txt", "zz", "a"]) == {
        "b/é.txt": trees["b/é.txt"][0], "a": trees["a"][0]}


def test_schema_6_gains_metadata_as_json_and_a_filter_reads_its_fields(store):
    """Version 7: `documents` gains `metadata`, `metadata_json` as a JSON column, by one
    more commit; no row rewritten, the index fingerprint stays, and a `where` filter reads
    a field of it (`json_get_string`, `json_get_int`, `json_array_contains`)."""
    import json
    from dataclasses import replace

    from sproutrag.search.view import TablesView
    from sproutrag.storage.reader import Reader

    def with_metadata(item, fields):
        text = json.dumps(fields, sort_keys=True)
        return replace(item, doc=replace(item.doc, metadata=text))

    store.write([with_metadata(toy_document("a", "one two three"),
                               {"customer": "acme", "year": 2024, "tags": ["nda"]}),
                 with_metadata(toy_document("b", "four five"),
                               {"customer": "zeta", "year": 2019}),
                 toy_document("c", "six seven")], "fp")
    opened = migrated_in_place(store, "6")
    rows = {r["doc_id"]: (r["metadata"], r["index_fingerprint"])
            for r in opened.table("documents").to_arrow().to_pylist()}
    assert json.loads(rows["a"][0]) == {"customer": "acme", "tags": ["nda"], "year": 2024}
    assert rows["c"] == (None, "fp") and rows["b"][1] == "fp"
    view = TablesView(Reader.open(store.uri))
    for where, found in (("json_get_string(metadata, 'customer') = 'acme'", ["a"]),
                         ("json_get_int(metadata, 'year') < 2020", ["b"]),
                         ("json_array_contains(metadata, '$.tags', 'nda')", ["a"]),
                         ("metadata IS NULL", ["c"])):
        assert sorted(view.matching(where)) == found, where
    from sproutrag.search.retriever import QueryError

    with pytest.raises(QueryError, match="JSON functions read the `metadata` column"):
        view.matching("json_get_string(metadata_json, 'customer') = 'acme'")



def test_a_refused_filter_names_what_to_write_and_polars_reads_documents(store):
    """README's filters: a time written as a plain string, a typed JSON read of a field
    one document holds as text; each refused with the form that works, which works. And
    README's polars recipe: `documents.to_polars()` fails on the JSON column (LanceDB
    0.40), `pl.from_arrow(documents.to_arrow())` reads it."""
    import json
    from dataclasses import replace

    import polars as pl

    from sproutrag.search.retriever import QueryError
    from sproutrag.search.view import TablesView
    from sproutrag.storage.reader import Reader

    docs = [("a", {"year": 2024}), ("b", {"year": "n/a"}), ("c", {"year": 2019})]
    store.write([replace(d := toy_document(i, "one two"), doc=replace(
        d.doc, metadata=json.dumps(m))) for i, m in docs], "fp")
    view = TablesView(Reader.open(store.uri))
    with pytest.raises(QueryError, match=r"as another type; `try_cast\(json_get_string"):
        view.matching("json_get_int(metadata, 'year') >= 2020")
    assert view.matching("try_cast(json_get_string(metadata, 'year') AS BIGINT) >= 2020"
                         ) == ["a"]
    with pytest.raises(QueryError, match="write a time as `TIMESTAMP '2025-01-01 00:00:00'"):
        view.matching("indexed_at > '2025-01-01'")
    assert sorted(view.matching("indexed_at > TIMESTAMP '2025-01-01 00:00:00'")) == [
        "a", "b", "c"]
    documents = store.table("documents")
    with pytest.raises(Exception, match="metadata"):
        documents.to_polars().collect()
    frame = pl.from_arrow(documents.to_arrow())
    assert sorted(frame["doc_id"].to_list()) == ["a", "b", "c"]
    assert json.loads(frame.filter(pl.col("doc_id") == "b")["metadata"][0]) == {
        "year": "n/a"}

def test_retriever_reads_only_current_trees(store):
    """Tree and flat search (memory and LanceDB first stage) over a database holding
    other trees than the current ones: those rows are never returned."""
    from sproutrag.search.retriever import Retriever
    from sproutrag.storage.rows import node_rows

    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    encoder = toy_encoder(weights)
    orphan = toy_document("first", "never switched in")
    store.table("nodes", create=True).add(node_rows(orphan, "t-orphan"))  # killed 1st run
    qvec = orphan.tree.vectors[0]
    empty = Retriever(store.uri, encoder=encoder)
    assert empty.search_vector("q", qvec, k=3) == []
    assert empty.search_vector("q", qvec, k=3, mode="flat") == []

    store.write([toy_document("a", "one two three four", seed=1)], "fp")
    stale = toy_document("a", "stale words here now", seed=5)
    store.table("nodes").add(node_rows(stale, "t-stale"))  # a next tree, not switched in
    text = store.table("documents").to_arrow().to_pylist()[0]["text"]
    for memory_rows in (300_000, 0):
        r = Retriever(store.uri, encoder=encoder, memory_rows=memory_rows)
        for mode, doc_ids in (("tree", None), ("flat", None), ("flat", ["a"])):
            hits = r.search_vector("q", stale.tree.vectors[0], k=4, mode=mode,
                                   doc_ids=doc_ids)
            assert hits and {h.doc_id for h in hits} == {"a"}
            for h in hits:
                assert h.text == "\n".join(text[s:e] for s, e in h.spans)


def test_table_handles_are_opened_once_and_refresh_follows_other_writers(store, monkeypatch):
    """`Store.table` opens a table once (no listing, no re-open per call: each is a round
    trip on S3); the handle keeps its version until `refresh()`, which then sees what
    another Store (another process) wrote, on the same handle."""
    from collections import Counter

    from lancedb.db import LanceDBConnection

    store.write([toy_document("a", "one two three")], "fp")
    calls = Counter()
    for name in ("open_table", "list_tables", "table_names"):
        real = getattr(LanceDBConnection, name)

        def counted(self, *args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(LanceDBConnection, name, counted)
    reader = Store.open_existing(store.uri)
    docs = reader.table("documents")
    for _ in range(5):
        assert reader.table("documents") is docs and reader.table("nodes") is not None
        reader.load_tree("a")
    assert calls == {"open_table": 2}  # nodes (encoder, dim) and documents, once each
    store.write([toy_document("b", "x y")], "fp")
    assert sorted(reader.indexed()) == ["a"]  # one version until the reader refreshes
    reader.refresh()
    assert sorted(reader.indexed()) == ["a", "b"] and reader.load_tree("b").tree.n == 2
    assert reader.table("documents") is docs and calls == {"open_table": 2}


def test_versions_pinned_for_a_search_until_a_refresh(tmp_path):
    """Within `versions_pinned` a table's version is asked of Lance once; another
    writer's commit shows only after `refresh`, which forgets the memo."""
    store = toy_store(tmp_path / "db")
    store.write([toy_document("a", "one two three", seed=1)], "fp")
    reader = Store.open_existing(store.uri)
    before = reader.version("documents")
    with reader.versions_pinned():
        assert reader.version("documents") == before
        store.write([toy_document("b", "four five", seed=2)], "fp")  # another writer
        assert reader.version("documents") == before
        reader.refresh()
        after = reader.version("documents")
        assert after > before
        assert reader.table("documents").version == after
    assert reader.version("nope") == -1
