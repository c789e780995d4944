"""Is the database whole? `sproutrag check`, and what names a damaged table.

LanceDB keeps each table as data files under DB/<table>.lance/data/; a file lost,
truncated or damaged (a failed restore, a disk error) makes every read of the rows it
holds fail, and a document whose `tree_id` names no `nodes` rows (a `nodes` table rolled
back to an older version) is skipped by every query.

* `check_database` (`sproutrag check`): every column of every table read once, every
  stored tree validated (2n - 1 nodes for the document's n chunks, `validate_tree`'s
  checks for all trees at once: `sproutrag.storage.tree_check`), its leaf texts compared
  with the document's text, every stored text hashed and every name checked against its
  text and title (`sproutrag.names.name_problem`); never more than a batch of
  vectors in memory (bench/check.py: a million documents, 5 million `nodes` rows, in
  15-25 s, 1.8 GB). A table that cannot be read is reported from reads of every column
  (`_check_tables`).
* `explain_damage`: a Lance read error becomes one line naming the damaged table (the
  start-of-run check's `sproutrag.storage.run_check.check_files`).
* `move_aside`: what a `--full` index run does with an unreadable table.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.errors import (  # also importable from here
    DamagedIndexError,
    DamagedTableError,
    short_error,  # noqa: F401
)
from sproutrag.storage.run_check import check_files
from sproutrag.storage.tree_check import (
    TEXT_CHANGED,
    TreeFindings,
    hashes_match,
    leaf_problem,
    name_problems,
    read_nodes,
    size_problem,
)

#: Called with (rows of `nodes` and `documents` read so far, rows to read in all).
Progress = Callable[[int, int], None]
#: Rows per batch of `check_database`'s reads (8k `nodes` rows of 384-d vectors: 12 MB),
#: and the bytes Lance may read ahead of them: together they bound its memory.
BATCH_ROWS = 8192
IO_BUFFER_BYTES = 32 << 20


@dataclass
class Health:
    """What a check found: unreadable tables and damaged documents (id -> why).

    ``trees`` and ``named`` are filled by `_check_tables`; `check_database` keeps them
    as arrays (`TreeTable`) and leaves them empty, unless it falls back to
    `_check_tables`'s reads (a table that cannot be read, an older schema).
    """

    unreadable: dict[str, str] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)
    indexes: dict[str, str] = field(default_factory=dict)  # "table.index" -> why
    n_documents: int = 0
    n_nodes: int = 0
    trees: dict[str, dict[str, int]] = field(default_factory=dict)  # doc -> tree -> rows
    named: dict[str, str] = field(default_factory=dict)  # doc -> its documents row's tree


def _connect(uri: str, storage_options: dict[str, str] | None):
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


def _check_tables(uri: str, storage_options) -> Health:
    """Every column of every table read (a table whose read fails is unreadable), every
    stored text hashed, each document's tree counted: the reads `check_database` falls
    back to when its own cannot be made."""
    db, names = _connect(uri, storage_options)
    health = Health()
    if "nodes" in names:
        _guard(health, "nodes", lambda: _tree_sizes(db.open_table("nodes"), health))
        if "nodes" not in health.unreadable:
            _guard(health, "nodes", lambda: _drain(db.open_table("nodes"), None))
    if "documents" in names:
        _guard(health, "documents",
               lambda: _check_documents(db.open_table("documents"), health, None))
    for name in ("runs", "index_settings", "results"):
        if name in names:
            _guard(health, name, lambda n=name: _drain(db.open_table(n), None))
    return health


def _drain(tbl, columns: list[str] | None) -> None:
    for _ in _scan(tbl, columns):
        pass


def move_aside(uri: str, names: list[str]) -> dict[str, str]:
    """Rename the folders of tables NAMES to <name>.lance.damaged-<UTC time> (kept, not
    deleted; LanceDB no longer sees them); returns table -> new path. Local only."""
    from sproutrag.schemas.paths import is_s3

    if is_s3(uri):
        raise DamagedTableError(uri, {n: "moving a damaged table aside is done by hand "
                                      f"on S3: move {uri}/{n}.lance elsewhere, then run "
                                      "again" for n in names})
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    moved = {}
    for name in names:
        src = os.path.join(uri, f"{name}.lance")
        dst = f"{src}.damaged-{stamp}"
        os.rename(src, dst)
        moved[name] = dst
    return moved


@contextmanager
def explain_damage(uri: str, *, storage_options: dict[str, str] | None = None):
    """Turn a Lance read error raised inside into `DamagedTableError` naming the table
    whose files are missing or truncated (`run_check.check_files`, the start-of-run
    check); other errors pass unchanged."""
    try:
        yield
    except (RuntimeError, ValueError, OSError) as exc:
        if isinstance(exc, DamagedTableError) or "lance" not in str(exc).lower():
            raise
        try:
            unreadable = check_files(uri, storage_options=storage_options)
            indexes = {} if unreadable else _damaged_indexes(
                _connect(uri, storage_options)[0], {"nodes", "documents"})
        except Exception:  # noqa: BLE001 - the original error says more
            raise exc from None
        if unreadable:
            raise DamagedTableError(uri, unreadable) from None
        if indexes:
            raise DamagedIndexError(uri, indexes) from None
        raise


@dataclass
class Report:
    """What `sproutrag check` prints: one line per problem, notes, a summary line."""

    uri: str
    health: Health
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Trees `tree_check` flagged that `validate_tree` accepts (not printed; a bug if > 0).
    unconfirmed: int = 0

    @property
    def healthy(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        h = self.health
        head = f"{self.uri}: {h.n_documents} documents, {h.n_nodes} nodes rows checked: "
        if h.unreadable:  # rows read before a table failed are no check of it
            head = (f"{self.uri}: {h.n_documents} documents, {h.n_nodes} nodes rows read, "
                    f"{' and '.join(sorted(h.unreadable))} unreadable: ")
        if self.healthy:
            return [*self.notes, head + "healthy"]
        if h.unreadable:
            advice = (f"`sproutrag index CORPUS --db {self.uri} --full` rebuilds the "
                      "database from the corpus (moving the damaged tables aside)")
        elif h.documents or len(self.problems) > len(h.indexes):
            advice = (f"`sproutrag index CORPUS --db {self.uri} --verify` re-indexes the "
                      "damaged documents")
        else:
            advice = (f"the next `sproutrag index CORPUS --db {self.uri}` rebuilds the "
                      "damaged indexes (derived data: nothing is lost)")
        n = len(self.problems)
        return [*self.problems, *self.notes,
                head + f"{n} problem{'s' if n > 1 else ''} found: {advice}"]


def check_database(uri: str, *, storage_options: dict[str, str] | None = None,
                   progress: Progress | None = None) -> Report:
    """Read every column of every table once and validate every stored tree: a `Report`
    of one line per problem (a table that cannot be read; a document whose text, tree
    size, tree or leaf texts are wrong), notes (debris) and a summary line.

    PROGRESS, when given, is called with (rows of `nodes` and `documents` read, rows in
    all) after each batch. Raises `DatabaseNotFoundError` when URI holds no SproutRAG
    database. Cost: one read of each table in batches of `BATCH_ROWS` rows (`documents`'
    doc_id and tree_id twice); memory at most about 300 bytes per `nodes` row. A
    table that cannot be read, or an older schema, is checked by `_check_tables`'s reads
    instead (the trees of a damaged database are not validated).
    """
    from sproutrag.storage.store import Store

    db, names = _existing(uri, storage_options)
    opened = _open_store(uri, storage_options) if "nodes" in names else None
    found = None
    if isinstance(opened, Store) and _has_tree_ids(opened):
        try:
            health, found = _read_all(opened, db, names, progress)
        except _ReadError as err:
            health = _after_read_error(uri, storage_options, err)
    else:
        health = _check_tables(uri, storage_options)
    health.indexes = _damaged_indexes(db, names - set(health.unreadable))
    report = Report(uri, health)
    report.problems += [f"table {n!r} cannot be read: {why}"
                        for n, why in health.unreadable.items()]
    report.problems += [f"index {i.split('.', 1)[1]!r} of table {i.split('.', 1)[0]!r} "
                        f"cannot be read: {why}" for i, why in health.indexes.items()]
    report.problems += [f"document {d!r}: {why}" for d, why in sorted(health.documents.items())]
    if not {"documents", "nodes"} & set(health.unreadable) and "nodes" in names:
        if found is None:  # an older schema (one line), or what opening the store raised
            _check_trees(uri, storage_options, report)
        else:
            report.problems += [f"document {d!r}: {why}" for d, why in found.problems
                                if d not in health.documents]
            report.unconfirmed = found.unconfirmed
    _note_debris(report, "documents" in names, None if found is None else found.stale())
    return report


def _damaged_indexes(db: Any, names: set[str]) -> dict[str, str]:
    """"table.index" -> why, of the indexes of the tables NAMES that cannot be read (a
    probe query through each: `indexes.probe`)."""
    from sproutrag.storage.indexes import damaged_indexes

    have = set(db.list_tables().tables)
    return {f"{name}.{index}": why for name in sorted(names & have)
            for index, why in damaged_indexes(db.open_table(name)).items()}


def _existing(uri: str, storage_options) -> tuple[Any, set[str]]:
    """(connection, table names) of the database at URI; `DatabaseNotFoundError` if none."""
    from sproutrag.schemas.paths import is_s3
    from sproutrag.storage.store import DatabaseNotFoundError

    if not is_s3(uri) and not os.path.isdir(uri):  # connect() would create the folder
        raise DatabaseNotFoundError(f"no SproutRAG database at {uri!r} (no such folder): "
                                    "check the --db path")
    db, names = _connect(uri, storage_options)
    if not names & {"documents", "nodes"}:
        raise DatabaseNotFoundError(f"no SproutRAG database at {uri!r} (no 'documents' or "
                                    "'nodes' table): check the --db path")
    return db, names


class _ReadError(Exception):
    """Reading TABLE failed (a damaged or lost data file)."""

    def __init__(self, table: str, error: BaseException) -> None:
        super().__init__(table, error)
        self.table, self.error = table, error


def _open_store(uri: str, storage_options):
    """`Store.open_existing`, or what it raised (`_check_trees` decides what it means)."""
    from sproutrag.storage.store import Store

    try:
        return Store.open_existing(uri, storage_options=storage_options)
    except Exception as exc:  # noqa: BLE001 - raised again where the old order raised it
        return exc


def _has_tree_ids(store) -> bool:
    docs = store.table("documents")
    return "tree_id" in store.table("nodes").schema.names and (
        docs is None or "tree_id" in docs.schema.names)


def _batches(dataset, table: str, columns: list[str] | None = None
             ) -> Iterator[pa.RecordBatch]:
    """COLUMNS (None: every column) of DATASET in batches, in row order; read errors as
    `_ReadError`."""
    try:
        yield from dataset.to_batches(columns=columns, batch_size=BATCH_ROWS,
                                      io_buffer_size=IO_BUFFER_BYTES)
    except Exception as exc:  # noqa: BLE001 - every read error of a table is damage
        raise _ReadError(table, exc) from exc


def _read_all(store, db, names: set[str],
              progress: Progress | None) -> tuple[Health, TreeFindings]:
    """`nodes`, then `documents` (hashes, tree sizes, trees), then the other tables."""
    health = Health()
    nodes = store.table("nodes").to_lance()
    docs = store.table("documents")
    docs = docs.to_lance() if docs is not None else None
    try:
        n_nodes = nodes.count_rows()
        total = n_nodes + (docs.count_rows() if docs is not None else 0)
    except Exception as exc:  # noqa: BLE001 - every read error of a table is damage
        raise _ReadError("nodes", exc) from exc
    done = [0]

    def tick(rows: int) -> None:
        done[0] += rows
        if progress is not None:
            progress(done[0], total)

    tick(0)
    table = read_nodes(_batches(nodes, "nodes"), tick, n_nodes)
    health.n_nodes = table.n_rows
    keys = _document_keys(docs)  # the tree of every documents row, looked up at once
    found = TreeFindings.for_documents(table, keys.column("doc_id"), keys.column("tree_id"))
    if docs is not None:
        for batch in _batches(docs, "documents"):
            found.add(batch, health.documents)
            health.n_documents += batch.num_rows
            tick(batch.num_rows)
        found.confirm(nodes.take)
    for name in ("runs", "index_settings", "results"):
        if name in names:
            _guard(health, name, lambda n=name: _drain(db.open_table(n), None))
    return health, found


def _document_keys(docs) -> pa.Table:
    """doc_id and tree_id of every documents row (none without the table)."""
    if docs is None:
        return pa.table({"doc_id": pa.array([], pa.string()),
                         "tree_id": pa.array([], pa.string())})
    columns = ["doc_id", "tree_id"]
    schema = pa.schema([docs.schema.field(c) for c in columns])
    return pa.Table.from_batches(list(_batches(docs, "documents", columns)), schema=schema)


def _after_read_error(uri: str, storage_options, err: _ReadError) -> Health:
    """A table could not be read: `_check_tables`'s reads of every column say what."""
    health = _check_tables(uri, storage_options)
    if not {"documents", "nodes"} & set(health.unreadable):  # it could be read again
        health.unreadable[err.table] = short_error(err.error)
    return health


def _check_trees(uri: str, storage_options, report: Report) -> None:
    """Validate each intact document's stored tree and compare its leaf texts, one
    `Store.load_tree` per document (a scan of `nodes` each: for what `check_database`
    does not read itself, an older schema)."""
    from sproutrag.storage.store import StaleIndexError, Store

    try:
        store = Store.open_existing(uri, storage_options=storage_options)
    except StaleIndexError as exc:
        report.problems.append(f"schema: {exc}")
        return
    docs = store.table("documents")
    if docs is None:
        return
    for batch in _scan(docs, ["doc_id", "tree_id", "text"]):
        for doc_id, tree_id, text in zip(*batch.to_pydict().values()):
            if doc_id in report.health.documents:
                continue
            problem = _tree_problem(store, doc_id, tree_id, text)
            if problem:
                report.problems.append(f"document {doc_id!r}: {problem}")


def _tree_problem(store, doc_id: str, tree_id: str, text: str) -> str | None:
    try:
        stored = store.load_tree(doc_id, tree_id)
    except (ValueError, KeyError) as exc:  # InvalidTreeError, a lost tree
        return f"its tree {tree_id} is invalid: {exc}"
    return leaf_problem(stored, tree_id, text)


def _note_debris(report: Report, have_documents: bool,
                 stale: tuple[int, int] | None = None) -> None:
    """Trees no documents row names: invisible to readers, removed by the next run.
    STALE: (trees, rows) when known, else counted from the health's ``trees``."""
    h = report.health
    if not have_documents:
        if h.n_nodes:
            report.notes.append(
                f"note: no 'documents' table but {h.n_nodes} nodes rows (an interrupted "
                "first run leaves this; the next index run indexes the corpus)")
        return
    if "documents" in h.unreadable or "nodes" in h.unreadable:
        return
    if stale is None:
        sizes = [n for d, trees in h.trees.items() for t, n in trees.items()
                 if h.named.get(d) != t]
        stale = (len(sizes), sum(sizes))
    if stale[0]:
        report.notes.append(
            f"note: {stale[1]} nodes rows of {stale[0]} trees that no documents row "
            "names (left by an interrupted run or a damaged document's older tree; "
            "invisible to queries; the next index run removes them)")
