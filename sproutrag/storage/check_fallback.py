"""The reads `sproutrag check` falls back to when its own cannot be made (a table that
cannot be read, an older schema), through LanceDB's queries:

* `check_tables`: every column of every table read (a table whose read fails is
  unreadable), every stored text hashed, each document's tree counted from the `doc_id`
  and `tree_id` columns of `nodes`;
* `check_trees`: each intact document's stored tree validated and its leaf texts
  compared, one `Store.load_tree` (a scan of `nodes`) per document.

`sproutrag.storage.check` also connects (`connect`) and reads the small tables
(`read_other_tables`) with these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow.compute as pc

from sproutrag.errors import short_error
from sproutrag.storage.check_report import Health, Report
from sproutrag.storage.document_problems import (
    TEXT_CHANGED,
    hashes_match,
    leaf_problem,
    name_problems,
    size_problem,
)


def connect(uri: str, storage_options: dict[str, str] | None) -> tuple[Any, set[str]]:
    """(LanceDB connection, names of its tables) of the database at URI."""
    import lancedb

    db = lancedb.connect(str(uri), storage_options=storage_options)
    return db, set(db.list_tables().tables)


def _scan(tbl, columns: list[str] | None) -> Iterator[Any]:
    query = tbl.search()
    if columns is not None:
        query = query.select([c for c in columns if c in tbl.schema.names])
    yield from query.limit(None).to_batches()


def _guard(health: Health, name: str, fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - every read error of a table is damage
        health.unreadable[name] = short_error(exc)


def _tree_sizes(tbl, health: Health) -> None:
    """doc_id -> tree_id -> number of `nodes` rows, from two small columns."""
    trees: dict[str, dict[str, int]] = {}
    for batch in _scan(tbl, ["doc_id", "tree_id"]):
        if "tree_id" not in batch.schema.names:  # schema version 1: migrated next
            continue
        pairs = pc.binary_join_element_wise(batch.column("doc_id"), batch.column("tree_id"),
                                            "\x00")
        for row in pc.value_counts(pairs).to_pylist():
            doc, tree = row["values"].split("\x00", 1)
            trees.setdefault(doc, {})
            trees[doc][tree] = trees[doc].get(tree, 0) + row["counts"]
        health.n_nodes += batch.num_rows
    health.trees = trees


def _check_documents(tbl, health: Health, columns: list[str] | None) -> None:
    """Hash every stored text; compare each document's tree with its `nodes` rows."""
    nodes_ok = "nodes" not in health.unreadable
    for batch in _scan(tbl, columns):
        rows = batch.to_pydict()
        health.n_documents += batch.num_rows
        same = hashes_match(rows["text"], rows["content_hash"])
        names = dict(name_problems(batch, rows["text"], same))
        for i, doc_id in enumerate(rows["doc_id"]):
            if "tree_id" in rows:
                health.named[doc_id] = rows["tree_id"][i]
            if not same[i]:
                health.documents[doc_id] = TEXT_CHANGED
                continue
            if i in names:
                health.documents[doc_id] = names[i]
                continue
            if not nodes_ok or "tree_id" not in rows:
                continue
            want = 2 * rows["n_chunks"][i] - 1
            got = health.trees.get(doc_id, {}).get(rows["tree_id"][i], 0)
            if got != want:
                health.documents[doc_id] = size_problem(rows["tree_id"][i], got, want)


def check_tables(uri: str, storage_options) -> Health:
    """Every column of every table read (a table whose read fails is unreadable), every
    stored text hashed, each document's tree counted: the reads `check_database` falls
    back to when its own cannot be made."""
    db, names = connect(uri, storage_options)
    health = Health()
    if "nodes" in names:
        _guard(health, "nodes", lambda: _tree_sizes(db.open_table("nodes"), health))
        if "nodes" not in health.unreadable:
            _guard(health, "nodes", lambda: _drain(db.open_table("nodes"), None))
    if "documents" in names:
        _guard(health, "documents",
               lambda: _check_documents(db.open_table("documents"), health, None))
    read_other_tables(db, names, health)
    return health


def read_other_tables(db: Any, names: set[str], health: Health) -> None:
    """Every column of `runs`, `index_settings` and `results` (those of NAMES) read once;
    a table whose read fails goes to HEALTH's ``unreadable``."""
    for name in ("runs", "index_settings", "results"):
        if name in names:
            _guard(health, name, lambda n=name: _drain(db.open_table(n), None))


def _drain(tbl, columns: list[str] | None) -> None:
    for _ in _scan(tbl, columns):
        pass


def check_trees(uri: str, storage_options, report: Report) -> None:
    """Validate each intact document's stored tree and compare its leaf texts, one
    `Store.load_tree` per document (a scan of `nodes` each: for what `check_database`
    does not read itself, an older schema)."""
    from sproutrag.storage.store import StaleIndexError, Store

    try:
        store = Store.open_existing(uri, storage_options=storage_options)
    except StaleIndexError as exc:
        if not report.health.old_schemas:  # else said, a line a table
            report.problems.append(f"schema: {exc}")
        return
    docs = store.table("documents")
    if docs is None:
        return
    for batch in _scan(docs, ["doc_id", "tree_id", "text"]):
        for doc_id, tree_id, text in zip(*batch.to_pydict().values()):
            if doc_id in report.health.documents:
                continue
            problem = tree_problem(store, doc_id, tree_id, text)
            if problem:
                report.problems.append(f"document {doc_id!r}: {problem}")
                report.damaged.setdefault(doc_id, problem)


def tree_problem(store, doc_id: str, tree_id: str, text: str) -> str | None:
    """Why the tree TREE_ID of DOC_ID, read by `Store.load_tree`, is invalid or its leaf
    texts are not TEXT's (None: it is whole)."""
    try:
        stored = store.load_tree(doc_id, tree_id)
    except (ValueError, KeyError) as exc:  # InvalidTreeError, a lost tree
        return f"its tree {tree_id} is invalid: {exc}"
    return leaf_problem(stored, tree_id, text)
