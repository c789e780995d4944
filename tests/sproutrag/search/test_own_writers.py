"""Rules 70, 83 and 84 (docs/whole-corpus.md): a name two searched documents write names its
own long document, the first of its writers in the first stage's order when that one
opens with it, another subject's own document left out of the lead
(`name_free.own_writers`), unless most of the searched documents open with it (a topic,
rule 87); while a name that searched documents write names none of them, the named
documents are not searched alone (rule 84)."""

from __future__ import annotations

import numpy as np
import pytest

QUESTION = "When is payment due under the agreement with Acme Holdings?"


def _agreement(doc_id: str, opening: str, cites: str, payment: float, leaves: int, rng):
    """An agreement of LEAVES units: OPENING, a payment sentence whose vector has cosine
    PAYMENT with the question's, CITES (a sentence that may write another's name) last."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document

    lines = ([opening, "Payment is due in thirty days."]
             + [f"Clause {i} covers other matters." for i in range(leaves - 3)] + [cites])
    vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                         leaf_vectors(rng, payment, 1, TOY_DIM),
                         leaf_vectors(rng, 0.1, leaves - 2, TOY_DIM)])
    return line_document(doc_id, lines, vectors)


def _pool(tmp_path, acme: float, rival: float, acme_leaves: int = 20):
    """Acme's own agreement (it opens with the name) and a rival's that cites Acme in its
    last line, their payment sentences at cosines ACME and RIVAL, and two look-alikes
    that write no name and match better than both."""
    from tests.helpers import line_pool

    rng = np.random.default_rng(7)
    docs = [_agreement("acme", "Supply agreement with Acme Holdings.", "Signed by both.",
                       acme, acme_leaves, rng),
            _agreement("rival", "Supply agreement with Borealis Freight.",
                       "Borealis buys the same parts as Acme Holdings.", rival, 20, rng)]
    docs += [_agreement(f"other{i}", f"Supply agreement with Party {i}.", "Signed by both.",
                        0.95, 4, rng) for i in range(2)]
    return line_pool(tmp_path / "db", docs, rng=rng)


def _found(r, qvec):
    with r.view.one_view():
        chosen = r.choose_documents(qvec, None, k=4)
        return chosen, r.searching.find(QUESTION, qvec, chosen, r._resolve()[0], True)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_name_s_own_document_that_leads_its_writers_is_searched_alone(tmp_path, mode):
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, acme=0.9, rival=0.8)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]

    def retriever(**options):  # rule 62's blend off: the toy encoder embeds no question
        return Retriever(db, encoder=encoder, first_stage="vector", n_docs=4,
                         name_free_leaves=0, **options)

    def hits(doc_ids=None, **options) -> list[tuple]:
        return [(h.doc_id, h.spans, round(h.score, 6)) for h in retriever(**options)
                .search_vector(QUESTION, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    chosen, found = _found(retriever(), qvec)
    assert chosen.index("acme") < chosen.index("rival")  # Acme leads the name's writers
    # two write "Acme Holdings": its own agreement is named and searched alone (rule 65: 20
    # units, its opening), as a query restricted to it
    assert found.docs == ["acme"]
    assert hits() == hits(["acme"])
    _, before = _found(retriever(alone_opening_leaves=0), qvec)  # the rule's floor: 0, off
    assert before.named == () and set(before.docs) == set(chosen)
    assert hits(alone_opening_leaves=0) != hits(["acme"])  # among the look-alikes


def test_a_citing_document_that_leads_or_a_short_own_document_names_nothing(tmp_path):
    from sproutrag.search.retriever import Retriever

    for name, options in (("rival leads", {"acme": 0.8, "rival": 0.9}),
                          ("acme short", {"acme": 0.9, "rival": 0.8, "acme_leaves": 8})):
        db, encoder = _pool(tmp_path / name.replace(" ", "-"), **options)
        qvec = np.eye(encoder.dim, dtype=np.float32)[0]
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4, name_free_leaves=0)
        chosen, found = _found(r, qvec)
        if name == "rival leads":
            assert chosen.index("rival") < chosen.index("acme")
        assert found.named == () and set(found.docs) == set(chosen), name  # two writers
        within = [h.doc_id for h in r.search_vector(QUESTION, qvec, k=4, doc_ids=["acme"])]
        assert [h.doc_id for h in r.search_vector(QUESTION, qvec, k=4)] != within, name


def test_own_writers_keeps_an_entity_to_its_one_leading_opener():
    from sproutrag.search.name_free import own_writers
    from sproutrag.storage.rows import StoredTree
    from tests.helpers import TOY_DIM, leaf_vectors, line_document

    rng = np.random.default_rng(3)

    def stored(doc_id: str, opening: str, leaves: int = 20) -> StoredTree:
        lines = ([opening] + [f"Clause {i} covers other matters." for i in range(leaves - 2)]
                 + ["It cites Acme Holdings."])  # past the opening's 300 characters
        doc = line_document(doc_id, lines, leaf_vectors(rng, 0.5, leaves, TOY_DIM))
        return StoredTree(doc_id, doc.tree, doc.spans, lines)

    trees = {"a": stored("a", "Acme Holdings annual report."),
             "b": stored("b", "Borealis annual report."),
             "c": stored("c", "Acme Holdings and Borealis, a joint report.")}
    two = {"acme holdings": ["a", "b"]}
    assert own_writers(two, trees, ["a", "b"], 16) == {"acme holdings": ["a"]}
    assert own_writers(two, trees, ["b", "a"], 16) == two  # a citing document leads
    assert own_writers(two, trees, ["a", "b"], 21) == two  # below the floor
    assert own_writers(two, trees, ["a", "b"], 0) == two  # off
    # two open with it, among four searched ("d" writes no name): the first in order
    both = {"acme holdings": ["a", "c"]}  # (rule 84)
    assert own_writers(both, trees, ["a", "c", "b", "d"], 16) == {"acme holdings": ["a"]}
    assert own_writers(both, trees, ["c", "a", "b", "d"], 16) == {"acme holdings": ["c"]}
    three = {"acme holdings": ["a", "b", "c"]}  # a citing writer leads the two openers
    assert own_writers(three, trees, ["b", "a", "c", "d"], 16) == three
    # two openers among three or two searched: most of them, a topic (rule 87)
    assert own_writers(both, trees, ["a", "c", "b"], 16) == both
    assert own_writers(both, trees, ["a", "c"], 16) == both


def test_a_word_most_searched_documents_open_with_is_their_topic_and_names_none():
    """Rule 87: "Kawasaki" opens every case report's title, so the first of its writers
    is no more its own than the others; a name two of five open with still is."""
    from sproutrag.search.name_free import own_writers
    from sproutrag.storage.rows import StoredTree
    from tests.helpers import TOY_DIM, leaf_vectors, line_document

    rng = np.random.default_rng(13)

    def stored(doc_id: str, opening: str, leaves: int = 20) -> StoredTree:
        lines = [opening] + [f"Finding {i} was recorded." for i in range(leaves - 1)]
        doc = line_document(doc_id, lines, leaf_vectors(rng, 0.5, leaves, TOY_DIM))
        return StoredTree(doc_id, doc.tree, doc.spans, lines)

    titles = {f"r{i}": f"Kawasaki disease in a {i + 2}-year-old child." for i in range(4)}
    titles["other"] = "Measles in a 5-year-old child."
    trees = {d: stored(d, t) for d, t in titles.items()}
    order = ["r2", "r0", "other", "r1", "r3"]
    topic = {"kawasaki": ["r0", "r1", "r2", "r3"]}  # four of five open with it
    assert own_writers(topic, trees, order, 16) == topic
    pair = {"kawasaki": ["r0", "r2"]}  # as if only two wrote it: the first is its own
    assert own_writers(pair, trees, order, 16) == {"kawasaki": ["r2"]}
    three = {"kawasaki": ["r0", "r1", "r2"]}  # three of five: more than half
    assert own_writers(three, trees, order, 16) == three
    one = {"acme holdings": ["b"], "borealis": []}  # one writer or none: as they are
    assert own_writers(one, trees, ["a", "b"], 16) == one


def test_a_comparison_names_both_reports_when_one_cites_the_other():
    """Rule 83: "Which grew faster, Borealis or Acme Holdings?". Borealis's report leads
    and cites Acme; it is Borealis's only writer, so Acme's own report (the only one that
    opens with the name) leads the rest of Acme's writers and is named too."""
    from sproutrag.search.name_free import own_writers
    from sproutrag.storage.rows import StoredTree
    from tests.helpers import TOY_DIM, leaf_vectors, line_document

    rng = np.random.default_rng(5)

    def stored(doc_id: str, opening: str, cites: str, leaves: int = 20) -> StoredTree:
        lines = ([opening] + [f"Clause {i} covers other matters." for i in range(leaves - 2)]
                 + [cites])
        doc = line_document(doc_id, lines, leaf_vectors(rng, 0.5, leaves, TOY_DIM))
        return StoredTree(doc_id, doc.tree, doc.spans, lines)

    trees = {"b": stored("b", "Borealis annual report.", "It competes with Acme Holdings."),
             "a": stored("a", "Acme Holdings annual report.", "Signed."),
             "x": stored("x", "Party X annual report.", "It buys from Acme Holdings.")}
    holders = {"borealis": ["b"], "acme holdings": ["b", "a"]}
    assert own_writers(holders, trees, ["b", "a"], 16) == {"borealis": ["b"],
                                                           "acme holdings": ["a"]}
    # a third writer that leads the rest (no other subject's): rule 83 keeps the writers,
    # and rule 93 names the single opener, Borealis being settled on its own report
    three = {"borealis": ["b"], "acme holdings": ["b", "x", "a"]}
    assert own_writers(three, trees, ["b", "x", "a"], 16) == {"borealis": ["b"],
                                                              "acme holdings": ["a"]}
    # Borealis written by two as well: rule 70 keeps it to its own report first
    shared = {"borealis": ["b", "x"], "acme holdings": ["b", "a"]}
    assert own_writers(shared, trees, ["b", "a", "x"], 16) == {"borealis": ["b"],
                                                               "acme holdings": ["a"]}
    assert own_writers(holders, trees, ["b", "a"], 21) == holders  # below the floor


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_comparison_searches_both_reports_though_the_leader_cites_the_other(tmp_path,
                                                                               mode):
    """Rule 83 through the Retriever: Borealis's agreement ranks first and cites Acme, so
    Acme's name has two writers. Acme's own agreement is still named (Borealis's is
    Borealis's), and the query searches the two, as one restricted to them would."""
    from sproutrag.search.retriever import Retriever

    question = "Which pays sooner, Borealis Freight or Acme Holdings?"
    db, encoder = _pool(tmp_path, acme=0.8, rival=0.9)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4, name_free_leaves=0)
    with r.view.one_view():
        chosen = r.choose_documents(qvec, None, k=4)
        found = r.searching.find(question, qvec, chosen, r._resolve()[0], True)
    assert chosen.index("rival") < chosen.index("acme")  # the citing report leads
    assert sorted(found.docs) == ["acme", "rival"]  # searched alone, the look-alikes not

    def hits(doc_ids=None):
        return [(h.doc_id, h.spans, round(h.score, 6))
                for h in r.search_vector(question, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    assert hits() == hits(["rival", "acme"])
    assert {d for d, _, _ in hits()} <= {"acme", "rival"}


def _namesake_pool(tmp_path, namesake: float, citing: float):
    """Acme's and Borealis's own agreements (each opens with its name), a court decision
    that opens with Acme's name too, a look-alike whose last line cites Acme, and one that
    writes no name; the payment sentences' cosines put Acme's agreement first among
    Acme's writers unless NAMESAKE or CITING is above 0.8."""
    from tests.helpers import line_pool

    rng = np.random.default_rng(11)
    docs = [_agreement("acme", "Supply agreement with Acme Holdings.", "Signed by both.",
                       0.8, 20, rng),
            _agreement("borealis", "Supply agreement with Borealis Freight.",
                       "Signed by both.", 0.85, 20, rng),
            _agreement("namesake", "Acme Holdings v. Party Nine, a court decision.",
                       "So ordered.", namesake, 20, rng),
            _agreement("citing", "Supply agreement with Party Ten.",
                       "Party Ten buys the same parts as Acme Holdings.", citing, 20, rng),
            _agreement("other", "Supply agreement with Party Eleven.", "Signed by both.",
                       0.95, 4, rng)]
    return line_pool(tmp_path / "db", docs, rng=rng)


COMPARISON = "Which pays sooner, Borealis Freight or Acme Holdings?"


def _namesake_search(tmp_path, citing: float):
    """(Retriever over `_namesake_pool`, the question's vector, the first stage's choice,
    what the search of COMPARISON reads)."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _namesake_pool(tmp_path, namesake=0.5, citing=citing)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5, name_free_leaves=0)
    with r.view.one_view():
        chosen = r.choose_documents(qvec, None, k=5)
        return r, qvec, chosen, r.searching.find(COMPARISON, qvec, chosen,
                                                 r._resolve()[0], True)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_name_two_documents_open_with_names_the_one_the_question_ranks_first(tmp_path,
                                                                                mode):
    """Rule 84: "Acme Holdings" opens Acme's agreement and a court decision alike. The
    first stage ranks the agreement first of the two, so it is Acme's; the comparison
    searches both subjects' agreements, as a query restricted to them would (before, the
    name named neither and Borealis's agreement was searched alone)."""
    r, qvec, chosen, found = _namesake_search(tmp_path, citing=0.3)
    assert chosen.index("acme") < chosen.index("namesake")
    assert sorted(found.docs) == ["acme", "borealis"] and not found.unnamed

    def hits(doc_ids=None):
        return [(h.doc_id, h.spans, round(h.score, 6))
                for h in r.search_vector(COMPARISON, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    assert hits() == hits([d for d in chosen if d in ("acme", "borealis")])
    assert {d for d, _, _ in hits()} == {"acme", "borealis"}


def test_a_name_that_names_no_document_keeps_the_others_from_being_searched_alone(
        tmp_path):
    """Rule 84's guard: a look-alike that cites Acme ranks first of Acme's writers and
    does not open with the name, so "Acme Holdings" names none of its three writers.
    Borealis's agreement is named, but it is not searched alone: the first stage's
    documents are, Acme's agreement among them (the weighted search of rules 11-30)."""
    _, _, chosen, found = _namesake_search(tmp_path, citing=0.9)
    assert chosen.index("citing") < chosen.index("acme")
    assert found.named == ("borealis",) and found.unnamed
    assert set(found.docs) == set(chosen) and "acme" in found.docs
