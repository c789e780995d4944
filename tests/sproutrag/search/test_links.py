"""Documents named by the question or by the leading document (`sproutrag.search.links`):
names, links, the points they add, and a corpus-wide search through the Retriever where the
second document of a question is found by its name only (no model)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.search.links import Links, document_name, linked_documents, words, written_in
from sproutrag.search.node_scores import NodeScores


def test_a_documents_name_is_its_title_or_its_heading_like_first_line():
    assert document_name("Tim Brown (designer)\nTim Brown is a designer.") == "tim brown"
    assert document_name("  Demon Dice\nDemon Dice is a game.") == "demon dice"
    assert document_name("anything.", title="Q3 Report: Acme") == "q3 report acme"
    assert document_name("The supplier delivers within 30 days.\nMore.") is None  # a sentence
    assert document_name("Payment terms:\nnet 30") is None
    assert document_name("x" * 101 + "\nbody") is None  # too long for a heading
    assert document_name("Us\nbody") is None  # too short
    assert document_name("Of the 1990\nbody") is None  # stopwords and digits only
    assert document_name("") is None
    assert document_name("Big Hero 6\nbody") == "big hero 6"


def test_names_are_found_as_whole_words_in_the_query_or_the_leading_text():
    names = {"lead": "harbor labs", "ship": "marlow shipping", "near": "marlow",
             "dup1": "non disclosure agreement", "dup2": "non disclosure agreement",
             "none": None, "other": "river survey"}
    text = ("Harbor Labs ships its goods with Marlow-Shipping under a "
            "Non-Disclosure Agreement. Marlowe owns it.")
    assert set(linked_documents(names, "lead", text, "Who owns it?")) == {"ship", "near"}
    # the query names one; a leading document never links to itself; a name two
    # searched documents share names neither
    assert linked_documents(names, "ship", "nothing here",
                            "What did the River Survey and Harbor Labs find?") == [
        "lead", "other"]
    assert linked_documents(names, "lead", "the river surveys", "") == []


@pytest.mark.parametrize("text", [
    "Harbor Labs ships with Marlow-Shipping.", "marlow  shipping", "MARLOW\nSHIPPING co",
    "marlowshipping", "xmarlow shipping", "marlow shippings", "marlow_shipping", "marlow",
    "Über Marlow (Shipping) — 1990s", "", "shipping marlow"])
def test_written_in_is_whole_words_of_the_normalised_text(text):
    for name in ("marlow shipping", "marlow", "1990s", "über marlow shipping"):
        assert written_in(name, text.lower()) == (f" {name} " in words(text)), (name, text)


def test_links_add_their_weight_to_every_node_of_a_linked_document():
    names = {"a": "harbor labs", "b": "marlow shipping", "c": "north works"}
    texts = {"a": ["Harbor Labs ships with Marlow Shipping.", "It works with North Works."],
             "b": ["vessels", "crews"], "c": ["harbor"]}
    asked = []

    def text_of(d, u):
        asked.append((d, u))
        return texts[d][u]

    scores = {"a": NodeScores(np.array([0.9, 0.2, 0.5], np.float32), np.array([2.0, -1.0, 0.5])),
              "b": NodeScores(np.array([0.1, 0.0, 0.05], np.float32), np.array([-1.5, -2, -1.7])),
              "c": NodeScores(np.array([0.5], np.float32), np.array([0.3]))}
    n_leaves = {"a": 2, "b": 2, "c": 1}
    out = Links(names, text_of, "who owns it", weight=1.0, lead=0.0).apply(scores, n_leaves)
    assert asked == [("a", 0)]  # only the best leaf's text is read
    np.testing.assert_array_equal(out["b"].rank, scores["b"].rank + 1.0)  # internal node too
    np.testing.assert_array_equal(out["b"].cosine, scores["b"].cosine)
    assert out["a"] is scores["a"] and out["c"] is scores["c"]
    # the leader is the best LEAF's document (node 2 of a is internal)
    assert Links(names, text_of, "", 1.0).boosts({"a": np.array([0.1]), "c": np.array([0.4])}
                                                  ) == {}
    assert Links(names, text_of, "", 0.0).boosts({d: s.rank for d, s in scores.items()}) == {}
    assert Links(names, text_of, "", 2.0).boosts({}) == {}
    asked.clear()
    nameless = Links({"a": None, "b": None}, text_of, "harbor labs", 1.0)
    assert nameless.boosts({"a": np.array([1.0]), "b": np.array([0.0])}) == {}
    assert asked == []  # no searched document has a name: the leader's text is not read
    # the leader gains LEAD when it links to a searched document, nothing when it links none
    ranks = {d: s.rank[: n_leaves[d]] for d, s in scores.items()}
    assert Links(names, text_of, "", 3.0, 2.0).boosts(ranks) == {"b": 3.0, "a": 2.0}
    assert Links(names, text_of, "", 3.0, 0.0).boosts(ranks) == {"b": 3.0}
    alone = {"a": "harbor labs", "c": "north works"}
    assert Links(alone, text_of, "", 3.0, 2.0).boosts(
        {"a": ranks["a"], "c": ranks["c"]}) == {}
    # names are looked for in the best leaf, not in the leader's other leaves (rule 18):
    # "North Works", written in a's second leaf, links only when that leaf is the best
    assert Links(names, text_of, "", 3.0, 2.0).boosts(
        {"a": np.array([-1.0, 2.0]), "c": ranks["c"]}) == {"c": 3.0, "a": 2.0}
    assert Links(names, text_of, "", 3.0, 2.0).boosts(
        {"a": np.array([2.0, -1.0]), "c": ranks["c"]}) == {}


# -- through the Retriever ----------------------------------------------------------------


def _bridge_pool(db, naming_leads: bool = True):
    """A pool where the question matches Harbor Labs; its second document (Marlow
    Shipping, named only in Harbor Labs' text) matches the question less than five
    look-alikes of Harbor Labs do. NAMING_LEADS: Harbor Labs' best leaf is the one that
    names Marlow Shipping (else its heading line is)."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(7)
    heading, naming = leaf_vectors(rng, 0.9, 1, TOY_DIM), leaf_vectors(rng, 0.97, 1, TOY_DIM)
    if not naming_leads:
        heading, naming = naming, heading
    docs = [line_document("harbor", ["Harbor Labs", "Harbor Labs ships with Marlow Shipping."],
                          np.vstack([heading, naming])),
            line_document("marlow", ["Marlow Shipping", "It owns three vessels."],
                          leaf_vectors(rng, 0.2, 2, TOY_DIM))]
    return line_pool(db, docs, lookalikes=5, rng=rng)


@pytest.fixture
def bridge_pool(tmp_path):
    return _bridge_pool(tmp_path / "db")


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_second_document_is_found_by_its_name(bridge_pool, mode):
    from sproutrag.search.retriever import Retriever

    db, encoder = bridge_pool
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    hits = {}
    for weight in (0.0, 1.0):
        r = Retriever(db, encoder=encoder, first_stage="vector", link_weight=weight)
        hits[weight] = r.search_vector("Who owns the ships?", qvec, k=4, mode=mode)
    assert hits[0.0][0].doc_id == "harbor"
    assert "marlow" not in {h.doc_id for h in hits[0.0]}  # look-alikes crowd it out
    assert {h.doc_id for h in hits[1.0]} == {"harbor", "marlow"}
    # a query within given documents follows no name
    r = Retriever(db, encoder=encoder, first_stage="vector", link_weight=1.0)
    within = r.search_vector("Who owns the ships?", qvec, k=4, mode=mode,
                             doc_ids=["harbor", "marlow", "look0", "look1"])
    assert "marlow" not in {h.doc_id for h in within}



@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_names_the_leader_writes_outside_its_best_leaf_link_nothing(tmp_path, mode):
    """Rule 18: a long leader (a report, a contract) writes the names of many documents of
    its corpus; only the names its best leaf (or the question) writes are followed."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _bridge_pool(tmp_path / "db", naming_leads=False)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", link_weight=3.0)
    assert r.search_vector("Who owns the ships?", qvec, k=4, mode=mode)[0].doc_id == "harbor"
    assert "marlow" not in {h.doc_id for h in r.search_vector("Who owns the ships?", qvec,
                                                               k=4, mode=mode)}
    # the question naming it links it
    named = r.search_vector("Who owns Marlow Shipping?", qvec, k=4, mode=mode)
    assert "marlow" in {h.doc_id for h in named}


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_a_context_follows_the_same_names(bridge_pool, weight):
    from types import SimpleNamespace

    from sproutrag.search.retriever import Retriever

    db, encoder = bridge_pool
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    encoder = SimpleNamespace(**vars(encoder), encode_texts=lambda texts: np.stack(
        [qvec] * len(texts)))
    r = Retriever(db, encoder=encoder, first_stage="vector", link_weight=weight,
                  leader_weight=0.0)
    ctx = r.context("Who owns the ships?", budget_chars=500, k=4, selection="leaves")
    assert ("marlow" in {s.doc_id for s in ctx.spans}) == (weight > 0)


def test_the_retriever_checks_link_weight(bridge_pool):
    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = bridge_pool
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(QueryError, match="link_weight"):
            Retriever(db, encoder=encoder, link_weight=bad)
    assert Retriever(db, encoder=encoder, link_weight=0).link_weight == 0.0
    for bad in (-1.0, float("nan")):
        with pytest.raises(QueryError, match="leader_weight"):
            Retriever(db, encoder=encoder, leader_weight=bad)
    assert Retriever(db, encoder=encoder).leader_weight == 2.0
