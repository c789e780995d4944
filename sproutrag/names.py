"""Documents' names: what other documents and questions call a document by.

A document's name is its title (a JSONL line's "title") or else its first line when that
line is heading-like, normalised to its lower-cased words joined by one space, a trailing
parenthesis dropped ("Tim Brown (designer)" -> "tim brown"). `documents.name` stores it
and `documents.name_key` its 64-bit key (`name_key`), by which a corpus-wide search finds
the documents a question or its best unit names (`sproutrag.search.links`;
docs/whole-corpus.md, rules 12-13).

Pure functions over strings.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable

from sproutrag.stopwords import STOPWORDS

#: A name is at most this long (a heading, not a sentence).
MAX_NAME_CHARS = 100
#: Names shorter than this name nothing ("a", "us", "7").
MIN_NAME_CHARS = 4

_WORDS = re.compile(r"\w+", re.UNICODE)
_TRAILING_PARENTHESIS = re.compile(r"\s*\([^()]*\)\s*$")
_SENTENCE_END = ".!?;,:。！？"


def words(text: str) -> str:
    """TEXT lower-cased as its words joined by one space, a space at each end."""
    return " " + " ".join(_WORDS.findall(text.lower())) + " "


def folded(text: str) -> str:
    """TEXT with its accents dropped (Unicode NFKD, combining marks left out): "Nestlé" is
    "Nestle", "Sjögren" "Sjogren"; a text of ASCII only is returned as it is."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


def mention_words(text: str) -> str:
    """`words` of TEXT with its accents folded (`folded`): where a question's entities
    (`sproutrag.search.entities`) are looked for, each folded alike
    (`sproutrag.search.mentions.entity_holders`), so "Nestle" in a question names the
    report that writes "Nestlé" (docs/whole-corpus.md, rule 53). Documents' names (stored
    keys) keep `words`."""
    return words(folded(text))


def document_name(text: str, title: str | None = None) -> str | None:
    """A document's name: TITLE when given, else TEXT's first line when heading-like (at
    most 100 characters, no sentence punctuation at its end), as `words` (without the
    spaces at its ends), a trailing parenthesis dropped ("Tim Brown (designer)" -> "tim
    brown"). None when it is shorter than 4 characters or only stopwords and digits."""
    line = title.strip() if title and title.strip() else text.lstrip().split("\n", 1)[0].strip()
    if not line or len(line) > MAX_NAME_CHARS or (not title and line[-1] in _SENTENCE_END):
        return None
    name = words(_TRAILING_PARENTHESIS.sub("", line)).strip()
    return name if is_name(name) else None


def is_name(name: str) -> bool:
    """Whether NAME (words joined by one space) can name a document: at least 4 and at
    most 100 characters, not only stopwords and digits (`document_name`'s rule)."""
    return (MIN_NAME_CHARS <= len(name) <= MAX_NAME_CHARS
            and not all(w in STOPWORDS or w.isdigit() for w in name.split()))


@functools.lru_cache(maxsize=1 << 14)
def _pattern(name: str) -> re.Pattern:
    return re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, name.split())) + r"(?!\w)")


def written_in(name: str, lowered: str) -> bool:
    """Whether NAME (as `document_name` gives it) is written in LOWERED (a lower-cased
    text) as whole words, whatever separates them ("Marlow-Shipping" writes "marlow
    shipping"): ``f" {name} " in words(text)``, without normalising the whole text."""
    first = name.split(" ", 1)[0]
    return first in lowered and _pattern(name).search(lowered) is not None


def _hash32(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=4).digest(),
                          "little")


def name_key(name: str | None) -> int | None:
    """The 64-bit key of a name (`documents.name_key`), what a search looks names up by:
    the 4-byte BLAKE2b digest (digest_size=4) of its first word (the high half) and of the
    whole name (the low half), little-endian, as a signed integer. Its high half is
    `first_word_key` of its first word, so a search tries only the phrases that start
    with a word some name starts with."""
    if name is None:
        return None
    key = (_hash32(name.split(" ", 1)[0]) << 32) | _hash32(name)
    return key - (1 << 64) if key >= 1 << 63 else key


#: Why a check names a document whose stored `name` or `name_key` is not what its text and
#: title give (`name_problem`).
NAME_CHANGED = "its stored name or name key does not match its text and title"


def name_problem(text: str, title: str | None, name: str | None, key: int | None
                 ) -> str | None:
    """`NAME_CHANGED` when NAME (a `documents.name`) is not `document_name(TEXT, TITLE)`
    or KEY (its `name_key`) not `name_key(NAME)`, else None: what `sproutrag check` and
    `sproutrag index --verify` ask of every stored document (a wrong key hides a document
    from the corpus-wide fetch, docs/whole-corpus.md, rule 13)."""
    if name != document_name(text, title) or key != name_key(name):
        return NAME_CHANGED
    return None


def first_word_key(word: str) -> int:
    """``name_key(name) >> 32`` of every name whose first word is WORD."""
    high = _hash32(word)
    return high - (1 << 32) if high >= 1 << 31 else high


def name_phrases(text: str, starts: Callable[[str], bool] | None = None) -> list[str]:
    """The runs of words of TEXT (as `words` normalises it) that could be a document's
    name (`is_name`), each once, in the order they start; with STARTS, only runs whose
    first word it accepts."""
    ws = words(text).split()
    out: dict[str, None] = {}
    for i, first in enumerate(ws):
        if starts is not None and not starts(first):
            continue
        phrase, content = "", False
        for w in ws[i:]:
            phrase = f"{phrase} {w}" if phrase else w
            if len(phrase) > MAX_NAME_CHARS:
                break
            content = content or not (w in STOPWORDS or w.isdigit())
            if content and len(phrase) >= MIN_NAME_CHARS:
                out.setdefault(phrase)
    return list(out)


__all__ = ["MAX_NAME_CHARS", "MIN_NAME_CHARS", "NAME_CHANGED", "document_name",
           "first_word_key", "is_name", "name_key", "name_phrases", "name_problem", "words",
           "written_in"]
