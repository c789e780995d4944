"""Documents' names and the word texts a question's names are looked for in
(`sproutrag.names`)."""

from __future__ import annotations

from sproutrag.names import document_name, folded, mention_words, name_key, words


def test_folded_drops_accents_and_keeps_ascii_text_as_it_is():
    assert folded("Nestlé, L'Oréal, Sjögren, Société Générale, Ørsted") == (
        "Nestle, L'Oreal, Sjogren, Societe Generale, Ørsted")  # no combining mark in "Ø"
    text = "Plain ASCII, kept as it is."
    assert folded(text) is text


def test_mention_words_fold_accents_where_stored_names_keep_them():
    """Rule 53: a question's "Nestle" is looked for in the folded word text; a document's
    stored name (and so its `name_key`) is unchanged by it."""
    assert mention_words("Nestlé S.A. report") == " nestle s a report "
    assert words("Nestlé S.A. report") == " nestlé s a report "
    assert document_name("Nestlé Waters\nText.") == "nestlé waters"
    assert name_key("nestlé waters") != name_key("nestle waters")
