from __future__ import annotations

import numpy as np
import pytest

from sproutrag.corpus import SourceDocument, content_hash
from sproutrag.store import IndexedDocument, StaleIndexError, Store, sql_quote
from sproutrag.tree import build_tree

DIM = 8


def _item(doc_id: str, text: str, seed: int = 0) -> IndexedDocument:
    words = text.split(" ")
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    n = len(spans)
    rng = np.random.default_rng(seed)
    i = np.arange(n - 1)
    tree = build_tree(rng.normal(size=(n, DIM)).astype(np.float32), i, i + 1,
                      rng.uniform(0.1, 1, n - 1).astype(np.float32))
    doc = SourceDocument(doc_id, f"mem://{doc_id}", text, content_hash(text))
    return IndexedDocument(doc, np.asarray(spans, dtype=np.int64), tree)


@pytest.fixture
def store(tmp_path):
    return Store(str(tmp_path / "db"), encoder_id="fake/encoder", dim=DIM)


def test_write_and_read_back(store):
    item = _item("a.txt", "alpha beta gamma delta")
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
    store.write([_item("a", "one two three four five"), _item("b", "x y")], "fp")
    store.write([_item("a", "short now", seed=1)], "fp")
    ids = store.table("nodes").to_arrow().column("node_id").to_pylist()
    assert sorted(i for i in ids if i.startswith("a:")) == ["a:0", "a:1", "a:2"]
    assert store.load_tree("b").tree.n == 2
    store.delete(["a"])
    assert set(store.indexed()) == {"b"}
    left = store.table("nodes").to_arrow().column("doc_id").to_pylist()
    assert set(left) == {"b"}


def test_doc_ids_with_quotes_cannot_inject(store):
    store.write([_item("it's", "a b"), _item("other", "c d e")], "fp")
    assert store.load_tree("it's").tree.n == 2
    with pytest.raises(KeyError):
        store.load_tree("x' OR '1'='1")
    store.delete(["x' OR doc_id != '"])
    assert set(store.indexed()) == {"it's", "other"}
    assert sql_quote("a'b") == "'a''b'"


def test_other_encoder_is_refused(tmp_path):
    Store(str(tmp_path / "db"), encoder_id="fake/encoder", dim=DIM).write(
        [_item("a", "a b")], "fp")
    other = Store(str(tmp_path / "db"), encoder_id="other/model", dim=DIM)
    with pytest.raises(StaleIndexError, match="other/model"):
        other.indexed()
    opened = Store.open_existing(str(tmp_path / "db"))
    assert (opened.encoder_id, opened.dim) == ("fake/encoder", DIM)
