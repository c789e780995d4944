"""Documents the question names in their text: a company, a party, a case (a mention).

A question about one of many look-alike documents names what it is about ("What does the
agreement with Wollaston School say about ...", "X's revenue in 2019"). The name is
rarely a document's title (the titles of look-alikes are alike: "Non-disclosure
agreement"), but it is written in the document's text and in no other searched one's.
Leaves are scored alone, so the look-alikes' leaves that answer the question's words
compete with the named document's on equal terms; search within the named document does
not have that loss (issue 29; docs/results.md, rule 23).

The question's entities are its runs of capitalised words (with "of", "the", "for", "&"
between them; "3M" counts as capitalised; initials such as "A." in "Richard A. Bearse" join
the run), stopwords trimmed from their ends, as `words`
normalises them; a single capitalised word that opens a sentence is no entity ("Under",
"Some").
A searched document is mentioned when it is the only searched document whose text
writes one of them (as whole words): an entity two searched documents write ("Receiving
Party", "Agreement") names neither.

Pure functions over strings (no model, no database).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from sproutrag.stopwords import STOPWORDS

#: Lower-case words that may join two capitalised words of one name.
_JOINERS = frozenset({"of", "the", "for", "&", "de", "du", "la", "von", "van"})
#: A word, or initials before a capitalised word ("Richard A. Bearse", "J.K. Rowling": the
#: dots do not end a sentence there).
_TOKEN = re.compile(r"(?:[A-Z]\.)+(?=\s+[A-Z])|\w+(?:['’.&-]\w+)*|&")
#: What may separate two words of one run: spaces, or nothing else.
_GAP = re.compile(r"\s+")
#: The shortest entity ("IBM", "Eli"): shorter ones ("3M", "GE") name too much by chance.
MIN_ENTITY_CHARS = 3
_POSSESSIVE = re.compile(r"['’]s$")
#: What ends a sentence: a capitalised word after it (or first) opens the next.
_SENTENCE_END = ".!?:;"


def question_entities(query: str) -> list[str]:
    """The runs of capitalised words of QUERY (joined by `_JOINERS`; not one word opening a
    sentence), lower-cased, their words joined by one space, stopwords trimmed from both
    ends, each once, in order; only those of 3 characters or more, not only stopwords
    and digits. Computed once per question (the first stage, the read and the boosts of
    one search ask for them)."""
    return list(_entities(query))


@functools.lru_cache(maxsize=1024)
def _entities(query: str) -> tuple[str, ...]:
    runs: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    end = 0
    for m in _TOKEN.finditer(query):
        word, gap = m.group(), query[end:m.start()]
        before = gap.rstrip() or (query[end - 1] if end else "")
        end = m.end()
        joined = not gap or _GAP.fullmatch(gap) is not None
        opens = not before or before[-1] in _SENTENCE_END
        if word[0].isupper() or (word[0].isdigit() and any(c.isupper() for c in word)):
            if current and joined:
                current.append(word)
            else:
                current = [word]
                runs.append((opens, current))
        elif current and joined and word.lower() in _JOINERS:
            current.append(word)
        else:
            current = []
    out: dict[str, None] = {}
    for opens, run in runs:
        while run and run[-1].lower() in _JOINERS:
            run.pop()
        if opens and len(run) == 1:
            continue
        ws = re.findall(r"\w+", " ".join(_POSSESSIVE.sub("", w) for w in run).lower())
        while ws and (ws[0] in STOPWORDS or ws[0] in _JOINERS):
            ws.pop(0)
        while ws and (ws[-1] in STOPWORDS or ws[-1] in _JOINERS):
            ws.pop()
        name = " ".join(ws)
        if len(name) >= MIN_ENTITY_CHARS and not all(w in STOPWORDS or w.isdigit() for w in ws):
            out.setdefault(name)
    return tuple(out)


def entity_holders(entities: list[str], word_texts: Mapping[str, str]
                   ) -> dict[str, list[str]]:
    """entity -> the documents of WORD_TEXTS (doc_id -> its text as
    `sproutrag.names.words` gives it) that write it as whole words, for each of ENTITIES
    (`question_entities`: words joined by one space), in their order."""
    return {e: [d for d, text in word_texts.items() if f" {e} " in text] for e in entities}


def mentioned_documents(entities: list[str], word_texts: Mapping[str, str]) -> list[str]:
    """The documents of WORD_TEXTS (doc_id -> its text as `sproutrag.names.words` gives
    it) that are the only one to write one of ENTITIES (`question_entities`: words joined
    by one space) as whole words, in the order of the entities."""
    return named_by(entity_holders(entities, word_texts))


def named_by(holders: Mapping[str, list[str]]) -> list[str]:
    """The documents that are an entity's only holder in HOLDERS (`entity_holders`), each
    once, in the order of the entities."""
    out: dict[str, None] = {}
    for docs in holders.values():
        if len(docs) == 1:
            out.setdefault(docs[0])
    return list(out)


__all__ = ["MIN_ENTITY_CHARS", "entity_holders", "mentioned_documents", "named_by",
           "question_entities"]
