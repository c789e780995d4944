"""Documents the first stage missed, searched because the best unit writes their name
(`SearchedDocuments.named_elsewhere`, `documents.name_key`, `NameIndex`; docs/results.md,
rule 13), and the names' phrases and keys (no model)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.names import document_name, first_word_key, name_key, name_phrases
from sproutrag.search.name_index import NameIndex


def test_the_phrases_of_a_text_are_its_possible_names_each_once():
    phrases = name_phrases("Harbor Labs ships with Marlow-Shipping (UK), as Marlow Shipping.")
    assert phrases[:3] == ["harbor", "harbor labs", "harbor labs ships"]
    assert "marlow shipping" in phrases and "marlow shipping uk" in phrases
    assert phrases.count("marlow shipping") == 1
    assert "with" not in phrases and "as" not in phrases  # stopwords only
    assert "uk" not in phrases  # shorter than 4 characters
    assert all(len(p) <= 100 for p in name_phrases(" ".join(["word"] * 60)))
    # a document's name is one of the phrases of any text that writes it
    name = document_name("Tim Brown (designer)\nHe designs.")
    assert name in name_phrases("A game by Tim Brown.")


def test_name_keys_are_stable_signed_64_bit_integers_led_by_their_first_word():
    assert name_key("marlow shipping") == name_key("marlow shipping")
    assert name_key("marlow shipping") != name_key("harbor labs")
    assert -2**63 <= name_key("harbor labs") < 2**63 and name_key(None) is None
    assert name_key("tim brown") == 4635955735651534170  # stored keys must not move
    for name in ("tim brown", "marlow shipping ltd", "zebra", "the who"):
        assert name_key(name) >> 32 == first_word_key(name.split()[0])
    negative = next(n for n in (f"word{i} name" for i in range(100)) if name_key(n) < 0)
    assert name_key(negative) >> 32 == first_word_key(negative.split()[0]) < 0


def test_phrases_can_be_limited_to_the_words_names_start_with():
    text = "Harbor Labs ships with Marlow Shipping."
    assert name_phrases(text, {"marlow"}.__contains__) == ["marlow", "marlow shipping"]
    every = name_phrases(text)
    assert [p for p in every if p.startswith("marlow")] == ["marlow", "marlow shipping"]


def test_the_name_index_finds_every_document_of_a_key():
    import pyarrow as pa

    index = NameIndex(["a", "b", "c", "d"], pa.chunked_array([[5, None, 5], [-7]]))
    assert len(index) == 3
    assert index.documents([5, -7, 9, 5]) == {5: ["a", "c"], -7: ["d"]}
    assert NameIndex([], []).documents([1]) == {}
    keys = [name_key(n) for n in ("tim brown", "marlow shipping", "marlow group")]
    index = NameIndex(["t", "m", "g"], keys)
    words = {w: first_word_key(w) for w in ("tim", "marlow", "brown", "zebra")}
    assert index.first_words(words) == {"tim", "marlow"}
    assert NameIndex([], []).first_words(words) == set()


@pytest.fixture
def missed_pool(tmp_path):
    """The question matches Harbor Labs, whose best leaf names Marlow Shipping; five
    look-alikes match the question better than Marlow does, so a first stage of two
    documents never chooses it. "Bay Freight" is named too, but two documents share it."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(11)
    best = np.vstack([leaf_vectors(rng, 0.8, 1, TOY_DIM), leaf_vectors(rng, 0.97, 1, TOY_DIM)])
    docs = [line_document("harbor", ["Harbor Labs", "Harbor Labs ships with Marlow Shipping "
                                     "and Bay Freight."], best),
            line_document("marlow", ["Marlow Shipping", "It owns three vessels."],
                          leaf_vectors(rng, 0.2, 2, TOY_DIM))]
    docs += [line_document(f"bay{i}", ["Bay Freight", f"Bay Freight {i} trucks goods."],
                           leaf_vectors(rng, 0.2, 2, TOY_DIM)) for i in range(2)]
    return line_pool(tmp_path / "db", docs, lookalikes=5, rng=rng)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_document_the_best_unit_names_is_searched_though_the_first_stage_missed_it(
        missed_pool, mode):
    from sproutrag.search.retriever import Retriever

    db, encoder = missed_pool
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    found = {}
    for fetch in (0, 1):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2, fetch_named=fetch)
        chosen = r.choose_documents(qvec, None, k=4)
        assert "marlow" not in chosen
        # what the query searches: the first stage's choice, then the fetched document
        searched = r.searched_documents("Who owns the ships?", qvec, chosen)
        assert searched == chosen + ["marlow"] * fetch
        found[fetch] = {h.doc_id for h in r.search_vector("Who owns the ships?", qvec, k=4,
                                                          mode=mode)}
    assert "marlow" not in found[0]
    assert "marlow" in found[1] and "harbor" in found[1]
    assert not found[1] & {"bay0", "bay1"}  # a name two documents share names neither
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2, fetch_named=1)
    # a query within given documents, or a filter that leaves Marlow out, fetches nothing
    within = r.search_vector("Who owns the ships?", qvec, k=4, mode=mode,
                             doc_ids=["harbor", "look0"])
    assert {h.doc_id for h in within} == {"harbor", "look0"}
    allowed = {"harbor", "look0", "look1", "look2"}
    kept = r.search_vector("Who owns the ships?", qvec, k=4, mode=mode, allowed=allowed)
    assert {h.doc_id for h in kept} <= allowed


def test_what_a_search_reads_keeps_the_fetch_s_scores_only_when_nothing_was_fetched(
        missed_pool):
    """`SearchedDocuments.find`: the first stage's documents and the fetched one, read;
    the node scores the fetch computed are handed on only while they are the searched
    documents' (a fetched document changes the collection)."""
    from sproutrag.search.node_scores import node_scores
    from sproutrag.search.retriever import Retriever

    db, encoder = missed_pool
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "Who owns the ships?"
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2, fetch_named=1,
                  lexical_weight=0.5, anchor_leaves=2)
    chosen = r.choose_documents(qvec, None, k=4)
    no_marlow = {d for d in r.view.current().doc_ids.to_pylist() if d != "marlow"}
    with r.view.one_view():
        fetched = r.searching.find(query, qvec, chosen, r.params, True)
        kept = r.searching.find(query, qvec, chosen, r.params, True, no_marlow)
        within = r.searching.find(query, qvec, ["harbor", "look0"], r.params, False)
    assert fetched.docs == chosen + ["marlow"] and fetched.scores is None
    assert kept.docs == chosen and kept.scores is not None
    for found in (fetched, kept):
        assert list(found.stored) == found.docs and set(found.lexical) == set(found.docs)
        assert found.links is not None
        assert found.anchor == found.docs[:1]  # the leader holds the two leaves asked for
    again = node_scores({d: st.tree for d, st in kept.stored.items()}, qvec, query=query,
                        lexical=kept.lexical, lexical_weight=0.5, anchor=kept.anchor)
    assert set(kept.scores) == set(again)
    for d, scores in again.items():
        np.testing.assert_array_equal(kept.scores[d].rank, scores.rank)
    # a query within given documents: no links, all of them its statistics, no fetch
    assert within.docs == ["harbor", "look0"]
    assert (within.links, within.anchor, within.scores) == (None, None, None)
    r.link_weight = 0.0  # the Retriever's settings are the reader's, checked when set
    assert r.searching.settings.link_weight == 0.0
    with pytest.raises(ValueError, match="link_weight"):  # a QueryError
        r.link_weight = -1.0
    assert r.link_weight == 0.0


def test_a_context_searches_the_named_document_too(missed_pool):
    from types import SimpleNamespace

    from sproutrag.search.retriever import Retriever

    db, encoder = missed_pool
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    encoder = SimpleNamespace(**vars(encoder), encode_texts=lambda texts: np.stack(
        [qvec] * len(texts)))
    for fetch in (0, 1):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2, fetch_named=fetch)
        ctx = r.context("Who owns the ships?", budget_chars=500, k=4, selection="leaves")
        assert ("marlow" in {s.doc_id for s in ctx.spans}) == (fetch > 0)


def test_the_retriever_and_the_settings_check_fetch_named(missed_pool):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = missed_pool
    for bad in (-1, 1.5, "x"):
        with pytest.raises(QueryError, match="fetch_named"):
            Retriever(db, encoder=encoder, fetch_named=bad)
    assert SearchSettings().retriever_options()["fetch_named"] == 1
    with pytest.raises(ValidationError, match="fetch_named"):
        SearchSettings(fetch_named=-1)


def test_a_name_another_document_of_the_corpus_has_links_nothing(tmp_path):
    """Bay Freight is the first line of two documents; only one of them is searched, so
    among the searched documents its name is unique, but not in the corpus: the leader
    writing "Bay Freight" does not link it (rule 15). A unique name does."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(3)
    best = np.vstack([leaf_vectors(rng, 0.8, 1, TOY_DIM), leaf_vectors(rng, 0.97, 1, TOY_DIM)])

    def pool(second: str) -> list:
        return [line_document("harbor", ["Harbor Labs", "Harbor Labs ships with Bay Freight."],
                              best),
                line_document("bay0", ["Bay Freight", "Bay Freight trucks goods."],
                              leaf_vectors(rng, 0.5, 2, TOY_DIM)),
                line_document("bay1", [second, "It trucks goods too."],
                              leaf_vectors(rng, 0.1, 2, TOY_DIM))]

    qvec = np.eye(TOY_DIM, dtype=np.float32)[0]
    found = {}
    for second in ("Bay Freight", "Bay Freight Two"):
        db, encoder = line_pool(tmp_path / second.replace(" ", "-"), pool(second),
                                lookalikes=1, rng=rng)
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=3)
        assert set(r.choose_documents(qvec, None, k=3)) == {"harbor", "bay0", "look0"}
        found[second] = [h.doc_id for h in r.search_vector("Who trucks?", qvec, k=3)]
    assert "bay0" not in found["Bay Freight"]  # two documents of the corpus are named so
    assert "bay0" in found["Bay Freight Two"]  # the name is bay0's alone: it links
