"""Is the database whole? `sproutrag check`, and what names a damaged table.

LanceDB keeps each table as data files under DB/<table>.lance/data/; a file lost,
truncated or damaged (a failed restore, a disk error) makes every read of the rows it
holds fail, and a document whose `tree_id` names no `nodes` rows (a `nodes` table rolled
back to an older version) is skipped by every query.

* `check_database` (`sproutrag check`): every column of every table read once, every
  stored tree validated (2n - 1 nodes for the document's n chunks, `validate_tree`'s
  checks for all trees at once: `sproutrag.storage.tree_check`), its leaf texts compared
  with the document's text, its vectors checked against each other
  (`sproutrag.storage.vector_check`), every stored text hashed and every name checked
  against its text and title (`sproutrag.names.name_problem`); never more than a batch
  of vectors in memory (bench/check.py: a million documents, 5 million `nodes` rows, in
  20-25 s, 1.9 GB). `damaged_documents`: the documents it names, for `index --verify`.
  A table that cannot be read is reported from reads of every column
  (`sproutrag.storage.check_fallback`). What it found is a `Report`
  (`sproutrag.storage.check_report`).
* `explain_damage`: a Lance read error becomes one line naming the damaged table (the
  start-of-run check's `sproutrag.storage.run_check.check_files`).
* `move_aside`: what a `--full` index run does with an unreadable table (and with
  `documents` when `nodes` is unreadable: `with_dependents`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from sproutrag.errors import (  # also importable from here
    DamagedIndexError,
    DamagedTableError,
    short_error,  # noqa: F401
)
from sproutrag.schemas import tables
from sproutrag.storage.check_fallback import (
    check_tables,
    check_trees,
    connect,
    read_other_tables,
)
from sproutrag.storage.check_report import Health, Report
from sproutrag.storage.run_check import check_files
from sproutrag.storage.tree_check import TreeFindings, read_nodes

#: Called with (rows of `nodes` and `documents` read so far, rows to read in all).
Progress = Callable[[int, int], None]
#: Rows per batch of `check_database`'s reads (8k `nodes` rows of 384-d vectors: 12 MB),
#: and the bytes Lance may read ahead of them: together they bound its memory.
BATCH_ROWS = 8192
IO_BUFFER_BYTES = 32 << 20


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


def with_dependents(uri: str, unreadable: dict[str, str]) -> dict[str, str]:
    """UNREADABLE (table -> why), plus the other of `documents` and `nodes` when one of
    them is among them: `documents` rows name the trees `nodes` held, so a rebuild that
    kept them would keep, for each document failing in the rebuild, a row naming no
    tree; and a kept `nodes` would hold, beside the rebuilt trees, every old tree, named
    by no document (a "healthy" database of twice its rows). Local only, as
    `move_aside`."""
    out = dict(unreadable)
    for damaged, other, why in (
            ("nodes", "documents", "its rows name the trees of the damaged nodes table"),
            ("documents", "nodes", "its trees are named by the damaged documents table")):
        if damaged in unreadable and other not in out and os.path.isdir(
                os.path.join(uri, f"{other}.lance")):
            out[other] = why
    return out


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
            indexes = {} if unreadable else _index_problems(
                connect(uri, storage_options)[0], {"nodes", "documents"})[0]
        except Exception:  # noqa: BLE001 - the original error says more
            raise exc from None
        if unreadable:
            raise DamagedTableError(uri, unreadable) from None
        if indexes:
            raise DamagedIndexError(uri, indexes) from None
        raise


def check_database(uri: str, *, storage_options: dict[str, str] | None = None,
                   progress: Progress | None = None) -> Report:
    """Read every column of every table once and validate every stored tree: a `Report`
    of one line per problem (a table that cannot be read; a document whose text, tree
    size, tree or leaf texts are wrong), notes (debris) and a summary line.

    PROGRESS, when given, is called with (rows of `nodes` and `documents` read, rows in
    all) after each batch. Raises `DatabaseNotFoundError` when URI holds no SproutRAG
    database. Cost: one read of each table in batches of `BATCH_ROWS` rows (`documents`'
    doc_id and tree_id twice); memory at most about 300 bytes per `nodes` row. A
    table that cannot be read, or an older schema, is checked by the reads of
    `sproutrag.storage.check_fallback` instead (the trees of a damaged database are not
    validated).
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
        health = check_tables(uri, storage_options)
    if "documents" not in names and "runs" in names - set(health.unreadable) \
            and _stored_before(db):
        health.unreadable["documents"] = ("it is missing, though finished index runs "
                                          "stored documents (the `runs` table)")
    health.indexes, health.wrong_indexes = _index_problems(db, names - set(health.unreadable))
    health.old_schemas = _old_schemas(db, names - set(health.unreadable))
    report = Report(uri, health, problems=_table_problems(health))
    report.problems += [f"document {d!r}: {why}" for d, why in sorted(health.documents.items())]
    report.damaged.update(health.documents)
    if not {"documents", "nodes"} & set(health.unreadable) and "nodes" in names:
        if found is None:  # an older schema (one line), or what opening the store raised
            check_trees(uri, storage_options, report)
        else:
            trees = [(d, why) for d, why in found.problems if d not in health.documents]
            report.problems += [f"document {d!r}: {why}" for d, why in trees]
            report.damaged.update(reversed(trees))  # the first problem of a document
            report.unconfirmed = found.unconfirmed
    _note_debris(report, "documents" in names, None if found is None else found.stale())
    return report


def damaged_documents(uri: str, *, storage_options: dict[str, str] | None = None
                      ) -> dict[str, str]:
    """doc_id -> why, of every document `check_database` names (its text, tree size,
    tree, leaf texts, vectors or name is wrong): what `sproutrag index --verify`
    re-indexes. Reads what `check_database` reads; none when URI holds no database."""
    from sproutrag.storage.store import DatabaseNotFoundError

    try:
        return dict(check_database(uri, storage_options=storage_options).damaged)
    except DatabaseNotFoundError:
        return {}


def _stored_before(db: Any) -> bool:
    """Did a finished index run store documents (the `runs` table)?"""
    rows = db.open_table("runs").search().where(
        "finished_at IS NOT NULL AND n_new + n_changed > 0").select(["run_id"]).limit(1)
    return bool(rows.to_list())


def _index_problems(db: Any, names: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """("table.index" -> why) of the indexes of the tables NAMES that cannot be read (a
    probe query through each: `indexes.probe`), and of those of a kind whose answers are
    wrong (`indexes.wrong_indexes`); each table opened once."""
    from sproutrag.storage.indexes import damaged_indexes, wrong_indexes

    have = set(db.list_tables().tables)
    damaged: dict[str, str] = {}
    wrong: dict[str, str] = {}
    for name in sorted(names & have):
        tbl = db.open_table(name)
        damaged |= {f"{name}.{i}": why for i, why in damaged_indexes(tbl).items()}
        wrong |= {f"{name}.{i}": why for i, why in wrong_indexes(tbl).items()}
    return damaged, wrong


def _table_problems(health: Health) -> list[str]:
    """A line for each table of an older schema version, unreadable table and damaged or
    wrong index HEALTH names."""
    lines = [f"table {n!r} has schema version {v}, this SproutRAG reads "
             f"{tables.SCHEMA_VERSION}" for n, v in health.old_schemas.items()]
    lines += [f"table {n!r} cannot be read: {why}" for n, why in health.unreadable.items()]
    for verb, bad in (("cannot be read", health.indexes),
                      ("gives wrong answers", health.wrong_indexes)):
        lines += [f"index {i.split('.', 1)[1]!r} of table {i.split('.', 1)[0]!r} "
                  f"{verb}: {why}" for i, why in bad.items()]
    return lines


def _old_schemas(db: Any, names: set[str]) -> dict[str, str]:
    """Table -> its older schema version, for the tables of NAMES an index run migrates
    (one it killed while migrating leaves tables of both versions)."""
    from sproutrag.storage.migrate import MIGRATION_ORDER, needs_migration, schema_version

    old = {}
    for name in MIGRATION_ORDER:
        if name in names:  # every table (a run of before 0.19.0 migrated `nodes` first)
            tbl = db.open_table(name)
            if needs_migration(tbl):
                version = schema_version(tbl)
                old[name] = version if version != "?" else "2"  # results had no metadata
    return old


def _existing(uri: str, storage_options) -> tuple[Any, set[str]]:
    """(connection, table names) of the database at URI; `DatabaseNotFoundError` if none."""
    from sproutrag.schemas.paths import is_s3
    from sproutrag.storage.store import DatabaseNotFoundError

    if not is_s3(uri) and not os.path.isdir(uri):  # connect() would create the folder
        what = "a file, not a folder" if os.path.exists(uri) else "no such folder"
        raise DatabaseNotFoundError(f"no SproutRAG database at {uri!r} ({what}): "
                                    "check the --db path")
    db, names = connect(uri, storage_options)
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
    """`Store.open_existing`, or what it raised (`check_fallback.check_trees` decides
    what it means)."""
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
    read_other_tables(db, names, health)
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
    """A table could not be read: `check_fallback.check_tables`'s reads of every column
    say what."""
    health = check_tables(uri, storage_options)
    if not {"documents", "nodes"} & set(health.unreadable):  # it could be read again
        health.unreadable[err.table] = short_error(err.error)
    return health


def _note_debris(report: Report, have_documents: bool,
                 stale: tuple[int, int] | None = None) -> None:
    """Trees no documents row names: invisible to readers, removed by the next run.
    STALE: (trees, rows) when known, else counted from the health's ``trees``."""
    h = report.health
    if not have_documents:
        if h.n_nodes and "documents" not in h.unreadable:
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
