"""What a search sees of the tables: the current trees (`Current`, in
sproutrag.search.current; read once per version of `documents`), each thread's view
during a search (`TablesView.one_view`), and the documents a filter on `documents`
columns matches (`TablesView.matching`).

The `Retriever` and its first stage share one `TablesView`: the table handles move to
the latest versions at most once per search, a thread's search keeps one `documents`
version from start to end, and threads searching at once each have their own.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from sproutrag.errors import QueryError, short_error
from sproutrag.schemas import tables
from sproutrag.search.current import COLUMNS, Current
from sproutrag.search.where import enclosed

T = TypeVar("T")

#: The `documents` columns a document may leave null (the schema's nullable ones), named
#: when a filter that finds nothing names one no document fills.
OPTIONAL_COLUMNS = tuple(f.name for f in tables.DOCUMENTS if f.nullable)

#: A filter matching at most this many documents searches them all (as doc_ids do); past
#: it the first stage ranks the documents among those it matches.
FILTER_DIRECT = 64

log = logging.getLogger(__name__)


def filter_hint(where: str, exc: BaseException) -> str:
    """What to write instead, for the filters LanceDB refuses that a user writes most: a
    JSON function over `metadata_json`, a time as a plain string, a typed JSON read of a
    field some document holds as another type. "" when none applies."""
    said, lower = str(exc), where.lower()
    if "json_" in lower and "coerc" in said:
        return ": JSON functions read the `metadata` column (`metadata_json` is its text)"
    if "Timestamp" in said and "literal" in said:
        return ": write a time as `TIMESTAMP '2025-01-01 00:00:00'` (UTC)"
    if "json_get_" in lower and ("convert" in said or "reinterpret" in said):
        return (": a document holds that field as another type; `try_cast(json_get_string("
                "metadata, 'year') AS BIGINT) >= 2024` skips such values")
    return ""


def files_gone(exc: BaseException) -> bool:
    """Is EXC a read of a data file that a version cleanup removed (Lance "Not found")?"""
    return "not found" in str(exc).lower() and "lance" in str(exc).lower()


#: Above this many `documents` rows the view scans them with Lance itself (2.6x faster
#: than a LanceDB query at 10^6 rows); below, opening a Lance dataset costs more than it
#: saves (40 ms and 40 MB at 10^4; bench/view.py, docs/results.md).
LANCE_SCAN_ROWS = 250_000


def _read_columns(tbl: Any) -> Any:
    """`current.COLUMNS` of every row of the `documents` table TBL (its pinned version)."""
    if tbl.count_rows() > LANCE_SCAN_ROWS:
        return tbl.to_lance().to_table(columns=list(COLUMNS))
    return tbl.search().select(list(COLUMNS)).limit(None).to_arrow()


class _Pin(threading.local):
    """One thread's view of the tables during a search."""

    pinning: bool = False
    pin: Current | None = None


class TablesView:
    """The current trees of a `Reader`'s database, per thread and search."""

    def __init__(self, reader: Any) -> None:
        self.reader, self.store = reader, reader.store
        self._doc_trees: Current | None = None
        self._pin = _Pin()
        self._lock = threading.RLock()  # refreshing the tables, reading `documents`

    @contextmanager
    def one_view(self) -> Iterator[None]:
        """Within the block every read sees the tables as the first `current()` found
        them: one refresh and one `documents` read per search (nested blocks share it).
        The view is the calling thread's own."""
        pin = self._pin
        if pin.pinning:
            yield
            return
        pin.pinning, pin.pin = True, None
        try:
            with self.store.versions_pinned():
                yield
        finally:
            pin.pinning, pin.pin = False, None

    def current(self) -> Current:
        """The current trees, read once per version of the `documents` table. Outside a
        search each call first refreshes the reader (a version check per table, no read
        when nothing changed), so a long-lived view follows index runs; a search
        refreshes once (`one_view`). Safe to call from several threads."""
        pin = self._pin
        if pin.pin is not None:
            return pin.pin
        with self._lock:
            self.reader.refresh()
            tbl = self.store.table("documents")
            if tbl is None:  # the first run was killed before its first documents commit
                return Current.empty()
            version = self.store.version("documents")
            if self._doc_trees is None or self._doc_trees.version != version:
                found = _read_columns(tbl)
                self._doc_trees = Current.from_table(version, found)
            current = self._doc_trees
        if pin.pinning:
            pin.pin = current
        return current

    def forget(self) -> None:
        """Read `documents` again at the next `current()` (an index run changed it)."""
        with self._lock:
            self._doc_trees = None
        self._pin.pin = None

    def refresh(self) -> None:
        """Move the table handles to the tables' latest versions."""
        with self._lock:
            self.reader.refresh()

    def retried(self, read: Callable[[], T], *, replaced: bool = False) -> T:
        """READ(), run once more on the latest versions when it found a data file gone
        (`files_gone`: an index run removes the table versions it wrote meanwhile) and,
        with REPLACED, when a document it read was replaced under this view (KeyError)."""
        for again in (True, False):
            try:
                return read()
            except KeyError:
                if not (again and replaced):
                    raise
                self.forget()
            except (RuntimeError, OSError) as exc:
                if not (again and files_gone(exc)):
                    raise
                self.refresh()
                self.forget()
        raise AssertionError("unreachable")

    def matching(self, where: str) -> list[str]:
        """The current documents whose `documents` columns match WHERE (LanceDB's SQL
        filter, e.g. `title = 'Q3 report' AND modified_at > TIMESTAMP '2025-01-01
        00:00:00'`), in table order; `QueryError` naming the filter when it is not valid
        SQL (read whole: `sproutrag.search.where.enclosed`) or names an unknown column,
        with the form that works when `filter_hint` knows one."""
        sql = enclosed(where)
        current = self.current()
        tbl = self.store.table("documents")
        if tbl is None:
            return []
        try:
            found = (tbl.search().where(sql).select(["doc_id", "tree_id"]).limit(None)
                     .to_arrow().to_pydict())
        except (ValueError, RuntimeError) as exc:
            raise QueryError(f"where {where!r}: {short_error(exc)}{filter_hint(where, exc)} "
                             "(a SQL filter over the documents table's columns)") from None
        now = current.is_current(found["doc_id"], found["tree_id"])
        return [d for d, ok in zip(found["doc_id"], now.tolist(), strict=True) if ok]

    def _empty_columns(self, where: str) -> str:
        """A hint naming the optional `documents` columns WHERE names that no document
        fills (a JSONL corpus whose lines carry no "title": every title is null), else
        ""."""
        tbl = self.store.table("documents")
        named = [c for c in OPTIONAL_COLUMNS if re.search(rf"\b{c}\b", where)]
        if tbl is None or not named:
            return ""
        try:
            empty = [c for c in named if not tbl.count_rows(f"{c} IS NOT NULL")]
        except (ValueError, RuntimeError):  # an older table without the column
            return ""
        if not empty:
            return ""
        return (f": no document has a value in {', '.join(repr(c) for c in empty)} (a "
                "JSONL line's \"title\" and other fields fill title and metadata; a "
                "file's title is null)")

    def known(self, doc_ids: Sequence[str]) -> list[str]:
        """DOC_IDS that the tables hold now (once each, in their order)."""
        return list(self.current().tree_ids_of(list(doc_ids)))

    def _other_forms(self, doc_ids: Sequence[str]) -> str:
        """A hint naming the stored doc_ids that are DOC_IDS written in another Unicode
        form ("été" typed composed, a macOS file name stored decomposed), else ""."""
        forms = {f: d for d in doc_ids for f in (unicodedata.normalize(n, d)
                                                  for n in ("NFC", "NFD")) if f != d}
        stored = self.known(list(forms))
        if not stored:
            return ""
        pairs = ", ".join(f"{ascii(d)} (given as {ascii(forms[d])})" for d in stored)
        return (f"; stored as {pairs}: the same characters in another Unicode form, shown "
                "escaped (give the doc_id as the database writes it)")

    def scope(self, doc_ids: Sequence[str] | None, where: str | None
              ) -> tuple[list[str] | None, set[str] | None]:
        """(doc_ids to search, documents the first stage may choose) of a search given
        DOC_IDS and a filter WHERE on `documents` columns: the known doc_ids (QueryError
        when none is); with WHERE only the matching ones, searched all when at most
        `FILTER_DIRECT` match, else ranked by the first stage among them (a prefilter: k
        is filled from the matching documents). QueryError when no document matches."""
        known = None
        if doc_ids is not None:
            known = self.known(doc_ids)
            if not known:
                raise QueryError(f"none of the doc_ids {list(doc_ids)!r} is in the database"
                                 + self._other_forms(doc_ids))
            found = frozenset(known)
            if missing := [d for d in dict.fromkeys(doc_ids) if d not in found]:
                log.warning("doc_ids not in the database, searched without them: %r%s",
                            missing, self._other_forms(missing))
        if where is None:
            return known, None
        matching = self.matching(where)
        if known is not None:
            wanted = set(matching)
            matching = [d for d in known if d in wanted]
        if not matching:
            raise QueryError(f"no document matches the filter {where!r}"
                             + (" among the doc_ids" if known is not None else "")
                             + self._empty_columns(where))
        if len(matching) <= FILTER_DIRECT:
            return matching, None
        return None, set(matching)
