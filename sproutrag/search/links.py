"""Documents named by the question or by the leading document (a link hop).

A question about two documents often names only the first: the second is about an entity
the first one names (HotpotQA's bridge questions; a report that cites another case or
company). No score of the question against the second document finds it, and a second
hop by likeness finds the first document's look-alikes as often (docs/whole-corpus.md, rules
5-10). What the two share is the second one's name. A document's name is its title (a
JSONL line's "title") or else its first line when heading-like; after a corpus-wide
query's nodes are scored, the best leaf u1 leads (its document d1), and every other
searched document whose name is written in the question or in u1's text gets
`LINK_WEIGHT` added to the rank score of all its nodes (z-units), and d1 then gains
`LEADER_WEIGHT`. Fitted on the three train pools and adopted by their rules on dev
(docs/whole-corpus.md, rules 12 and 14; `bench/research/title_links.py`,
`bench/research/name_fetch.py`). The names are looked for in u1, not in d1's whole text
(rule 18): a long leader (a report, a contract) writes the names of many documents of its
corpus, which would all gain the weight. A searched document that is the only one whose
text writes an entity the question names (`sproutrag.search.mentions`) gains
`MENTION_WEIGHT` (the larger of it and its link points; rule 23).

Pure functions over strings and arrays (no model, no database).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sproutrag.names import (  # noqa: F401 - also importable from here
    MAX_NAME_CHARS,
    MIN_NAME_CHARS,
    document_name,
    first_word_key,
    is_name,
    name_key,
    name_phrases,
    words,
    written_in,
)
from sproutrag.search.node_scores import NodeScores

#: The rank-score points (z-units) a linked document's nodes gain: fitted on the three
#: train pools with the fetch on (1, 1.5, 2, 3 tried; docs/whole-corpus.md, rules 12 and 14).
LINK_WEIGHT = 3.0
#: The points the leading document's nodes gain when it links to a searched document (a
#: link is evidence that it is the question's first document): fitted with LINK_WEIGHT
#: (0, 0.5, 1, 2 tried; docs/whole-corpus.md, rule 14).
LEADER_WEIGHT = 2.0
#: Documents the first stage did not choose that a corpus-wide query adds when its best
#: unit (or the question) writes their name: fitted on the three train pools (1, 2, 4
#: tried; docs/whole-corpus.md, rule 13).
FETCH_NAMED = 1
#: The points a searched document gains when it is the only one whose text writes an
#: entity the question names (a company, a party, a case): fitted on the four train pools
#: (0.5, 1, 2, 3 tried; docs/whole-corpus.md, rule 23).
MENTION_WEIGHT = 3.0
#: Documents the first stage did not choose that a corpus-wide query adds when each is the
#: only document of the corpus whose text writes an entity of the question (rule 27: 1,
#: fitted on the four train pools, 0, 1, 2 tried), or the single one of its writers whose
#: opening writes it (rule 92: 2, so that a question about two places or companies the
#: first stage missed can fetch both; docs/whole-corpus.md).
FETCH_MENTIONED = 2
#: The points instead of MENTION_WEIGHT when the mentioned documents hold at least
#: `anchor_leaves` (32) leaves together (long documents: agreements, reports), where a
#: mentioned document is the question's: fitted on the four train pools (3, 6, 10, 20
#: tried; docs/whole-corpus.md, rule 30).
LONG_MENTION_WEIGHT = 6.0


def linked_documents(names: Mapping[str, str | None], leading: str, leading_text: str,
                     query: str) -> list[str]:
    """The documents of NAMES (doc_id -> name, the searched documents) other than LEADING
    whose name is written (`written_in`) in QUERY or in LEADING_TEXT (the leading
    document's best unit). A name two searched documents share names neither (a generic
    heading such as "non-disclosure agreement")."""
    count = Counter(n for n in names.values() if n)
    q, text = query.lower(), leading_text.lower()
    return [d for d, n in names.items()
            if n and d != leading and count[n] == 1
            and (written_in(n, q) or written_in(n, text))]


def best_leaf(leaf_ranks: Mapping[str, np.ndarray]) -> tuple[str, int] | None:
    """(doc_id, leaf) of the best leaf by LEAF_RANKS (each searched document's leaves'
    rank scores; ties to the greater doc_id), None when no document has a leaf: the unit
    that leads a corpus-wide query, whose names are followed and fetched."""
    best = max(((float(r.max()), d) for d, r in leaf_ranks.items() if len(r)), default=None)
    if best is None:
        return None
    return best[1], int(np.argmax(leaf_ranks[best[1]]))


@dataclass(frozen=True)
class Links:
    """What a corpus-wide query needs to follow names: the searched documents' NAMES, a
    leaf's text on demand (UNIT_TEXT(doc_id, leaf): only the best leaf is asked), the
    QUERY, the WEIGHT its linked documents gain and the points the leading document gains
    when it links to any (LEAD); MENTION: the points the MENTIONED documents gain (each the
    only searched one whose text writes an entity of the question,
    `sproutrag.search.mentions`; rule 23; the long mention weight when they hold
    `anchor_leaves` leaves together, rule 30: `SearchedDocuments.long` decides)."""

    names: Mapping[str, str | None]
    unit_text: Callable[[str, int], str]
    query: str
    weight: float = LINK_WEIGHT
    lead: float = LEADER_WEIGHT
    mention: float = 0.0
    mentioned: tuple[str, ...] = ()

    def boosts(self, leaf_ranks: Mapping[str, np.ndarray]) -> dict[str, float]:
        """doc_id -> the points its nodes gain, given each searched document's leaves'
        rank scores (LEAF_RANKS; the best leaf leads, and names are looked for in its
        text): the link points, and for a mentioned document the larger of them and the
        mention's. Empty when nothing links or is mentioned (no text is read for links
        when the weight is 0 or no searched document has a name)."""
        out = self._linked(leaf_ranks)
        named = [d for d in self.mentioned if d in leaf_ranks] if self.mention > 0 else []
        for d in named:
            out[d] = max(out.get(d, 0.0), self.mention)
        return out

    def _linked(self, leaf_ranks: Mapping[str, np.ndarray]) -> dict[str, float]:
        named = {d: self.names.get(d) for d in leaf_ranks}
        if self.weight <= 0 or not any(named.values()):
            return {}
        best = best_leaf(leaf_ranks)
        if best is None:
            return {}
        leader = best[0]
        linked = linked_documents(named, leader, self.unit_text(*best), self.query)
        out = {d: self.weight for d in linked}
        if linked and self.lead > 0:
            out[leader] = self.lead
        return out

    def apply(self, scores: Mapping[str, NodeScores], n_leaves: Mapping[str, int]
              ) -> dict[str, NodeScores]:
        """SCORES (per document, its nodes) with the linked documents' points added to
        the rank score of all their nodes; N_LEAVES: each tree's leaves (nodes 0..n-1)."""
        boosts = self.boosts({d: s.rank[: n_leaves[d]] for d, s in scores.items()})
        return {d: NodeScores(s.cosine, s.rank + boosts[d]) if d in boosts else s
                for d, s in scores.items()}


__all__ = ["FETCH_MENTIONED", "FETCH_NAMED", "LEADER_WEIGHT", "LINK_WEIGHT",
           "LONG_MENTION_WEIGHT", "MENTION_WEIGHT", "Links", "best_leaf", "document_name",
           "first_word_key", "is_name", "linked_documents", "name_key", "name_phrases", "words",
           "written_in"]
