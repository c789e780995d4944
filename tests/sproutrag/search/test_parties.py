"""Rule 88 (docs/whole-corpus.md): a name that two searched documents write names the one
whose opening also writes another of the question's names, whatever the first stage's
order: a case caption names both parties, and an opinion that cites the case writes them
later (`name_free.own_writers`)."""

from __future__ import annotations

import numpy as np
import pytest

CAPTION = "Brightwater Bakery Supply v. Keystone Mutual Fire."


def _stored(doc_id: str, title: str, opening: str, later: str, leaves: int = 20):
    """`helpers.opening_tree`: TITLE, OPENING, filler, LATER past the opening."""
    from tests.helpers import opening_tree

    return opening_tree(doc_id, title, opening, later, leaves)


@pytest.fixture
def opinions():
    return {
        "cited": _stored("cited", CAPTION, "The insurer appeals.", "So ordered."),
        "citing": _stored("citing", "Castellan Hotel v. Northgate.", "The hotel appeals.",
                          "We follow Brightwater Bakery Supply v. Keystone Mutual Fire."),
        "other1": _stored("other1", "Party One v. Party Two.", "An appeal.", "Affirmed."),
        "other2": _stored("other2", "Party Three v. Party Four.", "An appeal.", "Affirmed."),
    }


def test_both_parties_name_the_caption_s_opinion_though_a_citing_one_leads(opinions):
    from sproutrag.search.name_free import own_writers

    order = ["citing", "cited", "other1", "other2"]  # the citing opinion ranks first
    parties = {"brightwater bakery supply": ["citing", "cited"],
               "keystone mutual fire": ["citing", "cited"]}
    assert own_writers(parties, opinions, order, 16) == {
        "brightwater bakery supply": ["cited"], "keystone mutual fire": ["cited"]}
    # one party alone: rule 70's lead decides, and the citing opinion leads
    one = {"brightwater bakery supply": ["citing", "cited"]}
    assert own_writers(one, opinions, order, 16) == one
    # a name that is part of the other is no second party
    part = {"brightwater bakery supply": ["citing", "cited"], "brightwater": ["citing",
                                                                             "cited"]}
    assert own_writers(part, opinions, order, 16) == part
    assert own_writers(parties, opinions, order, 21) == parties  # below the floor
    assert own_writers(parties, opinions, order, 0) == parties  # off


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_question_that_names_both_parties_searches_the_caption_s_opinion(tmp_path, mode):
    """Through the Retriever: the citing opinion ranks first and writes both parties, so
    before rule 88 neither party named a document and the citing opinion's unit ranked
    first; now the caption's opinion is searched alone, as a query restricted to it."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import answering_document, line_pool

    rng = np.random.default_rng(19)

    def opinion(doc_id, title, later, match):
        return answering_document(rng, doc_id, [title, "The insurer appeals the award.",
                                                "The court awarded damages."], later, match)

    docs = [opinion("cited", CAPTION, "So ordered.", 0.8),
            opinion("citing", "Castellan Hotel v. Northgate.",
                    "We follow Brightwater Bakery Supply v. Keystone Mutual Fire.", 0.9),
            opinion("other1", "Party One v. Party Two.", "Affirmed.", 0.85),
            opinion("other2", "Party Three v. Party Four.", "Affirmed.", 0.7)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    question = ("How much did the court award Brightwater Bakery Supply against Keystone "
                "Mutual Fire?")
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4, name_free_leaves=0)
    with r.view.one_view():
        chosen = r.choose_documents(qvec, None, k=4)
        found = r.searching.find(question, qvec, chosen, r._resolve()[0], True)
    assert chosen.index("citing") < chosen.index("cited")
    assert found.docs == ["cited"]  # searched alone (rule 65: 20 units, its opening)

    def hits(doc_ids=None):
        return [(h.doc_id, h.spans, round(h.score, 6))
                for h in r.search_vector(question, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    assert hits() == hits(["cited"])


def test_a_caption_only_a_citing_opinion_writes_whole_names_the_case_s_own(opinions):
    """Rule 91: the case's own opinion titles the parties in full, so only an opinion that
    cites it writes the question's caption as it is; both parties name the case's own
    opinion, and so does the caption."""
    from sproutrag.search.name_free import own_writers

    stored = {**opinions,
              "own": _stored("own", "Harrowgate Brewing Company v. Tallbrook Cider Works, "
                                    "LLC.", "The brewer appeals.", "So ordered."),
              "citing": _stored("citing", "Loyal Paw v. Brannigan.", "The maker appeals.",
                                "See Harrowgate Brewing v. Tallbrook Cider Works.")}
    caption = "harrowgate brewing v tallbrook cider works"
    first, second = "harrowgate brewing", "tallbrook cider works"
    order = ["citing", "own", "other1", "other2"]  # the citing opinion ranks first
    holders = {caption: ["citing"], first: ["citing", "own"], second: ["citing", "own"]}
    assert own_writers(holders, stored, order, 16) == {
        caption: ["own"], first: ["own"], second: ["own"]}
    # one party in the question: the caption's writer stays its own
    one = {caption: ["citing"], first: ["citing", "own"]}
    assert own_writers(one, stored, order, 16)[caption] == ["citing"]
    # a party and a part of it are not two parties
    part = {caption: ["citing"], first: ["citing", "own"], "harrowgate": ["citing", "own"]}
    assert own_writers(part, stored, order, 16)[caption] == ["citing"]
    # a writer that opens with the caption is the caption's own
    titled = {**stored, "citing": _stored("citing", "Harrowgate Brewing v. Tallbrook Cider "
                                                    "Works.", "On remand.", "Affirmed.")}
    assert own_writers(holders, titled, order, 16)[caption] == ["citing"]
    assert own_writers(holders, stored, order, 21) == holders  # below the floor


def test_the_second_of_two_named_subjects_names_its_own_report():
    """Rule 93: "Which runs more of its fleet on natural gas, Copper Mesa Sanitation or
    Harrowgate Waste Systems?" A rival's report that cites Harrowgate ranks ahead of
    Harrowgate's own; Copper Mesa is settled, so Harrowgate's single opener is its own."""
    from sproutrag.search.name_free import own_writers

    stored = {
        "copper": _stored("copper", "Copper Mesa Sanitation annual report.",
                          "The Company collects waste.", "Fleet data follow."),
        "rival": _stored("rival", "Pinecrest Disposal annual report.",
                         "The Company collects waste.",
                         "We compete with Harrowgate Waste Systems."),
        "harrowgate": _stored("harrowgate", "Harrowgate Waste Systems annual report.",
                              "The Company collects waste.", "Fleet data follow."),
        "other": _stored("other", "Quillon Recycling annual report.",
                         "The Company recycles.", "Fleet data follow.")}
    order = ["copper", "rival", "harrowgate", "other"]  # the citing report ranks second
    copper, harrowgate = "copper mesa sanitation", "harrowgate waste systems"
    holders = {copper: ["copper"], harrowgate: ["rival", "harrowgate"]}
    assert own_writers(holders, stored, order, 16) == {copper: ["copper"],
                                                       harrowgate: ["harrowgate"]}
    alone = {harrowgate: ["rival", "harrowgate"]}  # one subject: rule 70's lead decides
    assert own_writers(alone, stored, order, 16) == alone
    unsettled = {copper: [], harrowgate: ["rival", "harrowgate"]}  # the other names none
    assert own_writers(unsettled, stored, order, 16) == unsettled
    same = {"pinecrest disposal": ["harrowgate"], harrowgate: ["rival", "harrowgate"]}
    assert own_writers(same, stored, order, 16) == same  # settled on the opener itself
    assert own_writers(holders, stored, order, 21) == holders  # below the floor
