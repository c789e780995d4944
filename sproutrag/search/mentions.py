"""Documents the question names in their text: a company, a party, a case (a mention).

A question about one of many look-alike documents names what it is about ("What does the
agreement with Wollaston School say about ...", "X's revenue in 2019"). The name is
rarely a document's title (the titles of look-alikes are alike: "Non-disclosure
agreement"), but it is written in the document's text and in no other searched one's.
Leaves are scored alone, so the look-alikes' leaves that answer the question's words
compete with the named document's on equal terms; search within the named document does
not have that loss (issue 29; docs/whole-corpus.md, rule 23).

The question's names are its entities (`sproutrag.search.entities.question_entities`).
A searched document is mentioned when it is the only searched document whose text writes
one of them (as whole words): an entity two searched documents write ("Receiving Party",
"Agreement") names neither.

Pure functions over strings (no model, no database).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sproutrag.names import folded


def entity_holders(entities: list[str], word_texts: Mapping[str, str]
                   ) -> dict[str, list[str]]:
    """entity -> the documents of WORD_TEXTS (doc_id -> its text as
    `sproutrag.names.mention_words` gives it: accents folded) that write it as whole
    words, accents folded too ("nestle" and "nestlé" alike; rule 53), for each of
    ENTITIES (`question_entities`: words joined by one space), in their order."""
    phrases = {e: f" {folded(e)} " for e in entities}
    return {e: [d for d, text in word_texts.items() if phrase in text]
            for e, phrase in phrases.items()}


def mentioned_documents(entities: list[str], word_texts: Mapping[str, str]) -> list[str]:
    """The documents of WORD_TEXTS (doc_id -> its text as `sproutrag.names.mention_words`
    gives it) that are the only one to write one of ENTITIES (`question_entities`: words
    joined by one space) as whole words (`entity_holders`), in the order of the
    entities."""
    return named_by(entity_holders(entities, word_texts))


def named_by(holders: Mapping[str, list[str]], dominant: Mapping[str, str] | None = None
             ) -> list[str]:
    """The documents that are an entity's only holder in HOLDERS (`entity_holders`), or
    the DOMINANT writer of an entity two or more hold (`dominant_writers`), each once, in
    the order of the entities."""
    out: dict[str, None] = {}
    for entity, docs in holders.items():
        if len(docs) == 1:
            out.setdefault(docs[0])
        elif dominant and entity in dominant:
            out.setdefault(dominant[entity])
    return list(out)


def dominant_writers(holders: Mapping[str, list[str]], word_texts: Mapping[str, str],
                     ratio: float) -> dict[str, str]:
    """entity -> the document that writes it at least RATIO times as often per word of
    its text as every other holder, for the entities of HOLDERS (`entity_holders` over
    WORD_TEXTS) that two or more documents write: a report is about the company it names
    on every page, not the ones it cites (docs/whole-corpus.md, rule 35)."""
    out = {}
    for entity, docs in holders.items():
        if len(docs) < 2:
            continue
        written = re.compile(rf"(?<= ){re.escape(folded(entity))}(?= )")  # "x x": twice
        rates = sorted(((len(written.findall(word_texts[d]))
                         / max(1, word_texts[d].count(" ") - 1), d) for d in docs),
                       reverse=True)
        if rates[0][0] >= ratio * rates[1][0]:
            out[entity] = rates[0][1]
    return out


__all__ = ["dominant_writers", "entity_holders", "mentioned_documents", "named_by"]
