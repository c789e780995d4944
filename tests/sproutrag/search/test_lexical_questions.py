"""BM25 of a gated document without the names its opening writes
(`sproutrag.search.name_free.lexical_questions`; docs/whole-corpus.md, rules 80 and 81)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.search.lexical import LeafTerms, bm25_each, bm25_leaves, bm25_nodes
from sproutrag.search.name_free import (
    lexical_questions,
    opening,
    opening_leaves,
    opening_names,
)
from sproutrag.storage.rows import StoredTree
from sproutrag.trees.tree import build_tree

CAPTION = "Delacroix v. Vantera Cardio Systems, Inc."
FILLERS = [f"Section {i} covers other matters of the record." for i in range(20)]
ANSWER = "A remittitur cut the award to a one-to-one ratio."  # no word of the question
QUESTION = "What did the court do with the punitive damages in Delacroix v. Vantera?"


def _stored(texts: list[str]) -> StoredTree:
    n = len(texts)
    i = np.arange(n - 1)
    vectors = np.eye(n, 8, dtype=np.float32)
    return StoredTree("d", build_tree(vectors, i, i + 1, np.full(n - 1, 0.5, np.float32)),
                      np.zeros((n, 2), np.int64), texts)


def test_the_opening_leaves_are_those_the_opening_reads():
    texts = ["a" * 120, "b" * 120, "c" * 120, "d" * 10]
    assert opening_leaves(texts) == 3  # the third starts at character 242 of 300
    assert opening(texts) == " ".join(texts[:3])[:300]
    assert opening_leaves(["x" * 400, "y"]) == 1 and opening_leaves([]) == 0


def test_the_names_the_opening_writes_leave_bm25():
    texts = [CAPTION, "Plaintiff Ana Delacroix sued the Company.", *FILLERS, ANSWER]
    assert opening_leaves(texts) == 7  # the caption, the first sentence, 5 fillers
    assert opening_names(texts, ["delacroix", "vantera"]) == ["delacroix", "vantera"]
    # a name the body writes too leaves as well (rule 81): "Vantera asks ..." is no answer
    body = [CAPTION, *FILLERS, "Vantera asks for a new trial.", ANSWER]
    assert opening_names(body, ["delacroix", "vantera"]) == ["delacroix", "vantera"]
    late = [*FILLERS, CAPTION, ANSWER]  # the caption past the opening's 300 characters
    assert opening_names(late, ["delacroix", "remittitur"]) == []
    stored = {"case": _stored(texts), "body": _stored(body), "late": _stored(late)}
    got = lexical_questions(QUESTION, ["delacroix", "vantera"], stored, ["case", "body"])
    free = "What did the court do with the punitive damages in v. ?"
    assert got == {"case": free, "body": free}
    # "late" opens with neither name: alone, it keeps the question
    assert lexical_questions(QUESTION, ["delacroix", "vantera"], stored, ["late"]) == {}
    assert lexical_questions(QUESTION, ["remittitur"], stored, ["case"]) == {}


def test_an_entry_titled_by_the_name_keeps_the_question():
    """A bundle whose first part is titled by the name ("Heinkel HD 23", its opening the
    evidence) keeps the name in BM25 (rule 80), though its opening writes it."""
    entry = ["Heinkel HD 23\nThe Heinkel HD 23 was a fighter for aircraft carriers.",
             *FILLERS]
    stored = {"entry": _stored(entry)}
    assert opening_names(entry, ["heinkel hd 23"]) == ["heinkel hd 23"]
    assert lexical_questions("When was the Heinkel HD 23 built?", ["heinkel hd 23"], stored,
                             ["entry"]) == {}


def test_each_document_is_scored_with_its_own_text_and_the_shared_statistics():
    texts = {"a": [CAPTION, "Punitive damages."], "b": ["Vantera appeals.", "Damages rose."],
             "c": ["Nothing here.", "The court adjourned."]}
    ids = list(texts)
    terms = [LeafTerms.of(texts[d]) for d in ids]
    trees = [_stored(texts[d]).tree for d in ids]
    own = {"a": "punitive damages"}
    got = bm25_each(QUESTION, own, ids, terms, trees)
    assert np.allclose(got[0], bm25_nodes("punitive damages", terms[:1], trees[:1], terms))
    for i in (1, 2):
        assert np.allclose(got[i], bm25_nodes(QUESTION, terms, trees)[i])
    leaves = bm25_each(QUESTION, own, ids, terms)
    assert np.allclose(leaves[0], bm25_leaves("punitive damages", terms[:1], collection=terms)[0])
    assert all(np.allclose(x, y) for x, y in zip(bm25_each(QUESTION, None, ids, terms, trees),
                                                  bm25_nodes(QUESTION, terms, trees)))


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_case_whose_caption_writes_the_name_gives_its_answer_first(tmp_path, mode,
                                                                     monkeypatch):
    """Within a case of 22 leaves, the name-free blend puts the answer ahead on the
    cosine, but BM25 of the whole question ranks the caption first: the names are the
    only words of the question the case writes. Without the names only the caption
    writes, the answer comes first; with rule 80's texts taken away (patched to none) the
    caption is first again (rules 80 and 81)."""
    import sproutrag.search.name_free as name_free_module
    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.params import SearchParams
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, line_document, toy_encoder, toy_store

    rng = np.random.default_rng(4)
    e0, e1 = np.eye(TOY_DIM)[0], np.eye(TOY_DIM)[1]
    filler = rng.normal(size=(len(FILLERS), TOY_DIM))
    filler[:, :2] = 0
    filler /= np.linalg.norm(filler, axis=1, keepdims=True)
    answer_vec = 0.6 * e0 + 0.8 * e1  # the cosine prefers the answer, a little
    doc = line_document("case", [CAPTION, *FILLERS, ANSWER],
                        np.vstack([e0, filler, answer_vec / np.linalg.norm(answer_vec)]))
    store = toy_store(tmp_path / "db")
    store.write([doc], "fp")
    qvec = (0.7 * e0 + 0.7 * e1).astype(np.float32)

    def encode_queries(texts):
        return np.vstack([qvec if t == QUESTION else e1 for t in texts]).astype(np.float32)

    weights = TrainedWeights(np.zeros((1, 1), np.float32),
                             SearchParams(threshold=-1.0, lexical_weight=2.0))
    encoder = toy_encoder(weights, encode_queries=encode_queries)

    def first() -> str:
        hits = Retriever(store.uri, encoder=encoder).search_vector(
            QUESTION, qvec, k=1, doc_ids=["case"], mode=mode)
        return hits[0].text

    assert first() == ANSWER
    monkeypatch.setattr(name_free_module, "lexical_questions", lambda *a, **k: {})
    assert first() == CAPTION
