"""Tests of sproutrag.storage.rows.nodes_rows: a batch's `nodes` rows are each document's
tree and leaf texts, in order, as `stored_tree` reads them back; bad input names the
document."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
from sproutrag.schemas import tables

from sproutrag.documents import SourceDocument
from sproutrag.storage.rows import IndexedDocument, node_rows, nodes_rows, stored_tree
from sproutrag.trees.tree import InvalidTreeError, build_tree


def indexed(doc_id: str, n: int, seed: int) -> IndexedDocument:
    """A document of N sentences and its tree over a chain of relations."""
    rng = np.random.default_rng(seed)
    text = " ".join(f"Sentence {k} of {doc_id} (é{'x' * int(rng.integers(5))})." for k in range(n))
    starts = [text.index(f"Sentence {k} ") for k in range(n)]
    ends = [*(s - 1 for s in starts[1:]), len(text)]
    i = np.arange(n - 1)
    tree = build_tree(rng.normal(size=(n, 4)).astype(np.float32), i, i + 1,
                      rng.uniform(0.1, 1, n - 1))
    doc = SourceDocument(doc_id, f"{doc_id}.txt", text, "hash")
    return IndexedDocument(doc, np.array(list(zip(starts, ends)), dtype=np.int64), tree)


def test_batch_rows_are_each_tree_read_back():
    items = [indexed(f"d{k}", n, k) for k, n in enumerate((1, 5, 2, 9, 1, 3))]
    tree_ids = {i.doc.doc_id: f"tree-{i.doc.doc_id}" for i in items}
    rows = nodes_rows(items, tree_ids)
    assert rows.schema == tables.nodes_schema(4)
    assert rows.num_rows == sum(2 * i.tree.n - 1 for i in items)
    at = 0
    for item in items:
        doc_id, n = item.doc.doc_id, item.tree.n
        mine = rows.slice(at, 2 * n - 1)
        at += 2 * n - 1
        assert mine.column("doc_id").to_pylist() == [doc_id] * (2 * n - 1)
        assert mine.column("tree_id").to_pylist() == [tree_ids[doc_id]] * (2 * n - 1)
        assert mine.column("idx").to_pylist() == list(range(2 * n - 1))
        assert mine.column("node_id").to_pylist() == [f"{doc_id}:{k}" for k in range(2 * n - 1)]
        assert mine.column("start").null_count == mine.column("text").null_count == n - 1
        assert mine.column("merge_sim").null_count == n
        back = stored_tree(doc_id, mine)
        for col in ("left", "right", "parent", "height", "n_leaves", "leaf_start",
                    "leaf_end", "leaf_order", "vectors"):
            np.testing.assert_array_equal(getattr(back.tree, col), getattr(item.tree, col))
        np.testing.assert_array_equal(back.tree.merge_sim, item.tree.merge_sim)
        np.testing.assert_array_equal(back.spans, item.spans)
        assert back.texts == [item.doc.text[s:e] for s, e in item.spans.tolist()]
    one = node_rows(items[3], "t")
    assert one.drop(["tree_id"]).equals(rows.slice(1 + 9 + 3, 17).drop(["tree_id"]))


def test_bad_input_names_the_document():
    items = [indexed("good", 3, 1), indexed("bad", 4, 2)]
    tree = items[1].tree
    broken = dataclasses.replace(tree, height=np.zeros_like(tree.height))
    items[1] = dataclasses.replace(items[1], tree=broken)
    with pytest.raises(InvalidTreeError, match="^tree of 'bad': .*height"):
        nodes_rows(items, {"good": "a", "bad": "b"})
    short = dataclasses.replace(indexed("short", 4, 3), spans=np.array([[0, 1]]))
    with pytest.raises(ValueError, match="'short': 1 spans for a tree of 4 leaves"):
        nodes_rows([indexed("good", 3, 1), short], {"good": "a", "short": "b"})
    wide = indexed("wide", 2, 4)
    wide = dataclasses.replace(wide, tree=dataclasses.replace(
        wide.tree, vectors=np.zeros((3, 5), np.float32)))
    with pytest.raises(ValueError, match=r"vectors of \[4, 5\] dimensions"):
        nodes_rows([indexed("good", 3, 1), wide], {"good": "a", "wide": "b"})
    assert isinstance(nodes_rows([indexed("x", 2, 5)], {"x": "t"}), pa.Table)
