"""Which documents a corpus-wide question searches alone, as a query restricted to their
doc_ids would search them (their own statistics, no weights; docs/whole-corpus.md):

- the documents the question names (`Searched.named`), when they hold ANCHOR_LEAVES
  leaves together (rule 31), or ALONE_OPENING_LEAVES each with an entity of the question
  in its opening (rule 65); not while an entity names no document (rule 84);
- else, when the question compares ("or", "compare", "compared"), the first stage's first
  two documents, when each holds ALONE_OPENING_LEAVES leaves and the documents the
  question names are among them (rule 90). Two look-alike subjects a question describes
  are most often the first stage's first two; searched with the others, one subject's
  look-alikes or the other's weighted units take all k.

Without either, None: the search goes on over the first stage's documents.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sproutrag.search.entities import question_entities
from sproutrag.search.name_free import all_open_with

if TYPE_CHECKING:  # searched.py imports this module
    from sproutrag.search.searched import Searched

#: A question that compares two subjects writes one of these words (rule 90).
COMPARES = re.compile(r"\b(or|compare|compared)\b", re.IGNORECASE)


def alone_documents(found: Searched, query: str, anchor_leaves: int,
                    opening_leaves: int) -> list[str] | None:
    """The documents FOUND's question (QUERY) searches alone, in the searched order, or
    None (the rules above; OPENING_LEAVES 0: never by an opening nor a comparison)."""
    if found.named and not found.unnamed and (
            found.long or opening_named(found, query, anchor_leaves, opening_leaves)):
        return [d for d in found.docs if d in found.named]
    return compared_pair(found, query, opening_leaves)


def opening_named(found: Searched, query: str, anchor_leaves: int,
                  opening_leaves: int) -> bool:
    """Whether FOUND's named documents hold fewer than ANCHOR_LEAVES leaves together but
    at least OPENING_LEAVES (0: never) and each writes an entity of QUERY in its opening
    (rule 65)."""
    return all_open_with(found.stored, found.named, question_entities(query),
                         opening_leaves, anchor_leaves)


def compared_pair(found: Searched, query: str, opening_leaves: int) -> list[str] | None:
    """The first stage's first two documents of FOUND when QUERY compares, each holds
    OPENING_LEAVES leaves (0: never) and every document QUERY names is one of them."""
    two = list(found.docs[:2])
    if (len(two) < 2 or opening_leaves <= 0 or not COMPARES.search(query)
            or not set(found.named) <= set(two)
            or any(found.stored[d].tree.n < opening_leaves for d in two)):
        return None
    return two
