"""Rule 92 (docs/whole-corpus.md): an entity of the question that no searched document
writes fetches its own document from the whole corpus: its only writer (rule 27) or the
single one of its writers whose opening writes it (`name_free.corpus_owner`), at most
`fetch_mentioned` (2) a question."""

from __future__ import annotations

import numpy as np
import pytest

QUESTION = ("Compare the value reported at Saint Aldric Hospital with the value reported "
            "at Windham Heights Hospital.")


def _report(rng, doc_id: str, opening: str, later: str, near: float, leaves: int = 20):
    """A case report of LEAVES one-line units: OPENING, filler, LATER last (past the
    opening's 300 characters), its vectors of cosine NEAR with the question's axis."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document

    lines = [opening, *(f"Paragraph {i} of the case covers the workup." for i in
                        range(leaves - 2)), later]
    return line_document(doc_id, lines, leaf_vectors(rng, near, leaves, TOY_DIM))


def _stored(docs):
    from sproutrag.storage.rows import StoredTree

    return {d.doc.doc_id: StoredTree(d.doc.doc_id, d.tree, d.spans, d.doc.text.split("\n"))
            for d in docs}


@pytest.fixture
def reports():
    """Saint Aldric's own report opens with its hospital; Windham's opens with its own
    and mentions Saint Aldric last; three look-alikes are nearer the question."""
    rng = np.random.default_rng(92)
    return [_report(rng, "aldric", "A case report from Saint Aldric Hospital.", "Done.", 0.1),
            _report(rng, "windham", "A case report from Windham Heights Hospital.",
                    "She was referred from Saint Aldric Hospital.", 0.1),
            *(_report(rng, f"look{i}", f"A case report from Harbor Clinic {i}.", "Done.",
                      0.8 - 0.05 * i) for i in range(3))]


def test_the_single_opener_among_an_entity_s_writers_is_its_own(reports):
    from sproutrag.search.name_free import corpus_owner

    stored = _stored(reports)
    read = stored.__getitem__
    reads: list[list[str]] = []

    def trees(docs):
        reads.append(list(docs))
        return {d: read(d) for d in docs}

    aldric = "saint aldric hospital"
    assert corpus_owner(aldric, ["windham", "aldric"], trees, 16, 8) == "aldric"
    assert corpus_owner(aldric, ["look0"], trees, 16, 8) == "look0"  # the only writer
    assert reads == [["windham", "aldric"]]  # an only writer is not read
    assert corpus_owner(aldric, ["windham", "aldric"], trees, 21, 8) is None  # the floor
    assert corpus_owner(aldric, ["windham", "aldric"], trees, 0, 8) is None  # off
    assert corpus_owner(aldric, ["windham", "aldric"], trees, 16, 1) is None  # too many
    assert corpus_owner(aldric, ["windham", "look0"], trees, 16, 8) is None  # no opener
    assert corpus_owner(aldric, [], trees, 16, 8) is None
    two = {**stored, "look0": _stored([_report(np.random.default_rng(1), "look0",
                                               "Saint Aldric Hospital, a second report.",
                                               "Done.", 0.5)])["look0"]}
    assert corpus_owner(aldric, ["aldric", "look0"], lambda ds: {d: two[d] for d in ds},
                        16, 8) is None  # two openers: no single own


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_both_hospitals_reports_are_fetched_and_searched(tmp_path, reports, mode):
    """The first stage chooses look-alikes only. Before rule 92 only Windham's report, the
    only writer of its hospital, was fetched; it also writes Saint Aldric, so it was named
    by both and searched alone. Now Saint Aldric's own report is fetched too."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import line_pool

    db, encoder = line_pool(tmp_path / "db", reports, rng=np.random.default_rng(3))
    assert Retriever(db, encoder=encoder).store.ensure_text_index()
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    searched = {}
    for fetch in (1, 2):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2,
                      fetch_mentioned=fetch, name_free_leaves=0)
        with r.view.one_view():
            chosen = r.choose_documents(qvec, None, k=4)
            found = r.searching.find(QUESTION, qvec, chosen, r._resolve()[0], True)
        assert not {"aldric", "windham"} & set(chosen)
        searched[fetch] = found.docs
        hits = {h.doc_id for h in r.search_vector(QUESTION, qvec, k=4, mode=mode)}
        assert hits <= set(found.docs)
    assert searched[1] == ["aldric"]  # the first entity's own, as many as fetch_mentioned
    assert searched[2] == ["aldric", "windham"]  # searched alone, as if restricted to them
    assert Retriever(db, encoder=encoder).fetch_mentioned == 2  # the default (rule 92)
