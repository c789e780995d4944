"""Rule 65 (docs/whole-corpus.md): named documents below rule 31's 32 leaves are searched
alone when each opens with the question's name (`search.alone_opening_leaves`)."""

from __future__ import annotations

import numpy as np
import pytest

QUESTION = "When is payment due under the agreement with Acme Holdings?"


def _pool(tmp_path, opening: str, leaves: int = 20):
    """Acme's agreement of LEAVES units whose first line is OPENING (its name written
    again in its last line, so that it is always the only holder), and three look-alikes
    of 4 units whose payment sentence matches the question's vector better than its."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(11)
    lines = ([opening, "Payment is due in thirty days."]
             + [f"Clause {i} covers other matters." for i in range(leaves - 3)]
             + ["Signed for Acme Holdings."])
    vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM), leaf_vectors(rng, 0.6, 1, TOY_DIM),
                         leaf_vectors(rng, 0.1, leaves - 2, TOY_DIM)])
    docs = [line_document("acme", lines, vectors)]
    docs += [line_document(f"other{i}", [f"Supply agreement with Party {i}.",
                                         "Payment is due in thirty days.",
                                         "Either party may end it on notice.",
                                         "Notices are given in writing."],
                           np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                                      leaf_vectors(rng, 0.95, 1, TOY_DIM),
                                      leaf_vectors(rng, 0.85, 2, TOY_DIM)]))
             for i in range(3)]
    return line_pool(tmp_path / "db", docs, rng=rng)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_named_agreement_of_20_units_that_opens_with_its_name_is_searched_alone(
        tmp_path, mode):
    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, "Supply agreement with Acme Holdings.")
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]

    def hits(doc_ids=None, **options) -> list[tuple]:
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4, name_free_leaves=0,
                      **options)  # rule 62's blend off: the toy encoder embeds no question
        return [(h.doc_id, h.spans, round(h.score, 6)) for h in
                r.search_vector(QUESTION, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    alone = hits()  # 20 units < 32: alone by rule 65 only
    assert alone == hits(["acme"])  # as a query restricted to it: no weights, its statistics
    assert {d for d, _, _ in alone} == {"acme"}
    assert Retriever(db, encoder=encoder).alone_opening_leaves == 16  # the default
    for off in ({"alone_opening_leaves": 0}, {"alone_opening_leaves": 21},
                {"mention_alone": False}, {"anchor_leaves": 0}):  # 20 units: not fewer than 0
        assert hits(**off) != alone, off  # searched among the look-alikes, weighted
    with pytest.raises(QueryError, match="alone_opening_leaves"):
        Retriever(db, encoder=encoder, alone_opening_leaves=-1)


def test_a_named_agreement_whose_opening_does_not_write_the_name_is_not_searched_alone(
        tmp_path):
    from sproutrag.search.alone import opening_named
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, "Supply agreement between the parties below.")
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4, name_free_leaves=0)
    scored = [(h.doc_id, h.spans, round(h.score, 6)) for h in r.search_vector(QUESTION, qvec, k=4)]
    within = [(h.doc_id, h.spans, round(h.score, 6))
              for h in r.search_vector(QUESTION, qvec, k=4, doc_ids=["acme"])]
    assert scored != within  # searched among the look-alikes, with the mention's weight
    with r.view.one_view():  # still named by its last line: the gate is the opening
        found = r.searching.find(QUESTION, qvec, r.choose_documents(qvec, None, k=4),
                                 r._resolve()[0], True)
        s = r.searching.settings
        assert found.named == ("acme",) and not opening_named(
            found, QUESTION, s.anchor_leaves, s.alone_opening_leaves)
