"""A question less its names and its openings' words, for the documents of 16 leaves or
more that open with them (`sproutrag.search.name_free`; docs/whole-corpus.md, rules 62, 68,
72 and 77)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.search.entities import question_entities
from sproutrag.search.name_free import (
    blend,
    name_free,
    opening,
    opening_vectors,
    opening_words,
    opens_with,
    titled_by,
)

QUERY = "What was Acme Robotics' gross margin in 2024?"


def test_the_question_less_its_names_drops_their_words_and_possessive():
    assert question_entities(QUERY) == ["acme robotics"]
    assert name_free(QUERY, ["acme robotics"]) == "What was gross margin in 2024?"
    assert name_free("Did Acme Robotics' CEO meet Borealis Energy's board?",
                     ["acme robotics", "borealis energy"]) == "Did CEO meet board?"
    assert name_free(QUERY, []) == QUERY  # nothing to take out


def test_a_long_document_opens_with_a_name_in_its_first_300_characters():
    head = ["Acme Robotics annual report 2024."]
    filler = [f"Section {i} covers other matters of the year." for i in range(40)]
    assert opening(["abc", "def"]) == "abc def"
    assert len(opening(filler)) == 300
    assert opens_with(head + filler[:15], 16, ["acme robotics"])  # rule 68's floor
    assert not opens_with(head + filler[:14], 15, ["acme robotics"])  # below the floor
    assert not opens_with(head + filler[:30], 31, ["acme robotics"], floor=32)  # rule 62's
    assert not opens_with(filler[:8] + head + filler, 49, ["acme robotics"])  # not at the top
    assert not opens_with(head + filler, 41, ["borealis energy"])  # another name
    assert not opens_with(head + filler, 41, ["acme robot"])  # words, not letters
    assert not opens_with(head + filler, 41, ["acme robotics"], floor=0)  # off
    nestle = ["Nestlé S.A. annual report 2024."] + filler
    assert opens_with(nestle, 41, ["nestle"]) and opens_with(nestle, 41, ["nestlé"])  # rule 63
    assert opens_with(head + filler, 41, ["ácme robotics"])


def test_the_blend_weighs_the_question_and_its_name_free_form_by_the_share():
    v = blend(np.array([3.0, 0.0]), np.array([0.0, 0.5]))
    assert np.allclose(v, [2 ** -0.5, 2 ** -0.5]) and v.dtype == np.float32  # half each
    w = blend(np.array([3.0, 0.0]), np.array([0.0, 0.5]), 0.75)
    assert np.allclose(w, np.array([1.0, 3.0]) / np.sqrt(10))


def test_a_part_titled_by_the_name_is_an_entry_about_it():
    bundle = ["Guitar World\nGuitar World is a monthly music magazine.", "It was founded in 1980.",
              "Science News (magazine)\nScience News is a magazine founded in 1921."]
    assert titled_by(bundle, ["science news"])  # a later part's title, its parenthesis dropped
    assert titled_by(bundle, ["guitar world", "1980"])
    assert not titled_by(bundle, ["music magazine"])  # written, but titles no part
    report = ["Kestrel Motion Systems, Inc. - Annual Report 2024\n\nBusiness Overview\n"
              "Kestrel Motion Systems, Inc. designs welding robots."]
    assert not titled_by(report, ["kestrel motion systems"])  # its title says more
    assert titled_by(["Nestlé\nNestlé is a food company."], ["nestle"])  # accents folded


def _stored(lines: list[str]):
    from sproutrag.storage.rows import StoredTree
    from sproutrag.trees.tree import build_tree

    n = len(lines)
    vectors = np.eye(n, 4, dtype=np.float32) + 0.01
    i = np.arange(n - 1)
    tree = build_tree(vectors, i, i + 1, np.ones(n - 1, np.float32))
    return StoredTree("d", tree, np.zeros((n, 2), np.int64), lines)


def test_the_name_free_question_is_embedded_only_for_a_document_it_gates_in():
    stored = _stored
    asked = []

    def embed(texts):
        asked.extend(texts)
        return np.ones((len(texts), 4), np.float32)

    qvec = np.array([1.0, 0, 0, 0], np.float32)
    long_doc = stored(["Acme Robotics annual report 2024."] + ["Other matters."] * 15)
    short_doc = stored(["Acme Robotics annual report 2024.", "Gross margin was 41%."])
    got = opening_vectors(QUERY, qvec, ["acme robotics"], {"long": long_doc,
                                                           "short": short_doc}, embed)
    # less the name and the words its opening writes ("2024" too: rule 72)
    assert list(got) == ["long"] and asked == ["What was gross margin in ?"]
    assert np.allclose(got["long"], blend(qvec, np.ones(4), 0.75))  # rule 77's share
    asked.clear()
    assert opening_vectors(QUERY, qvec, ["acme robotics"], {"short": short_doc}, embed) == {}
    assert opening_vectors("What was the margin?", qvec, [], {"long": long_doc}, embed) == {}
    assert asked == []  # nothing gated in: no second forward


def test_a_document_titled_by_the_name_keeps_the_even_blend():
    qvec = np.array([1.0, 0, 0, 0], np.float32)
    filler = ["Other matters of the year."] * 15
    docs = {"report": _stored(["Acme Robotics annual report 2024."] + filler),
            "entry": _stored(["Acme Robotics\nAcme Robotics is a maker of arms."] + filler)}
    got = opening_vectors(QUERY, qvec, ["acme robotics"], docs,
                          lambda texts: np.array([[0, 1.0, 0, 0]], np.float32))
    free = np.array([0, 1.0, 0, 0], np.float32)
    assert np.allclose(got["report"], blend(qvec, free, 0.75))  # rule 77's share
    assert np.allclose(got["entry"], blend(qvec, free, 0.5))  # a part titled by the name


def test_the_name_free_question_leaves_out_what_the_openings_describe():
    question = ("How many plasma exchange sessions were given to the 71-year-old man with "
                "Morvan syndrome compared with the 52-year-old man with anti-AMPA receptor "
                "encephalitis?")
    filler = ["Other matters."] * 15
    docs = {"morvan": _stored(["Morvan syndrome in a 71-year-old man."] + filler),
            "ampa": _stored(["Anti-AMPA receptor encephalitis in a 52-year-old man."] + filler),
            "other": _stored(["Plasma exchange sessions in a series."] + filler)}
    assert opening_words(docs, ["morvan", "ampa"]) == [
        "52", "71", "ampa", "anti", "encephalitis", "man", "matters", "morvan", "old",
        "other", "receptor", "syndrome", "year"]  # lower case, no stopword ("in", "a")
    asked = []

    def embed(texts):
        asked.extend(texts)
        return np.ones((len(texts), 4), np.float32)

    got = opening_vectors(question, np.ones(4, np.float32), ["morvan syndrome", "ampa"],
                          docs, embed)
    assert sorted(got) == ["ampa", "morvan"]  # "other" opens with no entity: not gated in
    words = set(asked[0].lower().replace("-", " ").split())
    assert {"plasma", "exchange", "sessions", "compared"} <= words  # what is asked is kept
    assert not words & {"morvan", "71", "year", "old", "man", "receptor", "encephalitis"}
    asked.clear()  # a question that is all description: no word left, no blend
    assert opening_vectors("Morvan syndrome, 71-year-old man?", np.ones(4, np.float32),
                           ["morvan syndrome"], docs, embed) == {} and asked == []


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_report_that_opens_with_the_questions_name_gives_its_answer_first(tmp_path, mode):
    """The helper's finding (stop 76): the opening writes the name and outranks the answer
    for the question's own vector; the name-free blend puts the answer first in a report of
    32 leaves, within it and across the corpus, while a short document that writes the
    name in its evidence keeps the question's vector (and nothing is embedded for it)."""
    from sproutrag.search.retriever import QueryError, Retriever
    from tests.helpers import TOY_DIM, line_document, line_pool

    rng = np.random.default_rng(3)
    e0, e1 = np.eye(TOY_DIM)[0], np.eye(TOY_DIM)[1]

    def document(doc_id: str, fillers: int):
        filler = rng.normal(size=(fillers, TOY_DIM))
        filler[:, :2] = 0  # orthogonal to the name (axis 0) and the answer (axis 1)
        filler /= np.linalg.norm(filler, axis=1, keepdims=True)
        lines = (["Acme Robotics annual report 2024."]
                 + [f"Section {i} covers other matters." for i in range(fillers)]
                 + ["Gross margin was 41 percent."])
        return line_document(doc_id, lines, np.vstack([e0, filler, e1]))

    db, _ = line_pool(tmp_path / "db", [document("report", 30), document("note", 2),
                                        document("mid", 18)])
    asked: list[str] = []
    qvec = (0.8 * e0 + 0.6 * e1).astype(np.float32)  # nearer the opening than the answer

    def encode_queries(texts):
        asked.extend(texts)  # the question itself, or its name-free form (on the answer)
        return np.vstack([qvec if t == QUERY else e1 for t in texts]).astype(np.float32)

    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.params import SearchParams
    from tests.helpers import toy_encoder

    encoder = toy_encoder(TrainedWeights(np.zeros((1, 1), np.float32),
                                         SearchParams(threshold=-1.0)),
                          encode_queries=encode_queries)

    def first(doc_ids, **options) -> list[tuple[str, str]]:
        r = Retriever(db, encoder=encoder, **options)
        hits = r.search_vector(QUERY, qvec, k=1, doc_ids=doc_ids, mode=mode)
        return [(h.doc_id, h.text) for h in hits]

    answer, opening_line = "Gross margin was 41 percent.", "Acme Robotics annual report 2024."
    assert first(["report"]) == [("report", answer)]
    assert asked == ["What was gross margin in ?"]  # its opening wrote "2024" (rule 72)
    assert first(["report"], name_free_leaves=0) == [("report", opening_line)]  # off
    asked.clear()
    assert first(["note"]) == [("note", opening_line)]  # 4 leaves: the question's vector
    assert asked == []
    assert first(["report"], name_free_leaves=40) == [("report", opening_line)]  # floor
    assert first(["mid"]) == [("mid", answer)]  # 20 leaves: blended (rule 68)
    assert first(["mid"], name_free_leaves=32) == [("mid", opening_line)]  # not by rule 62
    hits = first(None, n_docs=2, first_stage="vector")  # corpus-wide
    assert [t for _, t in hits] == [answer] and hits[0][0] in ("report", "mid")
    for leaves, unit in ((32, answer), (0, opening_line)):  # a context ranks the same way
        ctx = Retriever(db, encoder=encoder, name_free_leaves=leaves).context(
            QUERY, budget_chars=200, k=1, doc_ids=["report"], mode=mode)
        assert [s.text for s in ctx.spans] == [unit]
    assert Retriever(db, encoder=encoder).name_free_leaves == 16  # the default (rule 68)
    with pytest.raises(QueryError, match="name_free_leaves"):
        Retriever(db, encoder=encoder, name_free_leaves=-1)
