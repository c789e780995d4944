"""Cached handles of the SproutRAG tables of one LanceDB database (a folder or an s3://
URI), the base of `sproutrag.storage.store.Store`.

A table is opened once (its schema checked against the store's encoder and dim:
`sproutrag.storage.schema_check`) and its handle stays at the version it was opened at
(or last written through it) until `refresh`: a reader sees one version of each table per
refresh, and a call costs no round trip to the storage. Within `versions_pinned` a
table's version is asked of Lance once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from sproutrag.schemas import tables
from sproutrag.storage.schema_check import check_table_schema


class TableHandles:
    """The SproutRAG tables of one database, each opened once (see `table`)."""

    def __init__(
        self, uri: str, *, encoder_id: str, dim: int,
        storage_options: dict[str, str] | None = None, connection: Any = None,
    ) -> None:
        """CONNECTION: an open LanceDB connection to URI (None: connect here)."""
        import lancedb

        self.uri, self.encoder_id, self.dim = str(uri), encoder_id, dim
        self._db = connection if connection is not None else lancedb.connect(
            self.uri, storage_options=storage_options)
        self._tables: dict[str, Any] = {}  # name -> open handle (see `table`)
        self._pinned = threading.local()  # `versions_pinned`: this thread's version memo
        self._schemas = {
            "documents": tables.DOCUMENTS,
            "nodes": tables.nodes_schema(dim),
            "runs": tables.RUNS,
            "results": tables.RESULTS,
            "index_settings": tables.INDEX_SETTINGS,
        }

    def table(self, name: str, *, create: bool = False):
        """The table NAME (None when absent, unless CREATE), opened once per `Store`.

        The handle is cached: it stays at the version it was opened (or last written
        through this `Store`) at until `refresh()`, so a reader sees one version per
        refresh and a call costs no round trip to the storage. A table that is absent is
        looked up again on every call.
        """
        tbl = self._tables.get(name)
        if tbl is not None:
            return tbl
        try:
            tbl = self._db.open_table(name)
        except ValueError as exc:
            if "was not found" not in str(exc):  # not "absent": a damaged table
                raise
            if not create:
                return None
            schema = tables.with_metadata(
                self._schemas[name], encoder_id=self.encoder_id, dim=self.dim
            )
            tbl = self._db.create_table(name, schema=schema)
        else:
            self._check(name, tbl.schema)
        self._tables[name] = tbl
        return tbl

    @contextlib.contextmanager
    def versions_pinned(self):
        """Within the block `version` asks LanceDB once per table (a handle's version is a
        call into Lance, about 0.3 ms): for a search, whose handles do not move until a
        `refresh` (which forgets what was memorised). The memo is the calling thread's."""
        if getattr(self._pinned, "memo", None) is not None:
            yield
            return
        self._pinned.memo = {}
        try:
            yield
        finally:
            self._pinned.memo = None

    def version(self, name: str) -> int:
        """The version of table NAME's handle (-1: absent); memorised within
        `versions_pinned`."""
        memo = getattr(self._pinned, "memo", None)
        if memo is not None and name in memo:
            return memo[name]
        tbl = self.table(name)
        version = tbl.version if tbl is not None else -1
        if memo is not None:
            memo[name] = version
        return version

    def refresh(self, names: Iterable[str] | None = None) -> None:
        """Move the cached handles of NAMES (default: all) to their tables' latest versions,
        whatever process wrote them: one version check per table, in the order given (a
        reader refreshes `documents` before `nodes`, so `nodes` is never older than the
        trees `documents` names). A table dropped or moved aside since is forgotten (the
        next `table()` call looks it up); one whose schema changed is checked again."""
        memo = getattr(self._pinned, "memo", None)
        if memo is not None:
            memo.clear()
        for name in list(self._tables) if names is None else names:
            tbl = self._tables.get(name)
            if tbl is None:
                continue
            before = tbl.version
            try:
                tbl.checkout_latest()
                after = tbl.version
            except (OSError, ValueError, RuntimeError):  # the table is gone
                del self._tables[name]
                continue
            if after != before:
                try:
                    self._check(name, tbl.schema)
                except ValueError:
                    del self._tables[name]
                    raise

    def _check(self, name: str, schema: pa.Schema) -> None:
        check_table_schema(self.uri, name, schema, encoder_id=self.encoder_id, dim=self.dim)
