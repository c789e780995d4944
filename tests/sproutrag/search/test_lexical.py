from __future__ import annotations

import math

import numpy as np
import pytest

from sproutrag.search.lexical import LeafTerms, bm25_leaves, bm25_nodes, tokenize, words
from sproutrag.trees.tree import build_tree


def _bm25(query: str, texts: list[str], **shape) -> np.ndarray:
    """BM25 of `query` against `texts` as one collection (one document's leaves)."""
    analyzer = shape.pop("analyzer", tokenize)
    return bm25_leaves(query, [LeafTerms.of(texts, analyzer=analyzer)], analyzer=analyzer,
                       **shape)[0]


def test_tokenize_lowercases_drops_stopwords_and_stems():
    assert tokenize("The Receiving Party shall NOT disclose; e-mail 30 days.") == [
        "receiv", "parti", "disclos", "e", "mail", "30", "day"]
    assert tokenize("中文 Ünïcode") == ["中文", "ünïcode"]  # other scripts: not stemmed
    # a question's word forms meet its evidence's: one stem per family
    assert tokenize("formed forming form") == ["form"] * 3
    assert tokenize("Confidentiality confidential") == ["confidenti"] * 2
    assert tokenize("terminate termination terminated") == ["termin"] * 3


def test_words_of_other_scripts_keep_their_marks_and_cjk_counts_pairs():
    """Python's \\w has no combining marks: Hindi was split at every vowel sign and a
    decomposed accent split its word; a Japanese clause was one word no question met."""
    assert words("नोटिस की अवधि") == ["नोटिस", "की", "अवधि"]
    assert words("re\u0301sume\u0301 résumé") == ["résumé", "résumé"]  # composed (NFC)
    assert words("مُحَمَّد") == ["مُحَمَّد"]
    assert words("解約予告期間") == ["解約", "約予", "予告", "告期", "期間"]
    assert words("東 2025年1月") == ["東", "2025", "年", "1", "月"]
    assert words("The e-mail, 30 days") == ["e", "mail", "30", "days"]  # ASCII: as before
    texts = ["解約予告期間は三か月です", "賃料は毎月末日までに支払う"]
    got = _bm25("解約予告期間", texts)
    assert got[0] > 0 and got[1] == 0


def test_stemmed_forms_match_in_bm25():
    texts = ["The band was formed in 1994.", "The album was released in 2003."]
    got = _bm25("When was the band forming?", texts)
    assert got[0] > 0 and got[1] == 0  # "forming" finds "formed" (and "band")
    only_form = _bm25("forming", texts)
    assert only_form[0] > 0 and only_form[1] == 0


def test_stemming_is_thread_safe():
    """Snowball stemmers keep state while stemming: each thread has its own (uncached
    calls here, so threads really stem at the same time)."""
    from concurrent.futures import ThreadPoolExecutor

    from sproutrag.search.lexical import stem

    words = [f"{w}{e}" for w in ("terminat", "disclos", "form", "agre", "notif")
             for e in ("e", "ed", "ing", "es", "ion", "ement", "ied", "y")] * 200
    want = [stem.__wrapped__(w) for w in words]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: [stem.__wrapped__(w) for w in words[i:] + words[:i]],
                            range(8)))
    assert all(g == want[i:] + want[:i] for i, g in enumerate(got))


def test_bm25_against_a_hand_computed_case():
    texts = ["notice period notice", "termination", "payment terms apply here"]
    got = _bm25("notice termination", texts)
    # lengths 3, 1, 4 tokens (avg 8/3); "notice": df 1 of 3, tf 2 in text 0;
    # "termination": df 1, tf 1 in text 1. k1 = 1.2, b = 0.75.
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    avg = 8 / 3
    t0 = idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / avg))
    t1 = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / avg))
    np.testing.assert_allclose(got, [t0, t1, 0.0])
    assert not _bm25("the of and", texts).any()  # only stopwords: nothing matches
    assert _bm25("x", []).shape == (0,)


def test_collection_spans_documents_and_nodes_sum_their_leaves():
    a = LeafTerms.of(["alpha beta", "gamma"])
    b = LeafTerms.of(["alpha", "delta delta"])
    per_leaf = bm25_leaves("alpha delta", [a, b])
    joint = _bm25("alpha delta", ["alpha beta", "gamma", "alpha", "delta delta"])
    np.testing.assert_allclose(np.concatenate(per_leaf), joint)  # one collection
    vecs = np.eye(2, dtype=np.float32)
    tree = build_tree(vecs, np.array([0]), np.array([1]), np.array([0.5], np.float32))
    nodes = bm25_nodes("alpha delta", [b], [tree])[0]
    assert nodes.shape == (3,)
    np.testing.assert_allclose(nodes[:2], bm25_leaves("alpha delta", [b])[0])
    # the root is the text "alpha delta delta" scored with the leaves' statistics
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    avg = 1.5
    root = (idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / avg))
            + idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / avg)))
    assert nodes[2] == pytest.approx(root)


def test_leaf_context_counts_as_part_of_the_leaf():
    text = "Elwyn White\nHe was born in 1899. He wrote books.\n\nOther\nNothing here."
    from sproutrag.ingest.chunking import chunk_text

    spans = chunk_text(text, sentences_per_chunk=1)
    terms = LeafTerms.of_document(text, spans)
    second = [i for i, (s, e) in enumerate(spans) if text[s:e] == "He wrote books."][0]
    assert terms.counts[second]["white"] == 2  # from the heading "Elwyn White", twice
    assert terms.counts[second]["wrote"] == 1
    # elwyn white (x2) wrote book ("he": a stopword; "books" stemmed)
    assert terms.lengths[second] == 6
    assert terms.counts[second]["book"] == 1
    with pytest.raises(ValueError, match="contexts"):
        LeafTerms.of(["a", "b"], ["x"])


def test_analyzer_parameter_scores_without_stems():
    """The unstemmed analyzer (`words`), passed to both sides, is BM25 as before stems:
    "forming" no longer finds "formed" (what bench/research/lexical_stems.py compares)."""
    texts = ["The band was formed in 1994.", "Forming a band."]
    stemmed = _bm25("forming", texts)
    plain = _bm25("forming", texts, analyzer=words)
    assert stemmed[0] > 0 and stemmed[1] > 0
    assert plain[0] == 0 and plain[1] > 0
    assert LeafTerms.of(texts, analyzer=words).counts[0]["formed"] == 1


def test_context_weight_and_bm25_shape_parameters():
    texts, heads = ["he wrote books", "nothing here"], ["Elwyn White", "Other"]
    for weight in (0, 1, 3):
        terms = LeafTerms.of(texts, heads, context_weight=weight)
        assert terms.counts[0]["white"] == weight
        assert terms.lengths[0] == 2 + 2 * weight  # "he" is a stopword
    assert LeafTerms.of(texts, heads).counts[0]["white"] == 2  # shipped: twice
    with pytest.raises(ValueError, match="context_weight"):
        LeafTerms.of(texts, heads, context_weight=-1)
    # k1 and b as in the hand-computed case: "notice" tf 2 in 3 tokens, avg 8/3
    got = _bm25("notice", ["notice period notice", "termination", "payment terms apply here"],
                k1=2.0, b=0.3)
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    assert got[0] == pytest.approx(idf * 2 * 3.0 / (2 + 2.0 * (0.7 + 0.3 * 3 / (8 / 3))))


def test_a_collection_gives_the_statistics_to_every_document():
    a = LeafTerms.of(["alpha beta", "gamma"])
    b = LeafTerms.of(["alpha", "delta delta"])
    # a alone as the collection: a scores as it does alone; b is scored on a's scale
    got_a, got_b = bm25_leaves("alpha delta", [a, b], collection=[a])
    np.testing.assert_allclose(got_a, bm25_leaves("alpha delta", [a])[0])
    n, avg = 2, 3 / 2  # a's two leaves, 3 tokens
    idf_alpha = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))  # df 1 in a
    idf_delta = math.log(1 + (n - 0 + 0.5) / (0 + 0.5))  # absent from a: df 0
    np.testing.assert_allclose(got_b, [
        idf_alpha * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / avg)),
        idf_delta * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 2 / avg))])
    everyone = bm25_leaves("alpha delta", [a, b], collection=[a, b])
    for x, y in zip(everyone, bm25_leaves("alpha delta", [a, b])):
        np.testing.assert_array_equal(x, y)  # the default collection: the documents
