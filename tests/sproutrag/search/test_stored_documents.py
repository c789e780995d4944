"""StoredDocuments.load_trees when an index run replaces a document between the read of
`documents` and the read of its tree (toy documents, no model)."""

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
    load_tree = store.load_tree
    store.load_tree = lambda d, t=None: (reads.append((d, t)), load_tree(d, t))[1]

    with retriever.view.one_view():
        before = documents.tree_ids(DOCS)  # this search's `documents` version
        writer.write([toy_document("d1", "new d1 words here", seed=1)], "fp", stored=DOCS)
        retriever.view.refresh()  # another thread moves the shared handles meanwhile
        loaded = documents.load_trees(DOCS)

    assert list(loaded) == DOCS
    assert loaded["d1"][0] != before["d1"] and loaded["d1"][1].texts[0] == "new"
    assert all(loaded[d][0] == before[d] for d in ("d0", "d2", "d3"))
    # d1's old tree failed; the trees read before it were kept, not read again
    assert [d for d, _ in reads] == ["d0", "d1", "d1", "d2", "d3"]
    assert reads[1] == ("d1", before["d1"]) and reads[2] == ("d1", loaded["d1"][0])


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
