"""Tests of sproutrag.search.current: the current trees as columns, looked up by doc key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sproutrag.doc_keys import doc_key, doc_keys
from sproutrag.search import current as current_module
from sproutrag.search.current import Current

TREES = {"a.txt": "t1", "dir/b.txt": "t2", "é c": "t3", "d": "t4"}
LEAVES = {"a.txt": 3, "dir/b.txt": 1, "é c": 5, "d": 2}


def test_doc_keys_are_stable_signed_64_bit_integers():
    assert doc_key("a.txt") == doc_key("a.txt") != doc_key("b.txt")
    assert doc_key("reports/2025/q3.txt") == -5309597156177043224  # stored keys must not move
    assert doc_keys(["a.txt", "b.txt"]).tolist() == [doc_key("a.txt"), doc_key("b.txt")]
    assert doc_keys([]).dtype == np.int64 and len(doc_keys([])) == 0


def test_lookups_answer_what_the_dicts_did():
    cur = Current.of(3, TREES, LEAVES, {"fp"})
    assert (len(cur), cur.units, cur.rows, cur.version) == (4, 11, 18, 3)
    assert cur.tree_ids_of(["d", "zz", "a.txt", "d"]) == {"d": "t4", "a.txt": "t1"}
    assert cur.tree_of("é c") == "t3" and cur.tree_of("e c") is None
    assert "dir/b.txt" in cur and "dir" not in cur and 5 not in cur
    assert cur.leaves_of(["é c", "nope", "a.txt"]).tolist() == [5, 0, 3]
    assert cur.is_current(["a.txt", "a.txt", "x", "d"], ["t1", "t0", "t1", "t4"]).tolist() == [
        True, False, False, True]
    assert cur.items() == list(TREES.items())
    assert cur.tree_ids.to_pylist() == list(TREES.values())


def test_doc_ids_that_share_a_key_are_told_apart(monkeypatch):
    """Every key the same: each lookup still compares the doc_ids themselves."""
    monkeypatch.setattr(current_module, "doc_keys", lambda ids: np.zeros(len(list(ids)), np.int64))
    cur = Current.of(1, TREES, LEAVES)
    assert cur.tree_ids_of(["é c", "a.txt", "zz", "d"]) == {"é c": "t3", "a.txt": "t1", "d": "t4"}
    assert cur.leaves_of(list(TREES)).tolist() == list(LEAVES.values())
    assert cur.is_current(["d", "dir/b.txt"], ["t4", "t4"]).tolist() == [True, False]


def test_stored_keys_are_used_and_a_missing_one_is_computed():
    ids = ["a.txt", "d", "x"]
    keys = pa.array([doc_key("a.txt"), None, doc_key("a.txt")], pa.int64())  # x: a's key
    cur = Current(1, pa.array(ids), pa.array(["t1", "t4", "t9"]), np.array([1, 2, 3]),
                  keys=keys)
    assert cur.tree_ids_of(["a.txt", "d"]) == {"a.txt": "t1", "d": "t4"}
    assert cur.tree_of("x") is None  # filed under another key: not found (`check` says)


def test_no_documents():
    cur = Current.empty()
    assert (len(cur), cur.units, cur.rows, cur.version) == (0, 0, 0, -1)
    assert cur.tree_ids_of(["a"]) == {} and cur.leaves_of(["a"]).tolist() == [0]
    assert cur.is_current(["a"], ["t"]).tolist() == [False] and cur.items() == []


def test_remembered_rows_answer_as_the_keys_do(monkeypatch):
    """Lookups are remembered up to MEMO doc_ids, then forgotten; answers never change."""
    monkeypatch.setattr(current_module, "MEMO", 3)
    cur = Current.of(1, TREES, LEAVES)
    for _ in range(3):
        assert cur.tree_ids_of(["d", "zz", "a.txt"]) == {"d": "t4", "a.txt": "t1"}
        assert cur.leaves_of(["é c", "dir/b.txt", "d", "zz"]).tolist() == [5, 1, 2, 0]
        assert len(cur._memo) <= 3


def test_rows_of_16_character_tree_ids_are_checked_by_their_trees(monkeypatch):
    """Stored tree ids (`new_tree_id`: 16 hex digits) are compared as numpy bytes: an
    old tree of a known document, another document's tree, a legacy tree id and a key
    every doc_id shares answer as the comparison of strings does."""
    from sproutrag.storage.rows import new_tree_id

    trees = {d: new_tree_id() for d in TREES}
    old = new_tree_id()
    pairs = ([*trees, "a.txt", "d", "zz", "é c"],
             [*trees.values(), old, trees["a.txt"], trees["d"], "legacy:é c"])
    want = [True] * 4 + [False] * 4
    for same_key in (False, True):
        if same_key:
            monkeypatch.setattr(current_module, "doc_keys",
                                lambda ids: np.zeros(len(list(ids)), np.int64))
        cur = Current.of(1, trees, LEAVES)
        assert cur._tree16 is not None
        assert cur.is_current(*pairs).tolist() == want
        assert cur.is_current(pairs[0][:5], pairs[1][:5]).tolist() == want[:5]  # all 16 long
    assert Current.of(1, TREES, LEAVES)._tree16 is None  # other lengths: by doc_id
