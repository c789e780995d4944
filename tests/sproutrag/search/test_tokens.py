"""Token counts for a budget in tokens (`search.tokens.token_counter`): the encoder's
WordPiece tokens, an unknown token counted one per character it stands for."""

from __future__ import annotations

from sproutrag.search.tokens import token_counter

ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
THAI = "สัญญามีผลบังคับใช้ตั้งแต่วันที่หนึ่งมกราคม"  # one phrase: one [UNK] to WordPiece


def test_known_words_are_counted_as_the_tokenizer_splits_them():
    count = token_counter(ENCODER)
    assert count("hello world") == 2
    assert count("The supplier delivers within 30 days.") == 7


def test_an_unknown_token_counts_each_character_it_stands_for():
    """A budget of 2 tokens took a whole 5,680-character Thai document: its phrases were
    one [UNK] each."""
    count = token_counter(ENCODER)
    assert count(THAI) == len(THAI)
    assert count("\U0001f44b\U0001f44b\U0001f44b ok") == 4  # three emoji, one word
    assert count(f"{THAI} {THAI}") == 2 * len(THAI)
