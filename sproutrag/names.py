"""Documents' names: what other documents and questions call a document by.

A document's name is its title (a JSONL line's "title") or else its first line when that
line is heading-like, normalised to its lower-cased words joined by one space, a trailing
parenthesis dropped ("Tim Brown (designer)" -> "tim brown"). `documents.name` stores it and
`documents.name_key` its 64-bit key, by which a corpus-wide search finds the documents a
question or its best unit names (`sproutrag.search.links`; docs/results.md, rules 12-13).

Pure functions over strings.
"""

from __future__ import annotations

import hashlib
import re

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


def name_key(name: str | None) -> int | None:
    """The 64-bit key of a name (`documents.name_key`: the first 8 bytes of its BLAKE2b
    digest, a signed integer): what a search looks names up by."""
    if name is None:
        return None
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def name_phrases(text: str) -> list[str]:
    """The runs of words of TEXT (as `words` normalises it) that could be a document's
    name (`is_name`), each once, in the order they start."""
    ws = words(text).split()
    out: dict[str, None] = {}
    for i in range(len(ws)):
        phrase = ""
        for w in ws[i:]:
            phrase = f"{phrase} {w}" if phrase else w
            if len(phrase) > MAX_NAME_CHARS:
                break
            if is_name(phrase):
                out.setdefault(phrase)
    return list(out)


__all__ = ["MAX_NAME_CHARS", "MIN_NAME_CHARS", "document_name", "is_name", "name_key",
           "name_phrases", "words"]
