"""What one version of the `documents` table says about the current trees (`Current`).

Held as columns, not as dicts of every document: the doc_ids and tree_ids as Arrow
arrays in table order, the leaves per tree as an integer array, and the doc_ids' 64-bit
keys (`documents.doc_key`) sorted, with the rows in that order. A lookup hashes the few
doc_ids it is given, finds their keys by binary search and compares the doc_ids
themselves (two doc_ids may share a key), and remembers the rows it found. At 10^6
documents the view takes 0.37 s and 171 MB of the process, against 1.38 s and 325 MB
for dicts of the same columns (docs/results.md, "The query view as columns").

Both the view (`sproutrag.search.view`) and the first stage import it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.doc_keys import doc_keys
from sproutrag.search.name_index import EMPTY, NameIndex

#: Lookups of up to this many doc_ids compare them one by one (Python), more by Arrow
#: (whose kernels release the GIL: within a query, beside LanceDB's threads, getting it
#: back costs more than the scalars).
SMALL = 256
#: doc_ids whose rows a `Current` remembers (about 10 MB at most).
MEMO = 65_536
#: The `documents` columns a `Current` is read from.
COLUMNS = ("doc_id", "tree_id", "n_chunks", "index_fingerprint", "name_key", "doc_key")


def _strings(values: Any) -> pa.Array:
    """VALUES as one Arrow string array (a chunked column is joined)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array(list(values), pa.string())
    return values.cast(pa.string()) if values.type != pa.string() else values


def _fixed_width(values: pa.Array, width: int) -> np.ndarray | None:
    """VALUES (a string array) as numpy bytes of WIDTH, sharing its buffer, when every
    value is WIDTH bytes long (tree ids: 16 hex digits); else None."""
    n = len(values)
    if not n or values.null_count:
        return None
    offsets = np.frombuffer(values.buffers()[1], np.int32, n + 1, 4 * values.offset)
    if not np.all(np.diff(offsets) == width):
        return None
    return np.frombuffer(values.buffers()[2], f"S{width}", n, int(offsets[0]))


def _fixed(values: list[str], width: int) -> np.ndarray | None:
    """VALUES as numpy bytes of WIDTH when each is WIDTH ASCII characters, else None."""
    if not all(len(v) == width and v.isascii() for v in values):
        return None
    return np.array(values, f"S{width}")


class Current:
    """The current trees of one version of `documents`: doc_id -> tree_id and leaves."""

    def __init__(self, version: int, doc_ids: Any, tree_ids: Any, n_chunks: Any,
                 fingerprints: Collection[str] = frozenset(), names: NameIndex = EMPTY,
                 keys: Any = None) -> None:
        """VERSION of `documents`; DOC_IDS, their current TREE_IDS and their trees'
        leaves (N_CHUNKS), aligned (Arrow arrays or sequences); the index FINGERPRINTS
        of the stored documents; NAMES; KEYS: the doc_ids' `doc_key`s (computed when
        None or null)."""
        self.version = version
        self.doc_ids, self.tree_ids = _strings(doc_ids), _strings(tree_ids)
        self.n_chunks = np.asarray(n_chunks.to_numpy() if hasattr(n_chunks, "to_numpy")
                                   else n_chunks, np.int64).reshape(-1)
        self.fingerprints = frozenset(fingerprints)
        self.names = names
        self.rows = int(2 * self.n_chunks.sum() - len(self.n_chunks))  # 2n - 1 a tree
        if keys is None:
            keys = doc_keys(self.doc_ids.to_pylist())
        elif isinstance(keys, pa.Array | pa.ChunkedArray):
            keys = self._filled(keys)
        keys = np.asarray(keys, np.int64)
        index = np.int32 if len(keys) < 2**31 else np.int64
        self._order = np.argsort(keys).astype(index)  # equal keys: any order
        self._keys = keys[self._order]
        self._memo: dict[str, int] = {}  # doc_id -> row (-1: none), `positions`
        self._tree16 = _fixed_width(self.tree_ids, 16)  # numpy view, when all are 16 long

    def _filled(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """KEYS as int64, a null (a row written without its key) computed."""
        raw = pc.fill_null(keys, 0).to_numpy().astype(np.int64)
        if keys.null_count:
            nulls = np.flatnonzero(pc.is_null(keys).to_numpy(zero_copy_only=False))
            raw[nulls] = doc_keys(self.doc_ids.take(pa.array(nulls)).to_pylist())
        return raw

    @classmethod
    def empty(cls, version: int = -1) -> Current:
        """No documents (VERSION -1: no `documents` table yet)."""
        return cls(version, [], [], [])

    @classmethod
    def of(cls, version: int, trees: Mapping[str, str], leaves: Mapping[str, int],
           fingerprints: Collection[str] = frozenset()) -> Current:
        """From dicts doc_id -> tree_id (TREES) and doc_id -> leaves (LEAVES)."""
        return cls(version, list(trees), list(trees.values()),
                   [leaves[d] for d in trees], fingerprints)

    @classmethod
    def from_table(cls, version: int, table: pa.Table) -> Current:
        """From the `COLUMNS` of `documents` (a table read at VERSION)."""
        doc_ids = _strings(table.column("doc_id"))
        return cls(version, doc_ids, table.column("tree_id"), table.column("n_chunks"),
                   pc.unique(table.column("index_fingerprint")).to_pylist(),
                   NameIndex(doc_ids, table.column("name_key")), table.column("doc_key"))

    def __len__(self) -> int:
        """Current documents."""
        return len(self.n_chunks)

    @property
    def units(self) -> int:
        """Evidence units of all current trees (a tree of n leaves has 2n - 1 rows)."""
        return int(self.n_chunks.sum())

    def positions(self, doc_ids: Sequence[str]) -> np.ndarray:
        """The row of each of DOC_IDS, -1 for a doc_id that has no current tree. The
        answers are remembered (at most `MEMO` doc_ids): a query looks the same documents
        up several times, and queries after it often do too."""
        ids = list(doc_ids)
        memo = self._memo
        out = np.fromiter((memo.get(d, -2) for d in ids), np.int64, len(ids))
        miss = np.flatnonzero(out == -2)
        if len(miss):
            new = [ids[i] for i in miss]
            rows = self._find(new)
            out[miss] = rows
            if len(memo) + len(new) > MEMO:
                memo.clear()
            memo.update(zip(new, rows.tolist(), strict=True))
        return out

    def _find(self, ids: list[str]) -> np.ndarray:
        """`positions` by the sorted doc keys: one binary search a key, the keys in
        order (at 10^6 documents each step of a search is a cache miss)."""
        out = np.full(len(ids), -1, np.int64)
        if not ids or not len(self):
            return out
        keys = doc_keys(ids)
        lo = self._search(keys)
        at = np.minimum(lo, len(self._keys) - 1)
        found = np.flatnonzero(self._keys[at] == keys)
        if not len(found):
            return out
        first = self._order[lo[found]].astype(np.int64)
        same = self._equal(self.doc_ids, first, [ids[i] for i in found])
        out[found[same]] = first[same]
        for i in found[~same]:  # a key shared by other doc_ids: compare each of them
            j = int(lo[i]) + 1
            while j < len(self._keys) and self._keys[j] == keys[i]:
                row = int(self._order[j])
                if self.doc_ids[row].as_py() == ids[i]:
                    out[i] = row
                    break
                j += 1
        return out

    def _search(self, keys: np.ndarray) -> np.ndarray:
        """Where each of KEYS is or would be among the sorted keys (its first place)."""
        by_key = np.argsort(keys)
        lo = np.empty(len(keys), np.int64)
        lo[by_key] = np.searchsorted(self._keys, keys[by_key], "left")
        return lo

    @staticmethod
    def _equal(column: pa.Array, rows: np.ndarray, values: list[str]) -> np.ndarray:
        """Per row of ROWS, whether COLUMN holds the value of VALUES at that place."""
        if len(rows) <= SMALL:  # a few: scalars beat two Arrow kernels' overhead
            return np.array([column[r].as_py() == v
                             for r, v in zip(rows.tolist(), values, strict=True)], bool)
        same = pc.equal(column.take(pa.array(rows)), pa.array(values, pa.string()))
        return same.to_numpy(zero_copy_only=False)

    @staticmethod
    def _values(column: pa.Array, rows: np.ndarray) -> list[str]:
        """COLUMN's values at ROWS."""
        if len(rows) <= SMALL:
            return [column[r].as_py() for r in rows.tolist()]
        return column.take(pa.array(rows)).to_pylist()

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and bool(self.positions([doc_id])[0] >= 0)

    def tree_of(self, doc_id: str) -> str | None:
        """DOC_ID's current tree_id (None: none)."""
        return self.tree_ids_of([doc_id]).get(doc_id)

    def tree_ids_of(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """doc_id -> current tree_id of those of DOC_IDS that have one, in their order,
        once each."""
        ids = list(dict.fromkeys(doc_ids))
        rows = self.positions(ids)
        known = rows >= 0
        trees = self._values(self.tree_ids, rows[known])
        return dict(zip((d for d, k in zip(ids, known, strict=True) if k), trees, strict=True))

    def leaves_of(self, doc_ids: Iterable[str]) -> np.ndarray:
        """The evidence units of each of DOC_IDS' current tree (0: no current tree)."""
        rows = self.positions(list(doc_ids))
        return np.where(rows >= 0, self.n_chunks[np.maximum(rows, 0)], 0) if len(self) \
            else np.zeros(len(rows), np.int64)

    def is_current(self, doc_ids: Sequence[str], tree_ids: Sequence[str]) -> np.ndarray:
        """Per (doc_id, tree_id) pair of DOC_IDS and TREE_IDS (rows of `nodes`), whether
        that tree is the document's current one (tree ids of 16 characters, those of
        `rows.new_tree_id`, are compared as numpy bytes)."""
        trees = list(tree_ids)
        rows = self.positions(doc_ids)
        known = rows >= 0
        want = _fixed(trees, 16) if self._tree16 is not None else None
        if want is not None:
            return known & (self._tree16[np.maximum(rows, 0)] == want)
        out = np.zeros(len(rows), bool)
        at = np.flatnonzero(known)
        if len(at):
            out[at] = self._equal(self.tree_ids, rows[at], [trees[i] for i in at])
        return out

    def items(self) -> list[tuple[str, str]]:
        """Every (doc_id, current tree_id), in table order (a list of all: for
        evaluation and tests, not for a query)."""
        return list(zip(self.doc_ids.to_pylist(), self.tree_ids.to_pylist(), strict=True))


__all__ = ["COLUMNS", "Current"]
