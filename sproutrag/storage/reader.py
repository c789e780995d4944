"""A database opened for reading: what `Retriever`, `sproutrag query` and the
`query-corpus` flow share for one database.

    reader = Reader.open(".sproutrag/db")
    reader.refresh()  # see what index runs wrote since (one version check per table)
    version, infos = reader.index_infos()

The database is opened once (`Store.open_existing`: its encoder, dim and schema version
checked), its tables through `Store.table`'s cached handles; `index_settings` is read
once per version of that table, however many readers ask (the reader's settings, the
`Retriever`'s search defaults). Nothing changes under a reader until `refresh()`:
between two refreshes it sees one version of each table.
"""

from __future__ import annotations

from typing import Any

from sproutrag.storage import index_info
from sproutrag.storage.index_info import IndexInfo, latest
from sproutrag.storage.store import Store

#: The tables a reader reads, in the order `refresh` checks them: `documents` first, so
#: that `nodes` is at least as new as the trees `documents` names.
READ_TABLES = ("documents", "nodes", index_info.TABLE)
#: LanceDB's cache of index pages (vector partitions, full-text postings) per reader: a
#: 10M-row database's searches grew it by about 900 MB unbounded; 256 MB keeps the
#: partitions of repeated queries warm.
INDEX_CACHE_BYTES = 256 << 20


class Reader:
    """One database, its table handles and its `index_settings` rows, per version."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._infos: tuple[int, dict[str, IndexInfo]] | None = None

    @classmethod
    def open(cls, db: str, *, storage_options: dict[str, str] | None = None,
             index_cache_bytes: int = INDEX_CACHE_BYTES) -> Reader:
        """Open DB (`DatabaseNotFoundError`, `StaleIndexError` as `Store.open_existing`),
        LanceDB's cache of index pages bounded to INDEX_CACHE_BYTES."""
        import lancedb

        session = lancedb.Session(index_cache_size_bytes=index_cache_bytes)
        return cls(Store.open_existing(db, storage_options=storage_options, session=session))

    @property
    def uri(self) -> str:
        return self.store.uri

    def refresh(self) -> None:
        """Move to the latest version of every table read (written by any process)."""
        self.store.refresh(READ_TABLES)

    def version(self, name: str) -> int:
        """The version of table NAME the reader sees (-1: absent)."""
        return self.store.version(name)

    def index_infos(self) -> tuple[int, dict[str, IndexInfo]]:
        """(version of `index_settings`, its rows by index fingerprint): read once per
        version of the table (empty without it)."""
        version = self.version(index_info.TABLE)
        if self._infos is None or self._infos[0] != version:
            rows = index_info.read_index_infos(self.store) if version >= 0 else {}
            self._infos = (version, rows)
        return self._infos

    def latest_info(self) -> IndexInfo | None:
        """The newest `index_settings` row (None: a database written by `Store` alone)."""
        return latest(self.index_infos()[1])

    def encoding_fields(self) -> dict[str, Any]:
        """The fingerprinted settings of the newest index run ({} without one)."""
        info = self.latest_info()
        return info.encoding() if info is not None else {}
