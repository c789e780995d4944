"""Every tree of the `nodes` table checked at once, as flat columns (for `sproutrag check`).

`read_nodes` takes `nodes` in record batches (every column, so that a damaged data file
fails the read) and keeps per row only the small structural columns as numpy arrays, one
bool "every vector value is finite" and two projections and the length of the vector
(each batch's vectors are checked, then dropped: `vector_check`) and, for rows holding a
text, a hash of it. `TreeTable` sorts the rows by (tree, idx), stably,
as `Store.load_tree` orders one tree's rows, so that a row's position in its tree is what
`storage.rows.stored_tree` makes of it, and applies every check of `Tree.from_columns`
and `validate_tree` (shapes, children, parents, n_leaves, height, leaf ranges, leaf_start
a permutation, merge_sim NaN exactly on leaves, finite vectors) to all trees together with
global index arithmetic: node k of tree t is sorted row ``start[t] + k``.

The verdicts are meant to equal those of `stored_tree` on each tree's rows; they only say
*which* trees fail. The caller rebuilds a flagged tree from its rows (`TreeTable.rows`)
with the library's own code to get the message, so a flagged tree that code accepts is a
bug of this module (`sproutrag check` counts them, the tests require none).

Leaf texts (`TreeTable.leaf_mismatches`) are compared as hashes: the stored leaf's hash,
kept from the read of `nodes`, against the hash of ``text[start:end]`` of the document,
with Python's own slicing; the hash is Python's keyed 64-bit SipHash of `str`, so a
changed leaf passes with probability 2**-64.

Cost: one read of `nodes`, one batch of vectors at a time; about 100 bytes of arrays per
row kept (the distinct doc_id / tree_id strings once each), twice that for a moment while
the rows are sorted and checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.storage.document_problems import (
    TEXT_CHANGED,
    hashes_match,
    leaf_problem,
    name_problems,
    size_problem,
)
from sproutrag.storage.rows import stored_tree
from sproutrag.storage.vector_check import KEPT as VECTOR_KEPT
from sproutrag.storage.vector_check import first_disagreement, projections, vector_problem
from sproutrag.trees.many import invalid_trees

#: The int32 columns of a tree (as `Tree.from_columns` casts them) and `idx`.
INT_COLUMNS = ("idx", "parent", "left", "right", "height", "n_leaves", "leaf_start", "leaf_end")
#: The columns `read_nodes` uses (it is handed every column and reads them all).
NEEDED = ("doc_id", "tree_id", *INT_COLUMNS, "merge_sim", "start", "end", "text", "vector")
#: What `read_nodes` keeps per row, and its dtype.
KEPT = {**dict.fromkeys(INT_COLUMNS, np.int32), "merge_sim": np.float32, "start": np.int64,
        "end": np.int64, "start_null": bool, "end_null": bool, "text_null": bool,
        "text_hash": np.int64, "vector_ok": bool, **VECTOR_KEPT}
#: Trees whose rows one `TreeTable.rows` read takes at a time.
TAKE_TREES = 1024


def _as_int(values: np.ndarray, dtype) -> np.ndarray:
    """VALUES cast as `stored_tree` casts them (a float with NaN casts as numpy does)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(values).astype(dtype)


def _finite_vectors(column: pa.Array) -> np.ndarray:
    """One bool per row: the row's vector is present and every value is finite."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n, dim = len(column), column.type.list_size
    if dim < 1:
        return np.zeros(n, dtype=bool)
    values = column.values.slice(column.offset * dim, n * dim)
    if values.null_count:
        values = pc.fill_null(values, float("nan"))
    ok = np.isfinite(values.to_numpy(zero_copy_only=False).reshape(n, dim)).all(axis=1)
    if column.null_count:
        ok &= column.is_valid().to_numpy(zero_copy_only=False)
    return ok


def _text_hashes(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(null, hash): per row whether the text is null, and hash(text) where it is not."""
    null = column.is_null().to_numpy(zero_copy_only=False)
    hashes = np.zeros(len(column), dtype=np.int64)
    present = np.flatnonzero(~null)
    texts = pc.drop_null(column).to_pylist()
    hashes[present] = np.fromiter(map(hash, texts), dtype=np.int64, count=len(present))
    return null, hashes


class _Growing:
    """A numpy array appended to in place, its capacity doubled when full: one large
    allocation per column (many small ones would stay in the heap once freed)."""

    def __init__(self, dtype, capacity: int) -> None:
        self.data, self.size = np.empty(capacity, dtype=dtype), 0

    def append(self, values: np.ndarray) -> None:
        end = self.size + len(values)
        if end > len(self.data):
            grown = np.empty(max(end, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : end] = values
        self.size = end

    def array(self) -> np.ndarray:
        return self.data[: self.size]


class _Collector:
    """The per-row arrays of `nodes`, batch by batch (see `read_nodes`). Everything kept
    is a copy: a view would keep the whole decoded batch (its vectors) alive."""

    def __init__(self, capacity: int) -> None:
        kept = {**KEPT, "doc_id": np.int64, "tree_id": np.int64}  # strings: see `strings`
        self.columns = {name: _Growing(dtype, capacity) for name, dtype in kept.items()}
        self.distinct: dict[str, list[pa.Array]] = {"doc_id": [], "tree_id": []}
        self.n_distinct = {"doc_id": 0, "tree_id": 0}

    def add(self, batch: pa.RecordBatch) -> None:
        got = {name: batch.column(name) for name in NEEDED}
        cols = {name: got[name].to_numpy(zero_copy_only=False) for name in INT_COLUMNS}
        cols["merge_sim"] = got["merge_sim"].to_numpy(zero_copy_only=False)
        for name in ("start", "end"):
            cols[f"{name}_null"] = got[name].is_null().to_numpy(zero_copy_only=False)
            cols[name] = got[name].fill_null(0).to_numpy(zero_copy_only=False)
        cols["text_null"], cols["text_hash"] = _text_hashes(got["text"])
        cols["vector_ok"] = _finite_vectors(got["vector"])
        cols.update(projections(got["vector"]))
        for name, value in cols.items():
            self.columns[name].append(_as_int(value, KEPT[name]))
        for name in ("doc_id", "tree_id"):  # each batch's distinct values, and positions
            encoded = pc.dictionary_encode(got[name])  # among all batches' distinct values
            self.distinct[name].append(encoded.dictionary)
            self.columns[name].append(encoded.indices.to_numpy(zero_copy_only=False)
                                      + self.n_distinct[name])
            self.n_distinct[name] += len(encoded.dictionary)

    def take(self, name: str) -> np.ndarray:
        """One column of every row (released here)."""
        return self.columns.pop(name).array()

    def strings(self, name: str) -> tuple[pa.Array, np.ndarray]:
        """(distinct values, the code of each row) of the string column NAME: one lookup
        of every batch's distinct values among all of them."""
        values = pa.chunked_array(self.distinct.pop(name), type=pa.string())
        distinct = pc.unique(values)
        return distinct, _codes(values, distinct)[self.take(name)]


def read_nodes(batches: Iterable[pa.RecordBatch],
               on_rows: Callable[[int], None] | None = None, n_rows: int = 0) -> TreeTable:
    """Read `nodes` batches (every column of the `nodes` schema) into a `TreeTable`.

    ``on_rows`` is called with each batch's number of rows; ``n_rows``: the rows to
    expect (the arrays' first size; more may come). Rows are numbered in the order the
    batches give them (a dataset's row offsets, for `TreeTable.rows`).
    """
    collector = _Collector(n_rows)
    for batch in batches:
        collector.add(batch)
        if on_rows is not None:
            on_rows(batch.num_rows)
    return TreeTable.build(collector)


@dataclass
class TreeTable:
    """The rows of `nodes` grouped by tree (one tree: a (doc_id, tree_id) pair).

    Tree t (numbered in the order of its sorted key) has ``counts[t]`` rows, sorted rows
    ``starts[t]`` onwards, in idx order; ``bad[t]`` says that `stored_tree` rejects it,
    ``vectors_off[t]`` names the first node of a valid tree whose vector disagrees with
    the others (-1: none; `vector_check`).
    ``doc_ids`` / ``tree_ids``: the distinct values; ``keys``: per tree
    ``doc code * len(tree_ids) + tree code``. Per sorted row: ``offsets`` (its row number
    in the read), the leaf columns `stored_tree` reads (``start``, ``end`` cast as it casts
    them; ``text_null``, ``text_hash``).
    """

    doc_ids: pa.Array
    tree_ids: pa.Array
    keys: np.ndarray
    counts: np.ndarray
    starts: np.ndarray
    bad: np.ndarray
    vectors_off: np.ndarray
    offsets: np.ndarray
    start: np.ndarray
    end: np.ndarray
    text_null: np.ndarray
    text_hash: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.offsets)

    @classmethod
    def build(cls, collector: _Collector) -> TreeTable:
        """Encode the trees, sort the rows by (tree, idx) and validate every tree."""
        (doc_ids, docs), (tree_ids, trees) = (collector.strings("doc_id"),
                                              collector.strings("tree_id"))
        key = docs * max(len(tree_ids), 1) + trees
        del docs, trees
        order = np.lexsort((collector.take("idx"), key))  # stable: equal idx keep row order
        key = key[order]
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, len(key)))
        tree = np.cumsum(first) - 1
        cols = {name: collector.take(name)[order] for name in KEPT if name != "idx"}
        start, end = (_spans_as_stored(cols[c], cols[f"{c}_null"], tree, len(starts))
                      for c in ("start", "end"))
        bad = invalid_trees(cols, tree, starts, counts)
        off = first_disagreement(cols, tree, starts, bad)
        return cls(doc_ids, tree_ids, key[starts], counts, starts, bad, off, order, start,
                   end, cols["text_null"], cols["text_hash"])

    def codes(self, doc_ids: pa.Array, tree_ids: pa.Array) -> np.ndarray:
        """The tree of each (doc_id, tree_id) pair, -1 where `nodes` has no such rows."""
        doc, tree = _codes(doc_ids, self.doc_ids), _codes(tree_ids, self.tree_ids)
        if not len(self.keys):
            return np.full(len(doc), -1, dtype=np.int64)
        key = doc * len(self.tree_ids) + tree
        pos = np.searchsorted(self.keys, key).clip(0, len(self.keys) - 1)
        return np.where((doc >= 0) & (tree >= 0) & (self.keys[pos] == key), pos, -1)

    def leaf_mismatches(self, codes: np.ndarray, texts: list[str]) -> list[int]:
        """Positions i with ``codes[i] >= 0`` whose tree has a leaf that is not
        ``texts[i][start:end]`` (a null leaf text never is), compared by hash."""
        sel = np.flatnonzero(codes >= 0)
        n_leaves = (self.counts[codes[sel]] + 1) // 2
        before = np.cumsum(n_leaves) - n_leaves
        rows = (np.repeat(self.starts[codes[sel]] - before, n_leaves)
                + np.arange(int(n_leaves.sum())))
        owners = np.repeat(sel, n_leaves).tolist()
        found: set[int] = set()
        for i, s, e, null, h in zip(owners, self.start[rows].tolist(), self.end[rows].tolist(),
                                    self.text_null[rows].tolist(),
                                    self.text_hash[rows].tolist()):
            if null or hash(texts[i][s:e]) != h:
                found.add(i)
        return sorted(found)

    def rows(self, take: Callable[[np.ndarray], pa.Table],
             codes: Iterable[int]) -> Iterator[tuple[int, pa.Table]]:
        """(code, the tree's rows in the order they were read) for each tree of CODES;
        ``take(row numbers)`` reads rows (ascending numbers) by their number."""
        codes = np.asarray(sorted(set(codes)), dtype=np.int64)
        for k in range(0, len(codes), TAKE_TREES):
            part = codes[k : k + TAKE_TREES]
            sizes = self.counts[part]
            before = np.cumsum(sizes) - sizes
            sorted_rows = (np.repeat(self.starts[part] - before, sizes)
                           + np.arange(int(sizes.sum())))
            numbers, owner = self.offsets[sorted_rows], np.repeat(part, sizes)
            order = np.argsort(numbers, kind="stable")
            table = take(numbers[order])
            owner = owner[order]
            grouped = np.argsort(owner, kind="stable")
            for code, at in zip(part.tolist(), (before + sizes).tolist()):
                yield code, table.take(grouped[at - self.counts[code] : at])


def _codes(values: pa.ChunkedArray | pa.Array, dictionary: pa.Array) -> np.ndarray:
    """Position of each value in DICTIONARY (int64, -1 where absent)."""
    found = pc.index_in(values, value_set=dictionary)
    if isinstance(found, pa.ChunkedArray):
        found = found.combine_chunks() if found.num_chunks else pa.array([], pa.int32())
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _spans_as_stored(values: np.ndarray, null: np.ndarray, tree: np.ndarray,
                     n_trees: int) -> np.ndarray:
    """start / end as `stored_tree` casts them: a tree whose column holds a null goes
    through float64 (nulls become NaN, cast to int64 as numpy casts NaN)."""
    with_null = np.bincount(tree[null], minlength=n_trees) > 0
    through_float = with_null[tree]
    out = values.astype(np.int64)
    floats = np.where(null[through_float], np.nan, values[through_float].astype(np.float64))
    out[through_float] = _as_int(floats, np.int64)
    return out


@dataclass
class TreeFindings:
    """The documents' side of the check: their texts, tree sizes, trees and leaf texts.

    Made by `for_documents` (the tree of every documents row, looked up once), fed
    `documents` batch by batch in the same row order (`add`); then `confirm` gives each
    flagged tree its message (``problems``: (doc_id, why) in the order the documents were
    read) and `stale` counts the trees no documents row names.
    """

    table: TreeTable
    tree_codes: np.ndarray  # per documents row: its tree, -1: no nodes rows
    doc_codes: np.ndarray  # per documents row: its doc_id among those of `nodes`, or -1
    problems: list[tuple[str, str]] = field(default_factory=list)
    unconfirmed: int = 0  # flagged trees validate_tree accepts: a bug of this module
    flagged: list[tuple[str, str, str, int]] = field(default_factory=list)
    done: int = 0  # documents rows added

    @classmethod
    def for_documents(cls, table: TreeTable, doc_ids: pa.ChunkedArray,
                      tree_ids: pa.ChunkedArray) -> TreeFindings:
        """For the documents rows of DOC_IDS / TREE_IDS (their doc_id and tree_id
        columns, in the order `add` will be given them)."""
        return cls(table, table.codes(doc_ids, tree_ids), _codes(doc_ids, table.doc_ids))

    def add(self, batch: pa.RecordBatch, damaged: dict[str, str]) -> None:
        """The next batch of `documents`: a stored text that does not hash to its content
        hash or a tree of the wrong size goes to DAMAGED (doc_id -> why, as
        `check_fallback.check_tables` says it), and so does a valid tree whose vectors
        disagree (`vector_check`); a tree that is invalid or whose leaf texts differ is
        flagged."""
        rows = {c: batch.column(c).to_pylist() for c in ("doc_id", "tree_id", "content_hash",
                                                        "text")}
        codes = self.tree_codes[self.done : self.done + batch.num_rows]
        self.done += batch.num_rows
        if len(codes) != batch.num_rows:
            raise RuntimeError("documents has more rows than when its trees were looked up")
        has = codes >= 0
        got = np.where(has, self.table.counts[codes.clip(0)] if has.any() else 0, 0)
        n_chunks = batch.column("n_chunks").to_numpy(zero_copy_only=False)
        want = 2 * n_chunks.astype(np.int64) - 1
        same = hashes_match(rows["text"], rows["content_hash"])
        for i in np.flatnonzero(~same | (got != want)).tolist():
            damaged[rows["doc_id"][i]] = (
                TEXT_CHANGED if not same[i] else
                size_problem(rows["tree_id"][i], int(got[i]), int(want[i])))
        for i, why in name_problems(batch, rows["text"], same):
            damaged.setdefault(rows["doc_id"][i], why)
        whole = same & (got == want)  # the tree's rows exist: codes >= 0
        invalid = whole & (self.table.bad[codes.clip(0)] if has.any() else False)
        off = np.where(whole & ~invalid, self.table.vectors_off[codes.clip(0)], -1) \
            if has.any() else np.full(len(codes), -1)
        for i in np.flatnonzero(off >= 0).tolist():
            damaged.setdefault(rows["doc_id"][i], vector_problem(
                rows["tree_id"][i], int(off[i]), int(got[i])))
        texts = self.table.leaf_mismatches(np.where(whole & ~invalid, codes, -1), rows["text"])
        for i in sorted(set(np.flatnonzero(invalid).tolist()) | set(texts)):
            self.flagged.append((rows["doc_id"][i], rows["tree_id"][i], rows["text"][i],
                                 int(codes[i])))

    def confirm(self, take: Callable[[np.ndarray], pa.Table]) -> None:
        """The message of each flagged tree from its rows (read by ``take``, see
        `TreeTable.rows`) by `stored_tree` and `leaf_problem`, as `Store.load_tree`'s
        reader says it."""
        by_tree: dict[int, list[int]] = {}
        for j, (_, _, _, code) in enumerate(self.flagged):
            by_tree.setdefault(code, []).append(j)
        why: dict[int, str | None] = {}
        for code, rows in self.table.rows(take, by_tree):
            for j in by_tree[code]:
                doc_id, tree_id, text, _ = self.flagged[j]
                try:
                    with np.errstate(invalid="ignore"):  # a null span, cast as it casts it
                        stored = stored_tree(doc_id, rows.sort_by("idx"))
                except (ValueError, KeyError) as exc:  # InvalidTreeError
                    why[j] = f"its tree {tree_id} is invalid: {exc}"
                else:
                    why[j] = leaf_problem(stored, tree_id, text)
        for j, (doc_id, _, _, _) in enumerate(self.flagged):
            if why[j] is None:
                self.unconfirmed += 1
            else:
                self.problems.append((doc_id, why[j]))

    def stale(self) -> tuple[int, int]:
        """(trees, rows) of `nodes` that no documents row names (a doc_id's last row
        names its tree, as in `check_fallback.check_tables`'s ``named``)."""
        named = np.zeros(len(self.table.counts), dtype=bool)
        present = np.flatnonzero(self.doc_codes >= 0)[::-1]
        _, first = np.unique(self.doc_codes[present], return_index=True)
        last = self.tree_codes[present[first]]
        named[last[last >= 0]] = True
        return int((~named).sum()), int(self.table.counts[~named].sum())
