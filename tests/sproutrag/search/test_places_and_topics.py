"""Rules 94 and 95 (docs/whole-corpus.md): a place the question writes "City, State" is
not a caption's two parties (rule 88), and a word most searched documents write is their
topic, not a second subject's name (rule 93) (`name_free.own_writers`)."""

from __future__ import annotations

import numpy as np
import pytest

LINCOLN = ("How many municipal franchise contracts did the Lincoln, Nebraska waste company "
           "that started in 1958 hold at year end?")


def _stored(doc_id: str, title: str, opening: str, later: str, leaves: int = 20):
    """`helpers.opening_tree`: TITLE, OPENING, filler, LATER past the opening."""
    from tests.helpers import opening_tree

    return opening_tree(doc_id, title, opening, later, leaves)


@pytest.mark.parametrize("query, pairs", [
    (LINCOLN, {("lincoln", "nebraska"), ("nebraska", "lincoln")}),
    ("What did the Eau Claire, Wisconsin-based bank declare in dividends?",
     {("eau claire", "wisconsin"), ("wisconsin", "eau claire")}),
    ("Which grew faster, Apple, Microsoft and Google?", set()),  # a list of names
    ("Which grew faster: Apple, Microsoft, or Google?", set()),
    ("Compare Apple & Microsoft, Google and Intel.", set()),
    ("How much did the court award Brightwater Bakery against Keystone Fire?", set()),
])
def test_a_place_is_two_names_joined_by_a_comma_alone(query, pairs):
    from sproutrag.search.entities import place_pairs

    assert place_pairs(query) == pairs


def test_a_place_is_no_caption_s_two_parties():
    """The first stage ranks the waste company's report first; it writes "Lincoln" and
    "Nebraska" late. A case report from Lincoln, Nebraska opens with both: before rule 94,
    rule 88 kept "lincoln" to it as a caption's parties, and it was searched alone."""
    from sproutrag.search.entities import place_pairs
    from sproutrag.search.name_free import own_writers

    stored = {
        "waste": _stored("waste", "Prairie Hauling Company annual report.",
                         "The Company collects waste.",
                         "The Company is based in Lincoln, Nebraska."),
        "case": _stored("case", "Takotsubo cardiomyopathy after surgery: a case report.",
                        "A woman was admitted in Lincoln, Nebraska.", "She recovered."),
        "other": _stored("other", "Great Plains Refuse annual report.",
                         "The Company collects waste.", "It serves Omaha, Nebraska."),
        "fourth": _stored("fourth", "Coulee Disposal annual report.",
                          "The Company collects waste.", "It serves Fargo.")}
    order = ["waste", "other", "fourth", "case"]
    holders = {"lincoln": ["waste", "case"], "nebraska": ["waste", "case", "other"]}
    assert own_writers(holders, stored, order, 16, place_pairs(LINCOLN)) == holders
    # the same names written as two parties ("Lincoln and Nebraska") are a caption's
    assert own_writers(holders, stored, order, 16)["lincoln"] == ["case"]


def test_the_searched_documents_topic_does_not_hold_back_the_second_subject():
    """"Compare the ADAMTS13 inhibitor titers reported by Kestrel Valley University
    Hospital and Westbury Hill Hospital." A referring report writes Kestrel Valley and
    ranks ahead of Kestrel Valley's own; most reports write ADAMTS13, which names none,
    and before rule 95 it kept rule 93 from keeping Kestrel Valley to its single opener."""
    from sproutrag.search.name_free import own_writers

    def report(doc_id, hospital, later="Follow-up was uneventful."):
        return _stored(doc_id, f"Relapsing TTP: a case report from {hospital}.",
                       "A woman presented with purpura.", later)

    stored = {"westbury": report("westbury", "Westbury Hill Hospital"),
              "referring": report("referring", "Ashcombe General Hospital",
                                  "She was referred to Kestrel Valley University Hospital."),
              "kestrel": report("kestrel", "Kestrel Valley University Hospital"),
              "r4": report("r4", "Fourth Hospital"), "r5": report("r5", "Fifth Hospital"),
              "r6": report("r6", "Sixth Hospital")}
    order = ["westbury", "referring", "kestrel", "r4", "r5", "r6"]
    kestrel, westbury = "kestrel valley university hospital", "westbury hill hospital"
    topic = {"adamts13": ["westbury", "referring", "kestrel", "r4"],  # 4 of 6: topic
             kestrel: ["referring", "kestrel"], westbury: ["westbury"]}
    assert own_writers(topic, stored, order, 16)[kestrel] == ["kestrel"]
    # a word half of them write or fewer is another name, not kept to one: rule 93 waits
    name = {**topic, "adamts13": ["westbury", "referring", "kestrel"]}
    assert own_writers(name, stored, order, 16)[kestrel] == ["referring", "kestrel"]


def test_through_the_retriever_the_place_leaves_the_case_report_alone(tmp_path):
    """Before rule 94 the case report that opens with "Lincoln, Nebraska" was searched
    alone, and the waste company's report, ranked first, gave no unit."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import answering_document, line_pool

    rng = np.random.default_rng(23)

    def report(doc_id, title, opening, later, match):
        return answering_document(rng, doc_id, [title, opening,
                                                "The contracts are listed below."],
                                  later, match)

    docs = [report("waste", "Prairie Hauling Company annual report.",
                   "The Company collects waste.", "Its offices are in Lincoln, Nebraska.",
                   0.9),
            report("case", "Takotsubo cardiomyopathy: a case report.",
                   "A woman was admitted in Lincoln, Nebraska.", "She recovered.", 0.7),
            report("other", "Great Plains Refuse annual report.",
                   "The Company collects waste.", "It serves Omaha, Nebraska.", 0.85),
            report("fourth", "Coulee Disposal annual report.",
                   "The Company collects waste.", "It serves Fargo.", 0.8)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4, name_free_leaves=0)
    with r.view.one_view():
        chosen = r.choose_documents(qvec, None, k=4)
        found = r.searching.find(LINCOLN, qvec, chosen, r._resolve()[0], True)
    assert chosen[0] == "waste"
    assert found.named == () and sorted(found.docs) == sorted(chosen)  # no one alone
    hits = r.search_vector(LINCOLN, qvec, k=4, mode="tree")
    assert "waste" in {h.doc_id for h in hits}
