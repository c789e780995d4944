"""Documents the question names in their text (`sproutrag.search.mentions`;
docs/whole-corpus.md, rule 23): the documents a question's entities name, and a
corpus-wide search over look-alike documents that keeps to the named ones (the entities'
forms: test_entities.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.search import mentions
from sproutrag.search.entities import question_entities
from sproutrag.search.mentions import (
    dominant_writers,
    entity_holders,
    mentioned_documents,
    named_by,
)


def test_a_name_written_without_its_accents_names_the_document_that_writes_them():
    """Rule 53: "Nestle" in a question names the report that writes "Nestlé", and the
    other way round; the word texts and the entities are folded alike."""
    from sproutrag.names import mention_words

    texts = {"nestle": mention_words("Nestlé S.A. annual report. Water sales grew."),
             "danone": mention_words("Danone annual report. Water sales fell.")}
    for query in ("What did Nestle say about water?", "What did Nestlé say about water?"):
        assert mentioned_documents(question_entities(query), texts) == ["nestle"], query
    texts = {"nestle": mention_words("Nestlé S.A. annual report. Nestlé water sales grew."),
             "danone": mention_words("Danone annual report. Its water sales fell, Nestle's "
                                     "grew, and the rest of the market was flat.")}
    holders = entity_holders(["nestlé"], texts)  # two holders, one spelt otherwise
    assert holders == {"nestlé": ["nestle", "danone"]}
    assert dominant_writers(holders, texts, 2.0) == {"nestlé": "nestle"}  # counted alike


def test_the_dominant_writer_of_a_shared_entity_names_it_per_word_of_its_text():
    """Rule 35: Pfizer's report writes "Pfizer" on every page, BioNTech's cites it once; a
    long report that writes a generic entity as often per word as a short one is not
    named for being long."""
    from sproutrag.names import words

    texts = {d: words(t) for d, t in {
        "pfizer": "Pfizer revenue grew. Pfizer sells vaccines. Pfizer pays dividends. "
                  "Confidential Information is kept.",
        "biontech": "BioNTech works with Pfizer. BioNTech revenue grew. BioNTech sells "
                    "vaccines through partners in many countries of the world today.",
        "long": "Revenue grew. Sales rose. Costs fell. Confidential Information is kept. "
                * 10}.items()}
    holders = entity_holders(["pfizer", "confidential information"], texts)
    assert holders == {"pfizer": ["pfizer", "biontech"],
                       "confidential information": ["pfizer", "long"]}
    assert dominant_writers(holders, texts, 3.0) == {"pfizer": "pfizer"}
    assert dominant_writers(holders, texts, 5.0) == {}  # Pfizer's rate is 4.2x BioNTech's
    assert named_by(holders) == []  # rule 23 alone names neither
    assert named_by(holders, dominant_writers(holders, texts, 3.0)) == ["pfizer"]


def test_a_document_is_mentioned_when_it_alone_writes_an_entity():
    from sproutrag.names import words

    texts = {d: words(t) for d, t in {
        "a": "This Agreement is made with Canadian Pacific Railway Company.",
        "b": "The Receiving Party and the Disclosing Party agree.",
        "c": "The Receiving Party shall return it. Acme-Holdings Ltd"}.items()}
    assert mentioned_documents(["canadian pacific railway"], texts) == ["a"]
    assert mentioned_documents(["receiving party"], texts) == []  # two write it
    assert entity_holders(["receiving party", "pacific rail"], texts) == {
        "receiving party": ["b", "c"], "pacific rail": []}
    # whole words, whatever separates them; each document once, in the entities' order
    assert mentioned_documents(["acme holdings", "canadian pacific railway", "acme holdings"],
                               texts) == ["c", "a"]
    assert mentioned_documents(["pacific rail"], texts) == []
    assert mentioned_documents([], texts) == []


def _pool(tmp_path, rng):
    """Acme's and Zenith's agreements and three look-alikes whose payment sentence matches
    the question's vector better than theirs. "Beta Corp" is written by two look-alikes."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    def agreement(doc_id: str, party: str, payment: float):
        lines = [f"Supply agreement with {party}.", "Payment is due in thirty days.",
                 "Either party may end it on notice.", "Notices are given in writing."]
        vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                             leaf_vectors(rng, payment, 1, TOY_DIM),
                             leaf_vectors(rng, payment - 0.1, 2, TOY_DIM)])
        return line_document(doc_id, lines, vectors)

    docs = [agreement("acme", "Acme Holdings", 0.6), agreement("zenith", "Zenith Mills", 0.6)]
    docs += [agreement(f"other{i}", "Beta Corp" if i < 2 else "Gamma Trading", 0.95)
             for i in range(3)]
    return line_pool(tmp_path / "db", docs, rng=rng)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_dominant_writer_of_a_cited_name_is_searched_as_named(tmp_path, mode):
    """Rule 35 (off by default): a look-alike cites "Acme Holdings" once, so the name has
    two holders and names neither; with dominant_ratio the agreement that writes it in
    every line is named and keeps the question's units."""
    from sproutrag.search.retriever import QueryError, Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(7)

    def agreement(doc_id: str, lines: list[str], payment: float):
        vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                             leaf_vectors(rng, payment, 1, TOY_DIM),
                             leaf_vectors(rng, payment - 0.1, 2, TOY_DIM)])
        return line_document(doc_id, lines, vectors)

    docs = [agreement("acme", ["Supply agreement with Acme Holdings.",
                               "Acme Holdings pays in thirty days.",
                               "Acme Holdings may end it on notice.",
                               "Notices to Acme Holdings are in writing."], 0.6)]
    docs += [agreement(f"other{i}", [f"Supply agreement with Party {i}.",
                                     "Payment is due in thirty days.",
                                     "Either party may end it on notice.",
                                     "Copies go to Acme Holdings." if i == 0
                                     else "Notices are given in writing."], 0.95)
             for i in range(3)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "When is payment due under the agreement with Acme Holdings?"
    found = {}
    for ratio in (0.0, 3.0):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4,
                      dominant_ratio=ratio)
        assert set(r.choose_documents(qvec, None, k=3)) == {"acme", "other0", "other1",
                                                             "other2"}
        found[ratio] = {h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode)}
    assert found[0.0] - {"acme"}  # two holders: nothing named, the look-alikes crowd in
    assert found[3.0] == {"acme"}
    assert Retriever(db, encoder=encoder).dominant_ratio == 0.0  # off by default
    with pytest.raises(QueryError, match="dominant_ratio"):
        Retriever(db, encoder=encoder, dominant_ratio=-1)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_corpus_wide_search_keeps_to_the_documents_the_question_names(tmp_path, mode):
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    one = "When is payment due under the agreement with Acme Holdings?"
    two = "When is payment due to Acme Holdings and to Zenith Mills?"
    found = {}
    for weight in (0.0, 3.0):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5,
                      mention_weight=weight)
        assert set(r.choose_documents(qvec, None, k=3)) >= {"acme", "zenith"}
        for query in (one, two):
            found[weight, query] = [h.doc_id for h in r.search_vector(query, qvec, k=3,
                                                                      mode=mode)]
    # without the mention the look-alikes' payment sentences crowd the named documents out
    assert set(found[0.0, one]) - {"acme"} and set(found[0.0, two]) - {"acme", "zenith"}
    assert set(found[3.0, one]) == {"acme"}
    assert set(found[3.0, two]) == {"acme", "zenith"}  # both named documents keep room
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5)
    assert r.mention_weight == 3.0  # the default (rule 23)
    # an entity two searched documents write names neither; within doc_ids nothing changes
    beta = [h.doc_id for h in r.search_vector("When is payment due to Beta Corp?", qvec,
                                              k=3, mode=mode)]
    assert beta == [h.doc_id for h in Retriever(
        db, encoder=encoder, first_stage="vector", n_docs=5, mention_weight=0.0
    ).search_vector("When is payment due to Beta Corp?", qvec, k=3, mode=mode)]
    within = {w: [h.doc_id for h in Retriever(db, encoder=encoder, mention_weight=w)
                  .search_vector(one, qvec, k=3, mode=mode, doc_ids=["acme", "other0"])]
              for w in (0.0, 3.0)}
    assert within[0.0] == within[3.0] and "other0" in within[0.0]


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_contract_named_by_its_title_keeps_the_question_s_units(tmp_path, mode):
    """Rule 49: no agreement writes "Acme Holdings Supply Agreement" (each writes "Supply
    agreement with" its party), so the title named none and the look-alikes' payment
    sentences crowded Acme's out; the name before the title names Acme's agreement."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "When is payment due under the Acme Holdings Supply Agreement?"
    assert question_entities(query) == ["acme holdings supply agreement", "acme holdings"]
    found = {w: {h.doc_id for h in Retriever(db, encoder=encoder, first_stage="vector",
                                             n_docs=5, mention_weight=w)
                 .search_vector(query, qvec, k=3, mode=mode)}
             for w in (0.0, 3.0)}
    assert found[0.0] - {"acme"}
    assert found[3.0] == {"acme"}


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_case_report_named_by_its_patient_s_age_keeps_the_question_s_units(tmp_path,
                                                                             mode):
    """Rule 51: case reports look alike and name no one; the one report of a 62-year-old
    is named by the age, and the look-alikes' dosage sentences no longer crowd it out.
    Two reports that write one age name neither."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(11)

    def report(doc_id: str, age: int, dosage: float):
        lines = [f"A {age}-year-old woman presented with fatigue.",
                 "Metformin was given at 500 mg twice daily.",
                 "Her glucose fell over two weeks.", "She was discharged home."]
        vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                             leaf_vectors(rng, dosage, 1, TOY_DIM),
                             leaf_vectors(rng, dosage - 0.1, 2, TOY_DIM)])
        return line_document(doc_id, lines, vectors)

    docs = [report("r62", 62, 0.6)] + [report(f"r{i}", age, 0.95)
                                       for i, age in enumerate((45, 71, 71))]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    found = {}
    for age in (62, 71):
        query = f"What dosage of metformin was given to the {age}-year-old patient?"
        for w in (0.0, 3.0):
            found[age, w] = {h.doc_id for h in Retriever(
                db, encoder=encoder, first_stage="vector", n_docs=4, mention_weight=w
            ).search_vector(query, qvec, k=3, mode=mode)}
    assert found[62, 0.0] - {"r62"}
    assert found[62, 3.0] == {"r62"}
    assert found[71, 3.0] == found[71, 0.0]  # two reports write 71: neither is named


def test_the_retriever_and_the_settings_check_mention_weight(tmp_path):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    for bad in (-1, float("nan"), "x"):
        with pytest.raises(QueryError, match="mention_weight"):
            Retriever(db, encoder=encoder, mention_weight=bad)
    assert SearchSettings().retriever_options()["mention_weight"] == 3.0
    with pytest.raises(ValidationError, match="mention_weight"):
        SearchSettings(mention_weight=-1)


def test_the_first_stage_ranks_documents_by_the_question_s_entities_too(tmp_path):
    """Quokka Holdings' agreement is the words' best document but the vectors' last; four
    look-alikes rank well in both, so the two rankings fused leave it out. The entities'
    own full-text ranking (rule 25) is fused as a third and brings it in."""
    from sproutrag.search.rankings import fuse_rankings
    from sproutrag.search.retriever import QueryError, Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(7)
    docs = [line_document("named", ["Supply terms of Quokka Holdings.", "Goods ship on request."],
                          leaf_vectors(rng, 0.1, 2, TOY_DIM)),
            line_document("near", ["Shipping notes.", "Crates and pallets."],
                          leaf_vectors(rng, 0.9, 2, TOY_DIM))]
    docs += [line_document(f"w{i}", [f"Payment is due under the agreement with Holdings {i}.",
                                     "When payment is due, the agreement says so."],
                           leaf_vectors(rng, 0.5, 2, TOY_DIM)) for i in range(4)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    query = "When is payment due under the agreement with Quokka Holdings?"
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    chosen = {}
    for entities in (False, True):
        r = Retriever(db, encoder=encoder, n_docs=2, entity_ranking=entities)
        assert r.store.ensure_text_index() or r.has_text_index()
        assert r.entity_ranking is entities
        with r.view.one_view():
            first = r.first
            rankings = [first.ranked_by_vector(qvec, 100), first.ranked_by_text(query, 100)]
            if entities:
                rankings.append(first.ranked_by_text("quokka holdings", 100))
            chosen[entities] = r.choose_documents(qvec, None, k=1, query=query)
            assert chosen[entities] == fuse_rankings(rankings)[:2]
            # a question without entities is ranked as before
            plain = "when is payment due under the agreement?"
            assert r.choose_documents(qvec, None, k=1, query=plain) == fuse_rankings(
                [first.ranked_by_vector(qvec, 100), first.ranked_by_text(plain, 100)])[:2]
    assert "named" not in chosen[False] and "named" in chosen[True]  # (ties by row id)
    with pytest.raises(QueryError, match="entity_ranking"):
        Retriever(db, encoder=encoder, entity_ranking="yes")


def test_word_texts_are_read_once_and_only_for_questions_with_entities(tmp_path,
                                                                      monkeypatch):
    import sproutrag.search.searched as searched
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5)
    passes = []  # the entities' holders: once per read, for links, anchor and lookup
    monkeypatch.setattr(searched, "entity_holders",
                        lambda e, t: passes.append(sorted(t)) or mentions.entity_holders(e, t))

    def word_texts_cached() -> set[str]:
        return {key[1] for key in r.documents.cache.keys() if key[0] == "words"}

    r.search_vector("when is payment due?", qvec, k=3)  # no entity: no word texts
    assert word_texts_cached() == set()
    assert passes == []
    hits = r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert word_texts_cached() == {"acme", "zenith", "other0", "other1", "other2"}
    assert passes == [["acme", "other0", "other1", "other2", "zenith"]]
    assert hits[0].doc_id == "acme"  # the one pass still names it
    tree = r.documents.tree_ids(["acme"])["acme"]
    assert r.documents.word_text("acme", tree) == (
        " supply agreement with acme holdings payment is due in thirty days either party"
        " may end it on notice notices are given in writing ")
    # with the dominant writers on too, a read builds the word texts once, not twice
    reads, builds = [], []
    read, build = searched.SearchedDocuments._read, searched.SearchedDocuments._word_texts
    monkeypatch.setattr(searched.SearchedDocuments, "_read",
                        lambda self, *a, **kw: reads.append(1) or read(self, *a, **kw))
    monkeypatch.setattr(searched.SearchedDocuments, "_word_texts",
                        lambda self, loaded: builds.append(1) or build(self, loaded))
    r.dominant_ratio = 2.0
    assert r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert reads and len(builds) == len(reads)


def _unchosen_pool(tmp_path, text_index: bool = True, party: str = "Acme Holdings"):
    """Acme's agreement writes its party (PARTY) once, in its preamble, and its vectors are far
    from the question; five look-alikes are near it ("Beta Corp" written by two of them,
    "Delta Mills" by one). A vector first stage of 2 documents leaves Acme out."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(11)

    def agreement(doc_id: str, party: str, near: float):
        lines = [f"Supply agreement with {party}.", "Payment is due in thirty days.",
                 "Either party may end it on notice."]
        return line_document(doc_id, lines, leaf_vectors(rng, near, 3, TOY_DIM))

    docs = [agreement("acme", party, 0.1)]
    docs += [agreement(f"other{i}", ("Beta Corp", "Beta Corp", "Delta Mills", "Gamma Ltd",
                                     "Omega Inc")[i], 0.9 - 0.05 * i) for i in range(5)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    if text_index:
        assert Retriever(db, encoder=encoder).store.ensure_text_index()
    return db, encoder


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_document_a_question_names_is_fetched_from_the_whole_corpus(tmp_path, mode):
    """Rule 27: an entity of the question that no searched document writes and one
    document of the corpus alone writes brings that document in, and rule 23's mention
    weight puts its units first; an entity two documents write fetches nothing."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "When is payment due under the agreement with Acme Holdings?"
    found = {}
    for fetch in (0, 1):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2,
                      fetch_mentioned=fetch)
        assert "acme" not in r.choose_documents(qvec, None, k=3)
        found[fetch] = [h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode)]
    assert "acme" not in found[0]
    assert set(found[1]) == {"acme"}
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    assert r.fetch_mentioned == 2  # the default (rules 27 and 92)
    with r.view.one_view():
        assert r.first.writing("acme holdings") == ["acme"]
        assert sorted(r.first.writing("beta corp")) == ["other0", "other1"]
        assert r.first.writing("holdings acme") == []  # the words, not the phrase
    beta = "When is payment due under the agreement with Beta Corp?"
    assert [h.doc_id for h in r.search_vector(beta, qvec, k=3, mode=mode)] == [
        h.doc_id for h in Retriever(db, encoder=encoder, first_stage="vector", n_docs=2,
                                    fetch_mentioned=0).search_vector(beta, qvec, k=3,
                                                                     mode=mode)]
    # within doc_ids nothing is fetched; a filter's documents bound the fetch
    assert {h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode,
                                              doc_ids=["other0", "other1"])} <= {
        "other0", "other1"}
    assert "acme" not in {h.doc_id for h in r.search_vector(
        query, qvec, k=3, mode=mode, allowed={"other0", "other1", "other2"})}


@pytest.mark.parametrize("party, query, entity", [
    # rule 43: a code holding a digit
    ("the KEYNOTE-189 investigators",
     "When is payment due under the agreement with KEYNOTE-189?", "keynote 189"),
    # rule 46: a digit and a capital, a code (not an amount) though two characters
    ("3M Company", "When is payment due under 3M's agreement?", "3m"),
    # rule 53: a name spelt with its accents, written with them or without
    ("Nestlé Waters", "When is payment due under Nestlé Waters' agreement?", "nestlé waters"),
    ("Nestle Waters", "When is payment due under Nestlé Waters' agreement?", "nestlé waters"),
])
def test_a_document_named_by_a_code_is_fetched_through_the_text_index(
        tmp_path, party, query, entity):
    """A code (or a name written with or without its accents) is an entity, the full-text
    index finds the one document that writes it, and the search keeps to that
    document."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path, party=party)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    assert question_entities(query) == [entity]
    with r.view.one_view():
        assert r.first.writing(entity) == ["acme"]
    assert {h.doc_id for h in r.search_vector(query, qvec, k=3)} == {"acme"}


def test_a_name_s_number_names_the_one_report_of_a_series():
    """Rule 47: every CheckMate report writes "CheckMate"; the question's number names the
    one it asks about, and a date's month names no document that alone writes it."""
    from sproutrag.names import words

    texts = {"227": words("CheckMate 227 enrolled 1,739 patients in March."),
             "9la": words("CheckMate 9LA enrolled 719 patients."),
             "816": words("CheckMate 816 enrolled 358 patients.")}
    assert mentioned_documents(question_entities(
        "How many patients did CheckMate 227 enroll?"), texts) == ["227"]
    assert mentioned_documents(question_entities(
        "How many patients did CheckMate trials enroll by March 3, 2020?"), texts) == []
    assert mentioned_documents(["march"], texts) == ["227"]  # what "march" named


def test_an_entity_a_searched_document_writes_is_not_looked_up(tmp_path):
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    chosen = r.choose_documents(qvec, None, k=3)
    assert "other0" in chosen
    asked: list[str] = []
    writing = r.searching.writing
    r.searching.writing = lambda entity: asked.append(entity) or writing(entity)
    r.search_vector("Is payment due to Beta Corp or to Acme Holdings?", qvec, k=3)
    assert asked == ["acme holdings"]  # "beta corp" is written by a searched document
    asked.clear()
    r.search_vector("when is payment due?", qvec, k=3)  # no entity, no lookup
    r.fetch_mentioned = 0
    r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert asked == []


def test_without_a_text_index_nothing_is_fetched_by_mention(tmp_path):
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path, text_index=False)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    with r.view.one_view():
        assert r.first.writing("acme holdings") == []
    hits = r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert hits and "acme" not in {h.doc_id for h in hits}


def test_the_retriever_and_the_settings_check_fetch_mentioned(tmp_path):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    for bad in (-1, 1.5, "x"):
        with pytest.raises(QueryError, match="fetch_mentioned"):
            Retriever(db, encoder=encoder, fetch_mentioned=bad)
    assert SearchSettings().retriever_options()["fetch_mentioned"] == 2
    with pytest.raises(ValidationError, match="fetch_mentioned"):
        SearchSettings(fetch_mentioned=-1)


def test_a_question_looks_up_at_most_max_mention_lookups_entities(tmp_path):
    from sproutrag.search.retriever import Retriever
    from sproutrag.search.searched import MAX_MENTION_LOOKUPS

    db, encoder = _unchosen_pool(tmp_path)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    asked: list[str] = []
    r.searching.writing = lambda entity: asked.append(entity) or []
    names = [f"Zeta{i} Works" for i in range(MAX_MENTION_LOOKUPS + 3)]
    r.search_vector("Is payment due to " + ", to ".join(names) + "?", qvec, k=3)
    assert asked == [n.lower() for n in names][:MAX_MENTION_LOOKUPS]


def test_statistics_come_from_the_named_documents_when_two_hold_enough_leaves(tmp_path):
    """Rule 29: a question naming two searched documents that hold anchor_leaves leaves
    together takes its statistics from them (as search within them would); one named
    document, too few leaves, or the setting off: from the first stage's leading ones."""
    from sproutrag.search.node_scores import anchor_documents
    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))  # 4 leaves a document
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    two = "When is payment due to Acme Holdings and to Zenith Mills?"
    one = "When is payment due to Acme Holdings?"

    def anchor(query: str, **options) -> list[str] | None:
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5,
                      **{"mention_alone": False, **options})  # rule 31 would search them alone
        with r.view.one_view():
            docs = r.choose_documents(qvec, None, k=3, query=query)
            found = r.searching.find(query, qvec, docs, r._resolve()[0], True)
        leaves = {d: st.tree.n for d, st in found.stored.items()}
        default = anchor_documents(found.docs, leaves, r.anchor_leaves)
        return found.anchor, default, found.docs

    got, default, docs = anchor(two, anchor_leaves=8)
    assert got == [d for d in docs if d in {"acme", "zenith"}] and set(got) != set(default)
    for query, options in ((two, {"anchor_leaves": 9}), (one, {"anchor_leaves": 4}),
                           (two, {"anchor_leaves": 8, "mention_statistics": False}),
                           (two, {"anchor_leaves": 8, "mention_weight": 0.0})):
        got, default, _ = anchor(query, **options)
        assert got == default, (query, options)
    with pytest.raises(QueryError, match="mention_statistics"):
        Retriever(db, encoder=encoder, mention_statistics="yes")


def test_named_documents_holding_anchor_leaves_gain_the_long_mention_weight():
    """Rule 30: the mentioned documents gain long_mention_weight instead of mention_weight
    when they hold anchor_leaves leaves together (`SearchedDocuments.long`: long
    documents, where the named one is the question's)."""
    from types import SimpleNamespace

    from sproutrag.names import words
    from sproutrag.search.searched import CorpusWideSettings, SearchedDocuments

    texts = {"acme": words("Supply agreement with Acme Holdings."),
             "zen": words("Supply agreement with Zenith Mills."),
             "other": words("Supply agreement with Beta Corp.")}

    def boosts(query: str, leaves: dict[str, int], anchor_leaves: int) -> dict[str, float]:
        settings = CorpusWideSettings(anchor_leaves=anchor_leaves, link_weight=0.0,
                                      mention_weight=3.0, long_mention_weight=6.0)
        searching = SearchedDocuments(None, lambda: None, settings)  # no names to read
        stored = {d: SimpleNamespace(tree=SimpleNamespace(n=n)) for d, n in leaves.items()}
        named = mentioned_documents(question_entities(query), texts)
        links = searching.links(query, {d: ("tree", st) for d, st in stored.items()}, True,
                                named, searching.long(named, stored))
        return links.boosts({d: np.zeros(n) for d, n in leaves.items()})

    one = "When is payment due to Acme Holdings?"
    two = "When is payment due to Acme Holdings and to Zenith Mills?"
    assert boosts(one, {"acme": 40, "zen": 40, "other": 40}, 32) == {"acme": 6.0}
    assert boosts(one, {"acme": 4, "zen": 40, "other": 40}, 32) == {"acme": 3.0}
    assert boosts(two, {"acme": 16, "zen": 16, "other": 4}, 32) == {"acme": 6.0, "zen": 6.0}
    assert boosts(two, {"acme": 16, "zen": 15, "other": 40}, 32) == {"acme": 3.0, "zen": 3.0}
    assert boosts(one, {"acme": 40, "zen": 40}, 0) == {"acme": 3.0}  # 0: never
    assert boosts("When is payment due?", {"acme": 40}, 32) == {}


def test_the_retriever_and_the_settings_check_long_mention_weight(tmp_path):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    for bad in (-1, float("nan"), "x"):
        with pytest.raises(QueryError, match="long_mention_weight"):
            Retriever(db, encoder=encoder, long_mention_weight=bad)
    r = Retriever(db, encoder=encoder)
    assert r.long_mention_weight == 6.0 and r.searching.links(
        "To Acme Holdings?", {}, True, long=True).mention == 6.0
    assert r.searching.links("To Acme Holdings?", {}, True).mention == r.mention_weight == 3.0
    assert SearchSettings().retriever_options()["long_mention_weight"] == 6.0
    with pytest.raises(ValidationError, match="long_mention_weight"):
        SearchSettings(long_mention_weight=-1)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_named_documents_holding_anchor_leaves_are_searched_alone(tmp_path, mode):
    """Rule 31: when the documents a corpus-wide question names hold anchor_leaves leaves
    together (one document too), only they are searched, exactly as a query restricted to
    their doc_ids; too few leaves, or the setting off: every chosen document competes."""
    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))  # 4 leaves a document
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    one = "When is payment due under the agreement with Acme Holdings?"
    two = "When is payment due to Acme Holdings and to Zenith Mills?"

    def hits(query: str, doc_ids=None, **options) -> list[tuple]:
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5, **options)
        return [(h.doc_id, h.spans, round(h.score, 6)) for h in
                r.search_vector(query, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    for query, named in ((one, ["acme"]), (two, ["acme", "zenith"])):
        leaves = 4 * len(named)
        alone = hits(query, anchor_leaves=leaves)
        assert alone == hits(query, named, anchor_leaves=leaves)  # as within them
        assert {d for d, _, _ in alone} == set(named)
        # fewer leaves than the floor, or the setting off: the chosen documents compete
        for options in ({"anchor_leaves": leaves + 1},
                        {"anchor_leaves": leaves, "mention_alone": False}):
            assert hits(query, **options) != alone, (query, options)
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5, anchor_leaves=4)
    assert r.mention_alone is True  # the default
    with r.view.one_view():
        assert r.searched_documents(one, qvec, r.choose_documents(qvec, None, k=4)) == ["acme"]
    # an entity two searched documents write names neither: nothing is searched alone
    beta = "When is payment due to Beta Corp?"
    assert hits(beta, anchor_leaves=4) == hits(beta, anchor_leaves=4, mention_alone=False)
    # a context is taken from the named document alone too
    from types import SimpleNamespace

    toy = SimpleNamespace(**vars(encoder), encode_texts=lambda t: np.stack([qvec] * len(t)))
    r = Retriever(db, encoder=toy, first_stage="vector", n_docs=5, anchor_leaves=4)
    ctx = r.context(one, budget_chars=400, mode=mode)
    assert ctx.spans and {s.doc_id for s in ctx.spans} == {"acme"}
    assert ctx.spans == r.context(one, budget_chars=400, mode=mode, doc_ids=["acme"]).spans
    with pytest.raises(QueryError, match="mention_alone"):
        Retriever(db, encoder=encoder, mention_alone="yes")


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_title_a_question_names_fetches_its_document_among_look_alikes(tmp_path, mode):
    """Rule 56: the searched look-alikes write "welcome" and "show" (each written by two,
    so neither names a document); the title "Welcome to the Show", which one document of
    the corpus alone writes, is looked up whole, brings that document in and keeps the
    search to it."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(5)
    titles = ("Welcome to the Show", "Welcome to Loserville", "Welcome to My Nightmare",
              "Welcome Home", "The Big Show")
    docs = [line_document(doc_id, [f"{title} is a show.", "It aired every night.",
                                   "Its cast sang."], leaf_vectors(rng, near, 3, TOY_DIM))
            for doc_id, title, near in zip(("show", "loser", "nightmare", "home", "big"),
                                           titles, (0.1, 0.9, 0.85, 0.8, 0.75), strict=True)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    assert r.store.ensure_text_index()
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "Who sang in Welcome to the Show?"
    assert question_entities(query) == ["welcome", "show", "welcome to the show"]
    assert "show" not in r.choose_documents(qvec, None, k=3)
    with r.view.one_view():
        assert r.first.writing("welcome to the show") == ["show"]
    assert {h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode)} == {"show"}


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_question_opening_with_two_companies_searches_both_reports(tmp_path, mode):
    """Rule 59: "Pfizer and Moderna: ..." read as "moderna" alone, so Pfizer's report,
    which the first stage misses, was not fetched and look-alikes took the units; read as
    both names, the report the corpus alone names "Pfizer" is fetched (rule 27) and both
    named reports hold the results."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(7)
    names = ("Pfizer", "Moderna", "Merck", "Novavax", "Sanofi")
    docs = [line_document(name.lower(), [f"{name} annual report.",
                                         f"{name} spent on research and development.",
                                         "Vaccine revenue fell."],
                          leaf_vectors(rng, near, 3, TOY_DIM))
            for name, near in zip(names, (0.1, 0.9, 0.85, 0.8, 0.75), strict=True)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    assert r.store.ensure_text_index()
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "Pfizer and Moderna: which spent more on research and development?"
    assert question_entities(query) == ["pfizer", "moderna"]
    assert "pfizer" not in r.choose_documents(qvec, None, k=4)
    hits = r.search_vector(query, qvec, k=4, mode=mode)
    assert {h.doc_id for h in hits} == {"pfizer", "moderna"}
