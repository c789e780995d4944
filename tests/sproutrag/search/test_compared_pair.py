"""Rule 90 (docs/whole-corpus.md): a corpus-wide question that compares two subjects and
names no document outside the first stage's first two searches those two alone, each of
`alone_opening_leaves` leaves (`search.alone.compared_pair`): a look-alike of one subject
no longer takes the units the other subject's document answers with."""

from __future__ import annotations

import numpy as np
import pytest

COMPARED = "Which grocer reported the larger sales, the one by the river or the one uphill?"
SINGLE = "Which grocer reported the larger sales by the river and uphill?"


def _report(rng, doc_id: str, matches: list[float], leaves: int):
    """A report of LEAVES one-line units, its first units of cosine MATCHES with the
    question's axis, the rest far from it."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document

    lines = [f"{doc_id} grocer annual report.", *(f"{doc_id} sales line {i}." for i in
                                                  range(leaves - 1))]
    vectors = np.vstack([*(leaf_vectors(rng, m, 1, TOY_DIM) for m in matches),
                         leaf_vectors(rng, 0.0, leaves - len(matches), TOY_DIM)])
    return line_document(doc_id, lines, vectors)


@pytest.fixture
def pool(tmp_path):
    """Two subjects' reports the first stage ranks first and second, and a look-alike
    whose three good units outrank the second subject's others."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import line_pool

    rng = np.random.default_rng(90)
    docs = [_report(rng, "river", [0.95, 0.5], 20), _report(rng, "uphill", [0.9, 0.5], 20),
            _report(rng, "lookalike", [0.7, 0.0, 0.0, 0.7, 0.0, 0.0, 0.7], 20),
            _report(rng, "short", [0.6], 6)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    return Retriever(db, encoder=encoder, first_stage="vector", n_docs=4,
                     name_free_leaves=0), np.eye(encoder.dim, dtype=np.float32)[0]


def _searched(r, qvec, question):
    with r.view.one_view():
        chosen = r.choose_documents(qvec, None, k=4)
        found = r.searching.find(question, qvec, chosen, r._resolve()[0], True)
    return chosen, found.docs


def test_a_comparison_searches_the_first_stage_s_first_two_alone(pool):
    r, qvec = pool
    chosen, searched = _searched(r, qvec, COMPARED)
    assert chosen[:2] == ["river", "uphill"]
    assert searched == ["river", "uphill"]
    _, searched = _searched(r, qvec, SINGLE)  # no "or": all the first stage's documents
    assert set(searched) == {"river", "uphill", "lookalike", "short"}


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_comparison_answers_as_a_query_restricted_to_the_two(pool, mode):
    r, qvec = pool

    def hits(question, doc_ids=None):
        return [(h.doc_id, h.spans, round(h.score, 6))
                for h in r.search_vector(question, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    assert hits(COMPARED) == hits(COMPARED, ["river", "uphill"])
    assert "lookalike" in {d for d, _, _ in hits(SINGLE)}  # what the rule keeps out


def test_the_pair_needs_its_leaves_and_the_named_documents(pool):
    from sproutrag.search.alone import compared_pair
    from sproutrag.search.searched import Searched

    r, qvec = pool
    with r.view.one_view():
        found = r.searching._read(["river", "uphill", "short"], r._resolve()[0], COMPARED,
                                  True)
    assert compared_pair(found, COMPARED, 16) == ["river", "uphill"]
    assert compared_pair(found, COMPARED, 21) is None  # below the floor
    assert compared_pair(found, COMPARED, 0) is None  # off
    assert compared_pair(found, SINGLE, 16) is None  # no comparison
    assert compared_pair(found, "How do the two compare?", 16) == ["river", "uphill"]
    named_third: Searched = found._replace(named=("short",))
    assert compared_pair(named_third, COMPARED, 16) is None  # it names another document
    short_first = found._replace(docs=["short", "river", "uphill"])
    assert compared_pair(short_first, COMPARED, 16) is None  # 6 leaves
