"""Rule 66 of docs/whole-corpus.md: "alone" keeps room for the question's other subject
(stop 79).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_guard.py \
        --split train|dev [--pools lookalike paragraphs ...] [--variants guard opening both]
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_guard.py \
        --split dev --timing|--timing70|--timing72|--timing77|--timing84

Rules 31 and 65 search only the documents the question names (`Searched.named`: an
entity's only holder among the searched documents) once they are long enough. A
question about two subjects whose second subject is also written by other documents (a
competitor cited in a look-alike report, a case cited in another decision) names only
the first, and "alone" then searches one document of the two. Variants, each patched into
the shipped `SearchedDocuments` in this process:

- `guard`: "alone" only when every entity of the question that a searched document
  writes is written by a named one;
- `opening`: an entity two or more searched documents write names the one of them that
  writes it in its opening (`name_free.opens_with`, its first 300 characters), when
  exactly one does (the named documents then gain the mention weight, and "alone" takes
  them all);
- `both`: `opening`, then `guard`;
- `keep` (rule 67, `--variants keep`): where "alone" starts as today, it also searches,
  for each entity two or more searched documents write and no named one writes in its
  opening, the one holder that does (exactly one), if it holds `alone_opening_leaves`
  leaves;
- `floor16` (rule 68, `--variants floor16`): `search.name_free_leaves` 16 (rule 62's
  blend in documents of 16 leaves or more), within the questions' documents too;
  `floor32` the same at 32, the search before rule 68 once 16 is the default;
- `lead` (rule 70, `--variants lead`): `opening` where the one holder that opens with the
  entity also holds `alone_opening_leaves` leaves and is the entity's first writer in the
  searched order (the first stage's); `before70` the search before rule 70 once it is
  the default; `lead2` (rule 71; run again as rule 83 and shipped at stop 82, so on
  main it equals today's search): rule 70, then the lead counted without the writers
  another entity of the question names; `openfree` (rule 72): rule 62's name-free
  question also less the words of the gated documents' openings (within too);
  `before72` the search before rule 72 once it is the default; `leader` (rule 73): a
  question that names no searched document is searched in the first stage's first
  document alone when it holds `alone_opening_leaves` leaves; `freeonly` (rule 74): the
  gated documents scored by the name-free question's vector alone (within too);
  `freetitled` (rule 75): rule 74, but a document whose name is one of the question's
  entities keeps the blend; `share0.625`, `share0.75`, `share0.875` (rule 76): the
  name-free question's share of rule 72's blend; `titledpart0.75`, `titledpart1` (rule
  77): that share, but a document with a line that is one of the question's entities
  keeps the blend; `before77` the search before rule 77 once it is the default;
  `firstopener` (rule 84): an entity two or more writers open with is kept to its first
  writer in the first stage's order when that one opens with it; `firstguard`: that, and
  "alone" waits while an entity names no document though searched ones write it;
  `firstguard2`: that, and while an entity is written by no searched document;
  `guardonly` (rule 86): rule 84's guard with rule 70's single opener; `before84` the
  search before rule 84; `firstminority` (rule 87): rule 84 while the openers are at
  most half of the searched documents; `pairopener` (rule 88): an entity left with two
  or more writers kept to its single opener whatever its rank, when that opener's
  opening also writes another of the question's entities; `soleopener` the same without
  the second entity; `rankfirst` (rule 89): `pairopener`, then an entity still left with
  two or more writers, at most half of the searched documents, none titled by it, kept to
  its first writer in the first stage's order; `unnamedweight` (an exploration after
  rule 89, no rule written): while an entity names no document, the named ones gain no
  mention weight; `pairfirst` (rule 90): where "alone" does not start, a question that
  compares ("or", "compare") and names no document outside the first stage's first two
  searches those two alone, each of `alone_opening_leaves` leaves (shipped in 0.23.6, so
  it equals today's since); `caption` (rule 91): an entity that contains two others of
  the question, both kept to one document whose opening writes them, is kept to it too
  when none of its writers opens with it; `fetchopener` (rule 92): an unwritten entity
  fetches its single opener among up to 8 writers too, at most two documents a question
  (both shipped in 0.24.0); `pairsole` (rule 93): a name still written by two or more
  names its single opener when the question's other names each name one other document;
  `placepair` (rule 94): rule 88's second entity is not one the question joins to the
  first by a comma alone, as a place is written ("Lincoln, Nebraska"); `topicfree` (rule
  95): rule 93's other entities leave out those more than half of the searched
  documents write (both shipped in 0.24.2, so both equal today's since).

Per pool of the split (`hierarchy.open_pool`'s; `lookalike` is `data/lookalike-reports`,
its test split all 72 documents), through each pool's database Retriever: tree mode, corpus-wide
(no doc_ids), k = 1, 3, 5, unit IE and char-IE averaged over k (the project's metric),
paired per question against today's search, and within each question's documents
(today's, the same for every variant: "alone" and the naming act only without doc_ids)
for the ratio. Not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

from sproutrag.learn.metrics import gold_units, score_query  # noqa: E402
from sproutrag.names import folded, mention_words  # noqa: E402
from sproutrag.search import alone as A  # noqa: E402
from sproutrag.search import name_free as N  # noqa: E402
from sproutrag.search import searched as S  # noqa: E402
from sproutrag.search.entities import place_pairs, question_entities  # noqa: E402
from sproutrag.search.name_free import opening_vectors, opens_with  # noqa: E402

POOLS = ("lookalike", "paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
VARIANTS = ("guard", "opening", "both")
#: Rule 67's variant (its own run: `--variants keep`).
KEEP = "keep"
#: Rule 68's variant: `search.name_free_leaves` 16 (`--variants floor16`).
FLOOR16 = "floor16"
#: The search before rule 68 (`--variants floor32`), once rule 68 is the default.
FLOOR32 = "floor32"
#: Rule 70's variant (`--variants lead`).
LEAD = "lead"
#: Rule 71's variant (`--variants lead2`).
LEAD2 = "lead2"
#: Rule 72's variant (`--variants openfree`).
OPENFREE = "openfree"
#: Rule 73's variant (`--variants leader`).
LEADER = "leader"
#: Rule 74's variant (`--variants freeonly`).
FREEONLY = "freeonly"
#: Rule 75's variant (`--variants freetitled`).
FREETITLED = "freetitled"
#: Rule 76's variants (`--variants share0.625 share0.75 share0.875`): the name-free
#: question's share of the blend.
SHARES = {"share0.625": 0.625, "share0.75": 0.75, "share0.875": 0.875}
#: Rule 77's variants (`--variants titledpart0.75 titledpart1`).
TITLED_PARTS = {"titledpart0.75": 0.75, "titledpart1": 1.0}
#: Rule 84's variants (`--variants firstopener firstguard firstguard2`).
FIRST_OPENER, FIRST_GUARD, FIRST_GUARD2 = "firstopener", "firstguard", "firstguard2"
#: Rule 86's variant (`--variants guardonly`): rule 84's guard without its first part;
#: `before84` the search before rule 84 once it is the default.
GUARD_ONLY, BEFORE84 = "guardonly", "before84"
#: Rule 87's variant (`--variants firstminority`).
FIRST_MINORITY = "firstminority"
#: Rule 88's variants (`--variants pairopener soleopener`).
PAIR_OPENER, SOLE_OPENER = "pairopener", "soleopener"
#: Rule 89's variant (`--variants rankfirst`), on top of `pairopener`.
RANK_FIRST = "rankfirst"
#: An exploration after rule 89 (`--variants unnamedweight`; no rule written): while an
#: entity names no document (`Searched.unnamed`), the named ones gain no mention weight.
UNNAMED_WEIGHT = "unnamedweight"
#: Rule 90's variant (`--variants pairfirst`).
PAIR_FIRST = "pairfirst"
_COMPARES = re.compile(r"\b(or|compare|compared)\b", re.IGNORECASE)
#: Rule 91's variant (`--variants caption`) and rule 92's (`--variants fetchopener`).
CAPTION = "caption"
FETCH_OPENER = "fetchopener"
#: Rule 93's variant (`--variants pairsole`).
PAIR_SOLE = "pairsole"
#: Rule 94: a place written "City, State" is not a caption's two parties (rule 88).
PLACE_PAIR = "placepair"
#: Rule 95: rule 93's other entities leave out the searched documents' topic words.
TOPIC_FREE = "topicfree"
#: The search before rule 77, once it is the default (`--variants before77`): rule 72's
#: even blend in every gated document.
BEFORE77 = "before77"
#: The search before rule 72, once it is the default (`--variants before72`).
BEFORE72 = "before72"
#: The search before rule 70, once it is the default (`--variants before70`).
BEFORE70 = "before70"
KS = (1, 3, 5)

_today_alone = S.SearchedDocuments.alone
_today_holders = S.SearchedDocuments.holders
_today_own = N._own
_today_own_writers = S.own_writers
_today_read = S.SearchedDocuments._read
_today_mentioned = S.SearchedDocuments.mentioned_elsewhere
_today_parties = N._parties
_today_second = N._second_subjects
_QUERY = [""]  # the question being searched, for `placepair`


def _read_unnamed_unweighted(self, docs, params, query, ranked, *, texts=False):
    """`_read`, but while an entity names no document the named ones gain no mention
    weight (their links are made with no mentioned documents)."""
    found = _today_read(self, docs, params, query, ranked, texts=texts)
    if not found.unnamed or found.links is None:
        return found
    return found._replace(links=self.links(query, found.loaded, ranked, (), found.long))
#: The rule 62 vectors as `opening_vectors` gives them. Since rule 80 the product calls
#: them through `name_free.own_questions`, so the variants below that replace
#: `S.opening_vectors` (rules 72-77) act only at the commits they ran at (docs/whole-corpus.md).
_today_opening_vectors = opening_vectors


def _before72_vectors(query, qvec, entities, stored, embed, floor=16):
    """`opening_vectors` before rule 72: the name-free question less the names alone."""
    from sproutrag.search.name_free import blend, name_free

    if not entities:
        return {}
    docs = [d for d, st in stored.items() if opens_with(st.texts, st.tree.n, entities, floor)]
    free = name_free(query, entities) if docs else ""
    if not free or free == query:
        return {}
    return dict.fromkeys(docs, blend(qvec, embed([free])[0]))


def _blend_and_free(query, qvec, entities, stored, embed, floor):
    """(rule 72's `opening_vectors`, the unit vector of its name-free question, or None
    when nothing is gated in)."""
    seen = []

    def keep(texts):
        seen.append(embed(texts))
        return seen[-1]

    got = _today_opening_vectors(query, qvec, entities, stored, keep, floor)
    if not got:
        return got, None
    free = np.asarray(seen[-1][0], np.float32)
    return got, free / max(float(np.linalg.norm(free)), 1e-12)


def _freeonly_vectors(query, qvec, entities, stored, embed, floor=16):
    """`opening_vectors` (rule 72's name-free question) with the name-free question's
    vector alone, not blended with the question's (rule 74)."""
    got, free = _blend_and_free(query, qvec, entities, stored, embed, floor)
    return dict.fromkeys(got, free) if got else got


def _freetitled_vectors(query, qvec, entities, stored, embed, floor=16):
    """Rule 74's vectors, but a gated document whose name (`names.document_name` of its
    first leaf) is one of ENTITIES keeps rule 72's blend (rule 75)."""
    from sproutrag.names import document_name, folded

    got, free = _blend_and_free(query, qvec, entities, stored, embed, floor)
    named = {folded(e) for e in entities}
    return {d: v if folded(document_name(stored[d].texts[0]) or "") in named else free
            for d, v in got.items()}


def _share_vectors(share, titled=False):
    """Rule 72's vectors with the name-free question's vector at SHARE of the blend, the
    question's at 1 - SHARE (rule 76); with TITLED, rule 72's even blend for a document
    with a line that is an entity of the question (a part titled by the name; rule 77)."""
    from sproutrag.search.name_free import blend, titled_by

    def vectors(query, qvec, entities, stored, embed, floor=16):
        got, free = _blend_and_free(query, qvec, entities, stored, embed, floor)
        if not got:
            return got
        v = blend(qvec, free, share)
        return {d: b if titled and titled_by(stored[d].texts, entities) else v
                for d, b in got.items()}

    return vectors


def _openfree_vectors(query, qvec, entities, stored, embed, floor=16):
    """`opening_vectors` with the name-free question also less every word (not a
    stopword) of the gated documents' openings (rule 72)."""
    import re

    from sproutrag.search.name_free import blend, name_free, opening
    from sproutrag.stopwords import STOPWORDS

    if not entities:
        return {}
    docs = [d for d, st in stored.items() if opens_with(st.texts, st.tree.n, entities, floor)]
    if not docs:
        return {}
    words = set()
    for d in docs:
        words |= set(re.findall(r"\w+", opening(stored[d].texts).lower())) - STOPWORDS
    free = name_free(query, [*entities, *sorted(words)])
    if not re.search(r"\w", free) or free == query:
        return {}
    return dict.fromkeys(docs, blend(qvec, embed([free])[0]))


def _opening_holders(self, query, loaded, ranked, order=()):
    """`holders`, each entity two or more write kept to the one that opens with it
    (when exactly one does)."""
    holders, word_texts = _today_holders(self, query, loaded, ranked)
    out = {}
    for e, docs in holders.items():
        if len(docs) >= 2:
            opening = [d for d in docs if opens_with(loaded[d][1].texts, loaded[d][1].tree.n,
                                                      [e], floor=1)]
            docs = opening if len(opening) == 1 else docs
        out[e] = docs
    return out, word_texts


def _holders_before70(self, query, loaded, ranked, order=()):
    """`holders` before rule 70: every writer of an entity kept."""
    return _today_holders(self, query, loaded, ranked)


def _leading_holders(self, query, loaded, ranked, order=()):
    """`holders` before rule 70, each entity two or more write kept to the one that opens
    with it when exactly one does, it holds `alone_opening_leaves` leaves and it is the
    entity's first writer in ORDER (the first stage's; rule 70 as its runs had it)."""
    holders, word_texts = _today_holders(self, query, loaded, ranked)
    floor = max(self.settings.alone_opening_leaves, 1)
    order = {d: i for i, d in enumerate(order)}
    out = {}
    for e, docs in holders.items():
        docs = sorted(docs, key=lambda d: order.get(d, len(order)))
        if len(docs) >= 2:
            opening = [d for d in docs if opens_with(loaded[d][1].texts, loaded[d][1].tree.n,
                                                      [e], floor=1)]
            if (len(opening) == 1 and opening[0] == docs[0]
                    and loaded[docs[0]][1].tree.n >= floor):
                docs = opening
        out[e] = docs
    return out, word_texts


def _leading2_holders(self, query, loaded, ranked, order=()):
    """`holders` (rule 70's), then each entity two or more still write kept to the one
    that alone opens with it, holds `alone_opening_leaves` leaves and comes first in ORDER
    of its writers that no other entity names (rule 71)."""
    holders, word_texts = _today_holders(self, query, loaded, ranked, order)
    floor = max(self.settings.alone_opening_leaves, 1)
    rank = {d: i for i, d in enumerate(order)}
    out = {}
    for e, docs in holders.items():
        if len(docs) >= 2 and order:
            named_else = {ds[0] for f, ds in holders.items() if f != e and len(ds) == 1}
            rest = [d for d in docs if d not in named_else]
            opening = [d for d in docs if opens_with(loaded[d][1].texts, loaded[d][1].tree.n,
                                                      [e], floor=1)]
            if rest and len(opening) == 1:
                first = min(rest, key=lambda d: rank.get(d, len(rank)))
                if opening[0] == first and loaded[first][1].tree.n >= floor:
                    docs = [first]
        out[e] = docs
    return out, word_texts


def _leader_alone(self, found, query):
    """`alone`, or the first stage's first document alone when the question names no
    searched document and it holds `alone_opening_leaves` leaves (rule 73)."""
    docs = _today_alone(self, found, query)
    if docs is not None or found.named or not found.docs:
        return docs
    first = found.docs[0]
    floor = self.settings.alone_opening_leaves
    if floor > 0 and first in found.stored and found.stored[first].tree.n >= floor:
        return [first]
    return None


def _guarded_alone(self, found, query):
    """`alone`, but None when an entity the searched documents write has no named
    holder."""
    docs = _today_alone(self, found, query)
    if docs is None:
        return None
    holders, _ = self.holders(query, found.loaded, True)
    named = set(found.named)
    if any(ds and not named.intersection(ds) for ds in holders.values()):
        return None
    return docs


def _kept_alone(self, found, query):
    """`alone`, with the own document of each other subject (rule 67): for each entity
    two or more searched documents write and no named one opens with, the one holder
    that does (exactly one) and holds `alone_opening_leaves` leaves."""
    docs = _today_alone(self, found, query)
    if docs is None:
        return None
    holders, _ = self.holders(query, found.loaded, True)
    stored, named = found.stored, set(found.named)
    floor = self.settings.alone_opening_leaves
    added: list[str] = []
    for e, ds in holders.items():
        if len(ds) < 2 or any(opens_with(stored[d].texts, stored[d].tree.n, [e], floor=1)
                              for d in ds if d in named):
            continue
        openers = [d for d in ds if opens_with(stored[d].texts, stored[d].tree.n, [e],
                                               floor=max(floor, 1))]
        if len(openers) == 1 and openers[0] not in named and openers[0] not in added:
            added.append(openers[0])
    return docs + [d for d in found.docs if d in added]


def _first_opener_own(docs, openers, stored, rank, floor, others=()):
    """`name_free._own`, but with two or more OPENERS the entity is kept to its first
    writer by RANK (not among OTHERS) when that writer is one of them and holds FLOOR
    leaves (rule 84)."""
    rest = [d for d in docs if d not in others]
    if len(docs) < 2 or not openers or not rest:
        return docs
    first = min(rest, key=lambda d: rank.get(d, len(rank)))
    return [first] if first in openers and stored[first].tree.n >= floor else docs


def _rule70_own(docs, openers, stored, rank, floor, others=()):
    """`name_free._own` before rule 84: kept only to the single opener."""
    rest = [d for d in docs if d not in others]
    if len(docs) < 2 or len(openers) != 1 or not rest:
        return docs
    first = min(rest, key=lambda d: rank.get(d, len(rank)))
    return [first] if openers[0] == first and stored[first].tree.n >= floor else docs


def _first_minority_own(docs, openers, stored, rank, floor, others=()):
    """Rule 84's `_own`, but two or more OPENERS count only while they are at most half
    of the searched documents (RANK): a word most of them open with is their topic
    ("Kawasaki" in every case report's title), not a name (rule 87)."""
    if len(openers) >= 2 and len(openers) > len(rank) / 2:
        return docs
    return _first_opener_own(docs, openers, stored, rank, floor, others)


def _opener_own_writers(pair: bool, rank_first: bool = False):
    """`own_writers`, then each entity it leaves with two or more writers kept to its
    single opener (holding FLOOR leaves) whatever its rank; with PAIR only when that
    opener's opening also writes another entity of the question it writes, neither a part
    of the other (rule 88: `pairopener`; `soleopener` without PAIR)."""
    def own(holders, stored, order, floor):
        kept = _today_own_writers(holders, stored, order, floor)
        if floor <= 0:
            return kept
        def opens(d, e):
            return opens_with(stored[d].texts, stored[d].tree.n, [e], floor=1)
        for e, docs in kept.items():
            if len(docs) < 2:
                continue
            openers = [d for d in docs if opens(d, e)]
            if len(openers) != 1 or stored[openers[0]].tree.n < floor:
                continue
            o = openers[0]
            if not pair or any(f != e and f not in e and e not in f and o in ds and opens(o, f)
                               for f, ds in holders.items()):
                kept[e] = [o]
        if rank_first:  # rule 89: the first writer by rank, when few write the entity
            rank = {d: i for i, d in enumerate(order)}
            for e, docs in kept.items():
                if 2 <= len(docs) <= len(rank) / 2 and not any(
                        f" {folded(e)} " in mention_words(stored[d].texts[0].split("\n")[0])
                        for d in docs):  # no title writes it: a place, not a name
                    first = min(docs, key=lambda d: rank.get(d, len(rank)))
                    if stored[first].tree.n >= floor:
                        kept[e] = [first]
        return kept
    return own


def _pair_first_alone(self, found, query):
    """`alone`, else, when QUERY compares (`_COMPARES`), the documents it names are among
    the first stage's first two and each of those holds `alone_opening_leaves` leaves,
    those two (rule 90)."""
    docs = _today_alone(self, found, query)
    if docs is not None or not self.settings.mention_alone or len(found.docs) < 2:
        return docs
    two = found.docs[:2]
    floor = self.settings.alone_opening_leaves
    if (not _COMPARES.search(query) or not set(found.named) <= set(two) or floor <= 0
            or any(found.stored[d].tree.n < floor for d in two)):
        return None
    return list(two)


def _caption_own_writers(holders, stored, order, floor):
    """`own_writers`, then rule 91 (`name_free._captions`, shipped in 0.24.0): an entity
    that contains two other entities of the question (neither a part of the other), both
    kept to one document D whose opening writes them both and which holds FLOOR leaves,
    is kept to D too, when none of its own writers opens with it (a caption only a citing
    opinion writes whole)."""
    kept = _today_own_writers(holders, stored, order, floor)
    return N._captions(kept, stored, floor) if floor > 0 else kept


def _pair_sole_own_writers(holders, stored, order, floor):
    """`own_writers`, then rule 93 (`name_free._second_subjects`, shipped in 0.24.1): an
    entity still written by two or more is kept to its single opener (FLOOR leaves),
    whatever the order, when every other entity of the question not a part of it (at
    least one) is kept to one document, not that one."""
    kept = _today_own_writers(holders, stored, order, floor)
    if floor <= 0:
        return kept
    openers = {e: [d for d in docs if N._opens(stored, d, e)]
               for e, docs in kept.items() if len(docs) >= 2}
    return N._second_subjects(kept, openers, stored, floor)


def _query_holders(self, query, loaded, ranked, order=()):
    """Today's `holders`, the question kept for `_place_parties`."""
    _QUERY[0] = query
    return _today_holders(self, query, loaded, ranked, order)


def _place_parties(kept, holders, openers, stored, floor, places=()):
    """Rule 88 (`name_free._parties`), its second entity not the other half of a place
    the question writes "City, State" (rule 94, `entities.place_pairs`; shipped in
    0.24.2, where `own_writers` passes the pairs itself)."""
    return _today_parties(kept, holders, openers, stored, floor, place_pairs(_QUERY[0]))


def _topic_free_second(kept, openers, stored, floor):
    """Rule 93 (`name_free._second_subjects`), its other entities without those more than
    half of the searched documents (STORED) write (rule 95, shipped in 0.24.2)."""
    return _today_second(kept, openers, stored, floor)


def _fetch_opener(self, unwritten, skip, allowed):
    """`mentioned_elsewhere`, but rule 92 (`name_free.corpus_owner`, shipped in 0.24.0):
    an unwritten entity's own document is its only writer in the corpus (rule 27) or,
    among two to MAX_MENTION_LOOKUPS writers, the single one whose opening writes it and
    which holds `alone_opening_leaves` leaves; at most two a question."""
    s = self.settings
    if s.fetch_mentioned <= 0 or s.mention_weight <= 0 or self.writing is None:
        return []
    limit = max(s.fetch_mentioned, 2)
    out = []
    for entity in unwritten[:S.MAX_MENTION_LOOKUPS]:
        own = N.corpus_owner(entity, self.writing(entity), self._trees,
                             s.alone_opening_leaves, S.MAX_MENTION_LOOKUPS)
        if own is not None and own not in skip and own not in out and (
                allowed is None or own in allowed):
            out.append(own)
            if len(out) == limit:
                break
    return out


def _alone_before84(self, found, query):
    """`alone` before rule 84's guard."""
    if not (self.settings.mention_alone and found.named):
        return None
    s = self.settings
    if found.long or A.opening_named(found, query, s.anchor_leaves, s.alone_opening_leaves):
        return [d for d in found.docs if d in found.named]
    return None


def _first_guarded_alone(self, found, query, unwritten=False):
    """`alone`, but None while an entity that searched documents write names none of them
    and none of its writers is named, after the lead (rule 84's `firstguard`); with
    UNWRITTEN, also while an entity is written by no searched document (`firstguard2`)."""
    docs = _today_alone(self, found, query)
    if docs is None:
        return None
    holders, _ = self.holders(query, found.loaded, True, found.docs)
    named = set(found.named)
    if any(ds and not named.intersection(ds) for ds in holders.values()):
        return None
    if unwritten and found.unwritten:
        return None
    return docs


def _first_guarded2_alone(self, found, query):
    return _first_guarded_alone(self, found, query, unwritten=True)


def patch(variant: str, r=None) -> None:
    if r is not None:  # rule 62's floor: 16 for rule 68, 32 before it, else the default
        floor = {FLOOR16: 16, FLOOR32: 32}.get(variant, r.name_free_leaves_today)
        r.searching.settings = replace(r.searching.settings, name_free_leaves=floor)
    S.SearchedDocuments.alone = _today_alone
    S.SearchedDocuments.holders = _today_holders
    N._own = _today_own
    S.own_writers = _today_own_writers
    S.SearchedDocuments._read = _today_read
    S.SearchedDocuments.mentioned_elsewhere = _today_mentioned
    N._parties = _today_parties
    N._second_subjects = _today_second
    if variant == PLACE_PAIR:
        S.SearchedDocuments.holders = _query_holders
        N._parties = _place_parties
    if variant == TOPIC_FREE:
        N._second_subjects = _topic_free_second
    if variant == CAPTION:
        S.own_writers = _caption_own_writers
    if variant == PAIR_SOLE:
        S.own_writers = _pair_sole_own_writers
    if variant == FETCH_OPENER:
        S.SearchedDocuments.mentioned_elsewhere = _fetch_opener
    if variant == PAIR_FIRST:
        S.SearchedDocuments.alone = _pair_first_alone
    if variant == UNNAMED_WEIGHT:
        S.SearchedDocuments._read = _read_unnamed_unweighted
    if variant in (PAIR_OPENER, SOLE_OPENER, RANK_FIRST):
        S.own_writers = _opener_own_writers(variant != SOLE_OPENER, variant == RANK_FIRST)
    if variant in (FIRST_OPENER, FIRST_GUARD, FIRST_GUARD2):
        N._own = _first_opener_own
    if variant == FIRST_GUARD:
        S.SearchedDocuments.alone = _first_guarded_alone
    if variant == FIRST_GUARD2:
        S.SearchedDocuments.alone = _first_guarded2_alone
    if variant in (GUARD_ONLY, BEFORE84):
        N._own = _rule70_own
    if variant == FIRST_MINORITY:
        N._own = _first_minority_own
    if variant == BEFORE84:
        S.SearchedDocuments.alone = _alone_before84
    if variant in ("opening", "both"):
        S.SearchedDocuments.holders = _opening_holders
    if variant in ("guard", "both"):
        S.SearchedDocuments.alone = _guarded_alone
    if variant == LEAD:
        S.SearchedDocuments.holders = _leading_holders
    S.opening_vectors = _today_opening_vectors
    if variant == OPENFREE:
        S.opening_vectors = _openfree_vectors
    if variant == FREEONLY:
        S.opening_vectors = _freeonly_vectors
    if variant == FREETITLED:
        S.opening_vectors = _freetitled_vectors
    if variant in SHARES:
        S.opening_vectors = _share_vectors(SHARES[variant])
    if variant == BEFORE77:
        S.opening_vectors = _share_vectors(0.5)
    if variant in TITLED_PARTS:
        S.opening_vectors = _share_vectors(TITLED_PARTS[variant], titled=True)
    if variant == BEFORE72:
        S.opening_vectors = _before72_vectors
    if variant == LEAD2:
        S.SearchedDocuments.holders = _leading2_holders
    if variant == BEFORE70:
        S.SearchedDocuments.holders = _holders_before70
    if variant == LEADER:
        S.SearchedDocuments.alone = _leader_alone
    if variant == KEEP:
        S.SearchedDocuments.alone = _kept_alone


def scores(r, queries, corpus_wide: bool) -> dict[str, tuple[float, float]]:
    """qid -> (unit IE, char-IE) averaged over KS, tree mode."""
    out = {}
    for q in queries:
        gold = [(g["doc_id"], g["start"], g["end"]) for g in q["gold"]]
        units = []
        for d in q["doc_ids"]:
            tid = r.documents.tree_ids([d])[d]
            units += [(d, int(s), int(e)) for s, e in r.tree(d, tid).spans]
        gu = gold_units(units, gold)
        ie, cie = [], []
        for k in KS:
            hits = r.search(q["query"], k=k, doc_ids=None if corpus_wide else q["doc_ids"])
            got = [(h.doc_id, int(s), int(e)) for h in hits for s, e in h.spans]
            s = score_query(got, gold, gu, k=k)
            ie.append(s.ie)
            cie.append(s.char_ie)
        out[q["qid"]] = (100 * float(np.mean(ie)), 100 * float(np.mean(cie)))
    return out


def paired(a: dict, b: dict, i: int) -> str:
    d = np.array([a[q][i] - b[q][i] for q in b])
    se = d.std(ddof=1) / np.sqrt(len(d))
    z = d.mean() / se if se else 0.0
    return f"{d.mean():+.2f} +/- {se:.2f} ({z:+.1f} SE, {int((d != 0).sum())} change)"


def timing(split: str, passes: int = 4) -> None:
    """Rule 68's query cost: the look-alike reports' and the named agreements' SPLIT
    questions, corpus-wide, tree mode, k = 5, encoding included (the blend's second
    forward is the rule's cost), `name_free_leaves` 16 and 32 alternating per question in
    one process, the order swapped each pass, the first pass not counted."""
    import time

    from sproutrag.search.retriever import Retriever

    settings, encoder = H.default_encoder()
    for pool in ("lookalike", "named-contracts"):
        _, questions, _ = H.open_pool(pool, split, settings, encoder)
        qs = [q["query"] for q in questions]
        db = H.OUT / f"db-hierarchy-{pool}-{split}"
        ways = {f: Retriever(str(db), encoder=encoder, name_free_leaves=f) for f in (16, 32)}
        ms: dict[int, list[float]] = {f: [] for f in ways}
        for p in range(passes):
            order = list(ways) if p % 2 else list(ways)[::-1]
            for q in qs:
                for f in order:
                    t0 = time.perf_counter()
                    ways[f].search(q, k=5)
                    if p:
                        ms[f].append(1000 * (time.perf_counter() - t0))
        p50 = {f: float(np.median(x)) for f, x in ms.items()}
        print(f"{pool} {split} ({len(qs)} questions): floor 16 p50 {p50[16]:.1f} ms, p95 "
              f"{np.percentile(ms[16], 95):.1f}; floor 32 p50 {p50[32]:.1f} ms, p95 "
              f"{np.percentile(ms[32], 95):.1f}; p50 ratio {p50[16] / p50[32]:.2f}x",
              flush=True)


def pools_of(split: str, pools: list[str]):
    """(pool, its Retriever, its usable questions) of SPLIT for each of POOLS, with the
    default settings and encoder; the test split is the look-alike reports' alone."""
    settings, encoder = H.default_encoder()
    for pool in pools:
        if split == "test" and pool != "lookalike":
            continue
        r, qs, _ = H.open_pool(pool, split, settings, encoder)
        yield pool, r, qs


def alternating_ms(r, queries: list[str], ways: dict, passes: int = 4
                   ) -> dict[str, list[float]]:
    """Milliseconds of `r.search(query, k=5)` per way (WAYS: name -> the patch that sets
    it up), the ways alternating per question, their order swapped each pass, the first
    pass not counted."""
    import time

    ms: dict[str, list[float]] = {v: [] for v in ways}
    for p in range(passes):
        order = list(ways) if p % 2 else list(ways)[::-1]
        for q in queries:
            for v in order:
                ways[v]()
                t0 = time.perf_counter()
                r.search(q, k=5)
                if p:
                    ms[v].append(1000 * (time.perf_counter() - t0))
    return ms


def timing_before(split: str, before: str, passes: int = 4) -> None:
    """Rule 70's, 72's, 77's or 84's query cost: the look-alike reports' and the named
    agreements' SPLIT questions, corpus-wide, tree mode, k = 5, encoding included, the
    shipped search and the search before the rule (BEFORE: `before70`, `before72`,
    `before77`, `before84`) alternating per question in one process, the order swapped each pass,
    the first pass not counted."""
    settings, encoder = H.default_encoder()
    for pool in ("lookalike", "named-contracts"):
        r, questions, _ = H.open_pool(pool, split, settings, encoder)
        qs = [q["query"] for q in questions]
        ms = alternating_ms(r, qs, {v: (lambda v=v: patch(v)) for v in ("today", before)},
                            passes)
        patch("today")
        p50 = {v: float(np.median(x)) for v, x in ms.items()}
        print(f"{pool} {split} ({len(qs)} questions): shipped p50 {p50['today']:.1f} ms, p95 "
              f"{np.percentile(ms['today'], 95):.1f}; {before} p50 {p50[before]:.1f} ms, p95 "
              f"{np.percentile(ms[before], 95):.1f}; p50 ratio "
              f"{p50['today'] / p50[before]:.2f}x", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="train")
    ap.add_argument("--pools", nargs="+", default=list(POOLS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--timing", action="store_true", help="rule 68's query cost")
    ap.add_argument("--timing70", action="store_true", help="rule 70's query cost")
    ap.add_argument("--timing72", action="store_true", help="rule 72's query cost")
    ap.add_argument("--timing77", action="store_true", help="rule 77's query cost")
    ap.add_argument("--timing84", action="store_true",
                    help="rules 84 and 87's query cost (against the search before rule 84)")
    ap.add_argument("--tag", default="", help="appended to the runs' file names")
    args = ap.parse_args()
    if args.timing70 or args.timing72 or args.timing77 or args.timing84:
        before = (BEFORE70 if args.timing70 else BEFORE72 if args.timing72
                  else BEFORE77 if args.timing77 else BEFORE84)
        timing_before(args.split, before)
        return 0
    if args.timing:
        timing(args.split)
        return 0
    out = H.OUT / "alone-guard"
    out.mkdir(parents=True, exist_ok=True)
    for pool, r, qs in pools_of(args.split, args.pools):
        changed = sum(len(question_entities(q["query"])) > 0 for q in qs)
        r.name_free_leaves_today = r.searching.settings.name_free_leaves
        patch("today", r)
        within = scores(r, qs, False)
        today = scores(r, qs, True)
        runs = {"within": within, "today": today}
        w = np.mean([v[0] for v in within.values()])
        t = np.mean([v[0] for v in today.values()])
        print(f"{pool} {args.split}: {len(qs)} questions ({changed} with entities); within "
              f"{w:.2f}, today corpus-wide {t:.2f} ({t / w:.3f}x)", flush=True)
        for v in args.variants:
            patch(v, r)
            if v in (FLOOR16, FLOOR32, OPENFREE, BEFORE72, FREEONLY, FREETITLED, *SHARES,
                     *TITLED_PARTS, BEFORE77):
                runs[f"{v} within"] = inside = scores(r, qs, False)
                print(f"  {v:8} within unit IE {np.mean([x[0] for x in inside.values()]):.2f} "
                      f"{paired(inside, within, 0)}; char-IE {paired(inside, within, 1)}",
                      flush=True)
            runs[v] = got = scores(r, qs, True)
            m = np.mean([x[0] for x in got.values()])
            print(f"  {v:8} unit IE {m:.2f} ({m / w:.3f}x) {paired(got, today, 0)}; "
                  f"char-IE {paired(got, today, 1)}", flush=True)
        patch("today", r)
        (out / f"{pool}-{args.split}{args.tag}.json").write_text(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
