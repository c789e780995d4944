"""StoredDocuments.load_trees when an index run replaces a document between the read of
`documents` and the read of its tree, and `Store.load_trees` (a search's trees in one
read) against one read a tree (toy documents, no model)."""

from __future__ import annotations

import numpy as np

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.retriever import Retriever
from tests.helpers import toy_document, toy_encoder, toy_store

DOCS = ["d0", "d1", "d2", "d3"]


def _retriever(db):
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    return Retriever(str(db), encoder=toy_encoder(weights), memory_rows=0,
                     cache_bytes=1)  # nothing cached: every tree is a read


def test_a_tree_replaced_under_a_search_is_read_again_and_only_it(tmp_path):
    writer = toy_store(tmp_path / "db")
    writer.write([toy_document(d, f"old {d} text") for d in DOCS], "fp")
    retriever = _retriever(tmp_path / "db")
    documents, store = retriever.documents, retriever.store
    reads = []
    load_trees = store.load_trees
    store.load_trees = lambda trees: (reads.append(dict(trees)), load_trees(trees))[1]

    with retriever.view.one_view():
        before = documents.tree_ids(DOCS)  # this search's `documents` version
        writer.write([toy_document("d1", "new d1 words here", seed=1)], "fp", stored=DOCS)
        retriever.view.refresh()  # another thread moves the shared handles meanwhile
        loaded = documents.load_trees(DOCS)

    assert list(loaded) == DOCS
    assert loaded["d1"][0] != before["d1"] and loaded["d1"][1].texts[0] == "new"
    assert all(loaded[d][0] == before[d] for d in ("d0", "d2", "d3"))
    # one read of the four trees: d1's old tree was gone; the others were kept, and the
    # second read asked for d1's new tree alone
    assert reads == [before, {"d1": loaded["d1"][0]}]


def test_a_document_deleted_under_a_search_is_left_out(tmp_path):
    writer = toy_store(tmp_path / "db")
    writer.write([toy_document(d, f"old {d} text") for d in DOCS], "fp")
    retriever = _retriever(tmp_path / "db")
    with retriever.view.one_view():
        retriever.documents.tree_ids(DOCS)
        writer.delete(["d2"])
        retriever.view.refresh()
        loaded = retriever.documents.load_trees(DOCS)
    assert list(loaded) == ["d0", "d1", "d3"]


def test_trees_read_at_once_are_the_trees_read_one_by_one(tmp_path):
    """`Store.load_trees` gives each document the tree `load_tree` gives, whatever the
    order of the rows, leaves out a tree no longer stored and a tree id asked of the wrong
    document, and reads more than one query's worth (`TREE_READ_DOCS`) in parts."""
    from sproutrag.storage.tree_reads import TREE_READ_DOCS

    store = toy_store(tmp_path / "db")
    ids = [f"d{i:03d}" for i in range(2 * TREE_READ_DOCS + 3)]
    store.write([toy_document(d, f"text of {d} " * (1 + i % 4), seed=i)
                 for i, d in enumerate(ids)], "fp")
    old_d5 = store.current_trees()["d005"][0]
    store.write([toy_document("d005", "a new text for five", seed=9)], "fp", stored=ids)
    current = {d: t for d, (t, _) in store.current_trees().items()}
    wanted = {d: current[d] for d in ids}
    got = store.load_trees({**wanted, "d005": old_d5, "d006": current["d007"]})
    assert set(got) == set(ids) - {"d005", "d006"}
    for d in ("d000", "d003", ids[TREE_READ_DOCS], ids[-1]):
        one = store.load_tree(d, current[d])
        assert got[d].texts == one.texts and np.array_equal(got[d].spans, one.spans)
        assert np.array_equal(got[d].tree.vectors, one.tree.vectors)
        assert np.array_equal(got[d].tree.parent, one.tree.parent)
    assert store.load_trees({}) == {}
