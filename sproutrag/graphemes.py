"""Where a cut of a text may fall without splitting a character as a reader sees it.

A Python string is a sequence of code points, and several code points can make one
character on the screen: a letter and its combining accents, an emoji and its skin tone,
emoji joined by a zero-width joiner, a flag's two regional indicators, a Korean syllable
written as conjoining jamo, Thai "ทำ", a Devanagari conjunct "त्र", a Khmer stack, CR
LF. A hard cut (a chunk of a sentence longer than `chunking.max_chunk_chars` with no
space to cut at; a context cut inside unspaced text) must not fall inside one. This is
a small subset of Unicode's grapheme cluster rules (UAX #29), the cases real text has;
it needs no data beyond `unicodedata`.
"""

from __future__ import annotations

import unicodedata

__all__ = ["splits_character", "whole_character_cut"]

_ZWJ = "\u200d"
_REGIONAL = range(0x1F1E6, 0x1F200)
_SKIN_TONES = range(0x1F3FB, 0x1F400)
_TAGS = range(0xE0020, 0xE0080)  # subdivision flags' tag characters
_JAMO_FOLLOWING = (range(0x1160, 0x1200), range(0xD7B0, 0xD800))  # vowels and finals
#: Letters that are spacing marks in UAX #29 though Unicode calls them letters (Lo):
#: Thai and Lao SARA AM ("ทำ" is one character).
_SPACING_LETTERS = frozenset("\u0e33\u0eb3")
#: Viramas that join the consonants around them into one conjunct (UAX #29's
#: Indic_Conjunct_Break=Linker: Devanagari, Bengali, Gujarati, Oriya, Telugu, Malayalam):
#: "त्र" is one character, no cut after its virama.
_LINKERS = frozenset("\u094d\u09cd\u0acd\u0b4d\u0c4d\u0d4d")
#: Marks that stack the next consonant under the one before: Khmer COENG, Myanmar's
#: invisible virama ("ក្ព" is one character). Nothing may follow them across a cut.
_STACKERS = frozenset("\u17d2\u1039")


def _joins_before(ch: str) -> bool:
    """Whether CH belongs to the character before it, whatever that is."""
    cp = ord(ch)
    return (unicodedata.category(ch).startswith("M")  # accents, variation selectors
            or ch == _ZWJ or cp in _SKIN_TONES or cp in _TAGS or ch in _SPACING_LETTERS
            or any(cp in r for r in _JAMO_FOLLOWING))


def splits_character(text: str, i: int) -> bool:
    """Whether cutting TEXT between positions i-1 and i splits one reader's character."""
    if i <= 0 or i >= len(text):
        return False
    before, ch = text[i - 1], text[i]
    if (_joins_before(ch) or before == _ZWJ or before in _STACKERS
            or (before, ch) == ("\r", "\n")):
        return True
    if before in _LINKERS and unicodedata.category(ch) == "Lo" and (
            ord(ch) >> 7 == ord(before) >> 7):  # a consonant of the virama's script
        return True
    if ord(ch) in _REGIONAL and ord(before) in _REGIONAL:
        run = i - 1  # indicators pair up from the start of their run
        while run > 0 and ord(text[run - 1]) in _REGIONAL:
            run -= 1
        return (i - run) % 2 == 1
    return False


def whole_character_cut(text: str, start: int, cut: int) -> int:
    """CUT (an index in TEXT after START) moved back until it splits no character; CUT
    itself when every position after START splits one (a letter under hundreds of
    combining marks): a cut must still end somewhere."""
    at = cut
    while at > start and splits_character(text, at):
        at -= 1
    return at if at > start else cut
