"""A question less its names, for the long documents that open with them (rule 62).

A question names its document ("What was Acme Robotics' gross margin in Q3 2024?"). In a
long document whose opening writes that name (a report, a named agreement) the name says
which document, not which unit: the opening unit writes it and the answer does not, so
the question's vector ranks the opening above the answer. Such a document's nodes are
scored with the question's vector blended with the question less its entities and less
the words the gated documents' openings write (`blend`, `opening_words`: a question also
describes its subjects by what their openings say, "the 71-year-old man with Morvan
syndrome"; rule 72), the latter at NAME_FREE_SHARE, or at half in a document with a part
titled by the name (`titled_by`: an entry about it, whose evidence writes the name; rule
77). BM25 scores such a document with the question less the names its opening, or another
such document's, writes (`lexical_questions`: a caption or title names a document, not a
unit), unless a part of it is titled by the name (rules 80-82). Every other document,
the first stage and the choice of documents keep the question as it is. A short document
(a paragraph about its title's subject, below NAME_FREE_LEAVES leaves) is left alone:
there the name is written in the evidence.
docs/whole-corpus.md, rules 61-62 and 68 (the floor of 16 leaves).

The same opening tells the searched documents a question names: a long document that
opens with a name is that name's own (rules 65 and 70, `all_open_with`, `own_writers`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from sproutrag.names import document_name, folded, mention_words
from sproutrag.search.entities import question_entities
from sproutrag.stopwords import STOPWORDS
from sproutrag.storage.rows import StoredTree

#: The characters of a document's opening: the first of its leaves, in order (rule 62).
OPENING_CHARS = 300
#: The least leaves of a document scored with the blend (rule 68: rule 65's floor; rule 62
#: had `ANCHOR_LEAVES`, 32, which left out reports of 6,000-8,000 characters).
NAME_FREE_LEAVES = 16
#: The name-free question's share of the blend (rule 77: 0.75, fitted on the train pools
#: among 0.5, 0.625, 0.75 and 0.875 by rule 76; half in a document `titled_by` the name).
NAME_FREE_SHARE = 0.75
#: The share in a document `titled_by` the question's name: rule 72's even blend (rule 77).
TITLED_SHARE = 0.5
#: The least leaves the named documents that open with the question's names hold together
#: to be searched alone below `ANCHOR_LEAVES` (rule 65).
ALONE_OPENING_LEAVES = 16

_WORD = re.compile(r"\w+")


def name_free(question: str, entities: Sequence[str]) -> str:
    """QUESTION without the words of ENTITIES (`question_entities`: lower-cased words
    joined by one space) and a possessive's "'s" or "'": "What was Acme Robotics' gross
    margin?" is "What was gross margin?"."""
    tokens = [(m.start(), m.end(), m.group(0).lower()) for m in _WORD.finditer(question)]
    low = [t[2] for t in tokens]
    drop: set[int] = set()
    for entity in entities:
        ew = entity.split()
        for i in range(len(low) - len(ew) + 1):
            if low[i: i + len(ew)] == ew:
                drop.update(range(i, i + len(ew)))
    kept, last = [], 0
    for i, (s, e, _) in enumerate(tokens):
        if i in drop:
            kept.append(question[last:s])
            last = e
    kept.append(question[last:])
    text = re.sub(r"['’]s\b", "", "".join(kept))  # "Acme's" less "acme"
    text = re.sub(r"(?<!\w)['’](?!\w)", "", text)  # "Acme Robotics'" less its name
    return re.sub(r"\s+", " ", text).strip()


def opening_leaves(texts: Sequence[str], chars: int = OPENING_CHARS) -> int:
    """How many leading leaves of a document (TEXTS) its `opening` reads: each leaf that
    starts within its first CHARS characters (the leaves joined by one space)."""
    n = held = 0
    for t in texts:
        if held >= chars:
            break
        held += len(t) + 1
        n += 1
    return n


def opening(texts: Sequence[str], chars: int = OPENING_CHARS) -> str:
    """The first CHARS characters of a document's leaves (TEXTS), in order."""
    return " ".join(texts[: opening_leaves(texts, chars)])[:chars]


def opens_with(texts: Sequence[str], n_leaves: int, entities: Sequence[str],
               floor: int = NAME_FREE_LEAVES, chars: int = OPENING_CHARS) -> bool:
    """Whether a document of N_LEAVES leaves (TEXTS) holds at least FLOOR (0: never) and
    writes one of ENTITIES in its `opening` of CHARS characters, accents folded on both
    sides ("Nestle" finds "Nestlé", as the name lookups do: rule 63)."""
    if floor <= 0 or n_leaves < floor or not entities:
        return False
    head = mention_words(opening(texts, chars))
    return any(f" {folded(e)} " in head for e in entities)


def all_open_with(stored: Mapping[str, StoredTree], named: Sequence[str],
                  entities: Sequence[str], floor: int, below: int) -> bool:
    """Whether the NAMED documents of STORED hold FLOOR (0: never) to BELOW leaves together
    and each `opens_with` one of ENTITIES (rule 65)."""
    held = sum(stored[d].tree.n for d in named)
    return (bool(named) and 0 < floor <= held < below
            and all(opens_with(stored[d].texts, stored[d].tree.n, entities, floor=1)
                    for d in named))


def own_writers(holders: Mapping[str, list[str]], stored: Mapping[str, StoredTree],
                order: Sequence[str], floor: int,
                places: Collection[tuple[str, str]] = ()) -> dict[str, list[str]]:
    """HOLDERS (entity -> the documents of STORED that write it, `entity_holders`) with
    each entity that two or more write kept to its own document, when one is clear: its
    first writer in ORDER (the first stage's), when that writer's opening writes the
    entity (`opens_with`) and it holds at least FLOOR leaves (0: no entity is kept). A
    competitor's report cites a company; the company's own report opens with its name,
    and the question's whole match ranks it first (rule 70). Where several writers open
    with the name (a trial and a court case both called "Haldane"), the question's whole
    match tells them apart too (rule 84), unless they are more than half of the searched
    documents: then the word is their topic ("Kawasaki" in every case report's title),
    and no writer is its own (rule 87). Then the same again for each entity still
    written by two or more, with the writers that another entity of the question names
    (its only writer now) left out of the lead: in a comparison of two reports, the
    report that cites its competitor ranks first as its own subject's, and the
    competitor's own report is the second subject's (rule 83). Then an entity still
    written by two or more names its single opener, whatever the order, when that
    opener's opening also writes another of the question's entities: a case caption names
    both parties, and an opinion that cites the case ranks first (rule 88, `_parties`),
    unless the two are a place the question writes "City, State" (PLACES,
    `entities.place_pairs`; rule 94).
    An entity that holds two others, both kept to one document whose opening writes them,
    is kept to it too when none of its writers opens with it: a caption as a citing
    opinion writes it, the case's own opinion titling the parties in full (rule 91,
    `_captions`). Last, an entity still written by two or more names its single opener,
    whatever the order, when every other entity of the question is kept to one other
    document, those that more than half of the searched documents write (their topic)
    left out: a report that cites the second of two subjects ranks ahead of the second's
    own (rules 93 and 95, `_second_subjects`)."""
    if floor <= 0:
        return dict(holders)
    rank = {d: i for i, d in enumerate(order)}
    openers = {e: [d for d in docs if _opens(stored, d, e)]
               for e, docs in holders.items() if len(docs) >= 2}
    led = {e: _own(docs, openers.get(e, ()), stored, rank, floor)
           for e, docs in holders.items()}
    only = {e: docs[0] for e, docs in led.items() if len(docs) == 1}
    kept = {e: _own(docs, openers.get(e, ()), stored, rank, floor,
                    {d for f, d in only.items() if f != e})
            for e, docs in led.items()}
    parties = _captions(_parties(kept, holders, openers, stored, floor, places), stored,
                        floor)
    return _second_subjects(parties, openers, stored, floor)


def _opens(stored: Mapping[str, StoredTree], doc: str, entity: str) -> bool:
    """Whether DOC's opening writes ENTITY (`opens_with`, no floor)."""
    return opens_with(stored[doc].texts, stored[doc].tree.n, [entity], floor=1)


def _parties(kept: dict[str, list[str]], holders: Mapping[str, list[str]],
             openers: Mapping[str, list[str]], stored: Mapping[str, StoredTree],
             floor: int, places: Collection[tuple[str, str]] = ()) -> dict[str, list[str]]:
    """KEPT with each entity it leaves with two or more writers kept to its single opener
    (of OPENERS, the writers whose opening writes it; holding FLOOR leaves), whatever the
    first stage's order, when that opener's opening also writes another entity of the
    question (HOLDERS) that it writes, neither a part of the other: a caption names both
    parties ("Brightwater Bakery Supply v. Keystone Mutual Fire"), and an opinion that
    cites the case, though it ranks first, writes them later (rule 88). Not when the
    question writes the two as a place, "Lincoln, Nebraska" ((e, f) in PLACES, rule 94):
    a case report from there opens with both."""
    out = dict(kept)
    for e, docs in kept.items():
        own = _single_opener(docs, openers.get(e, ()), stored, floor)
        if own is not None and any(f != e and f not in e and e not in f and own in ds
                                   and (e, f) not in places and _opens(stored, own, f)
                                   for f, ds in holders.items()):
            out[e] = [own]
    return out


def _single_opener(docs: Sequence[str], openers: Collection[str],
                   stored: Mapping[str, StoredTree], floor: int) -> str | None:
    """The one of DOCS (two or more writers of an entity) among OPENERS (the writers whose
    opening writes it), when it is one and holds FLOOR leaves; else None (rules 88, 93)."""
    own = [d for d in openers if d in docs] if len(docs) >= 2 else []
    return own[0] if len(own) == 1 and stored[own[0]].tree.n >= floor else None


def corpus_owner(entity: str, writers: Sequence[str],
                 read: Callable[[Sequence[str]], Mapping[str, StoredTree]], floor: int,
                 most: int) -> str | None:
    """ENTITY's own document among WRITERS (the corpus's documents whose text writes it):
    the only one (rule 27), or among two to MOST the single one whose opening writes it
    and which holds FLOOR leaves (0: none; READ(docs): their trees; rule 92). One
    hospital's report mentions the other hospital of a question; the other's own report
    opens with it."""
    if len(writers) == 1:
        return writers[0]
    if floor <= 0 or not 2 <= len(writers) <= most:
        return None
    stored = read(writers)
    own = [d for d, st in stored.items() if st.tree.n >= floor and _opens(stored, d, entity)]
    return own[0] if len(own) == 1 else None


def _captions(kept: dict[str, list[str]], stored: Mapping[str, StoredTree],
              floor: int) -> dict[str, list[str]]:
    """KEPT with each entity none of whose writers opens with it kept to document D when
    it holds two other entities of the question, neither a part of the other, that KEPT
    keeps to D alone and that D's opening both writes, D holding FLOOR leaves (rule 91):
    "Harrowgate Brewing v. Tallbrook Cider Works" as an opinion that cites the case
    writes it, kept to the case's own opinion, titled "Harrowgate Brewing Company v.
    Tallbrook Cider Works, LLC"."""
    out = dict(kept)
    for e, docs in kept.items():
        parts = [f for f, ds in kept.items() if _part(f, e) and len(ds) == 1]
        if len(parts) < 2 or not docs or any(_opens(stored, w, e) for w in docs):
            continue
        for d in dict.fromkeys(kept[f][0] for f in parts if kept[f][0] not in docs):
            held = [f for f in parts if kept[f] == [d] and _opens(stored, d, f)]
            if stored[d].tree.n >= floor and any(
                    f != g and not _part(f, g) and not _part(g, f) for f in held for g in held):
                out[e] = [d]
                break
    return out


def _second_subjects(kept: dict[str, list[str]], openers: Mapping[str, list[str]],
                     stored: Mapping[str, StoredTree], floor: int) -> dict[str, list[str]]:
    """KEPT with each entity it leaves with two or more writers kept to its single opener
    (of OPENERS; holding FLOOR leaves), whatever the first stage's order, when every other
    entity of the question that is not a part of it (at least one) is kept to one
    document, not that opener (rule 93): "Which runs more of its fleet on natural gas,
    Copper Mesa Sanitation or Harrowgate Waste Systems?", where a competitor's report that
    cites Harrowgate ranks ahead of Harrowgate's own. An entity that more than half of
    the searched documents (STORED) write is their topic ("ADAMTS13" in reports of TTP),
    not another name: it is left out of the others (rule 95, rule 87's half)."""
    out = dict(kept)
    for e, docs in kept.items():
        own = _single_opener(docs, openers.get(e, ()), stored, floor)
        others = [f for f in kept if f != e and not _part(f, e) and not _part(e, f)
                  and not _topic(len(kept[f]), len(stored))]
        if own is not None and others and all(len(kept[f]) == 1 and kept[f][0] != own
                                              for f in others):
            out[e] = [own]
    return out


def _topic(writers: int, searched: int) -> bool:
    """Whether WRITERS of a word are more than half of the SEARCHED documents: then it is
    their topic, not a subject's name (rules 87 and 95)."""
    return writers > searched / 2


def _part(f: str, e: str) -> bool:
    """Whether entity F is a part of entity E, word by word, and not E itself."""
    return f != e and f" {f} " in f" {e} "


def _own(docs: list[str], openers: Sequence[str], stored: Mapping[str, StoredTree],
         rank: Mapping[str, int], floor: int, others: Collection[str] = ()) -> list[str]:
    """DOCS (an entity's writers) kept to the first by RANK (the searched documents) of
    those not among OTHERS, when it is one of OPENERS (the writers whose opening writes
    the entity), they are one or at most half of the searched documents, and it holds
    FLOOR leaves; else DOCS (`own_writers`)."""
    rest = [d for d in docs if d not in others]
    if len(docs) < 2 or not openers or not rest:
        return docs
    if len(openers) >= 2 and _topic(len(openers), len(rank)):
        return docs  # a topic most of them open with, no name (rule 87)
    first = min(rest, key=lambda d: rank.get(d, len(rank)))
    return [first] if first in openers and stored[first].tree.n >= floor else docs


def blend(qvec: np.ndarray, free: np.ndarray, share: float = 0.5) -> np.ndarray:
    """normalise((1 - SHARE) q / |q| + SHARE f / |f|): the question's vector and its
    name-free one (SHARE 0.5: equal)."""
    q = np.asarray(qvec, np.float32) / max(float(np.linalg.norm(qvec)), 1e-12)
    f = np.asarray(free, np.float32) / max(float(np.linalg.norm(free)), 1e-12)
    v = (1 - share) * q + share * f
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def titled_by(texts: Sequence[str], entities: Sequence[str]) -> bool:
    """Whether a line of a document's leaves (TEXTS), read as a document's first line is
    read (`names.document_name`: heading-like, a trailing parenthesis dropped), is one of
    ENTITIES, accents folded: a part titled by the question's name, an entry about it,
    whose evidence writes the name (rule 77)."""
    named = {folded(e) for e in entities}
    return any(folded(document_name(line) or "") in named
               for text in texts for line in text.split("\n"))


def opening_words(stored: Mapping[str, StoredTree], docs: Sequence[str]) -> list[str]:
    """The words of the `opening`s of DOCS (in STORED), lower case, stopwords left out,
    sorted: what the question describes its subjects by, which the name-free question
    leaves out with the names (rule 72)."""
    words: set[str] = set()
    for d in docs:
        words.update(_WORD.findall(opening(stored[d].texts).lower()))
    return sorted(words - STOPWORDS)


def opening_names(texts: Sequence[str], entities: Sequence[str]) -> list[str]:
    """The ENTITIES a document (its leaves' TEXTS) writes in its opening leaves
    (`opening_leaves`), accents folded: names that say which document, not which unit (a
    case's caption, a report's title; rule 81)."""
    head = [mention_words(t) for t in texts[: opening_leaves(texts)]]
    return [e for e in entities if any(f" {folded(e)} " in w for w in head)]


def lexical_questions(query: str, entities: Sequence[str], stored: Mapping[str, StoredTree],
                      docs: Sequence[str], titled: Callable[[str], bool] | None = None
                      ) -> dict[str, str]:
    """doc_id -> the text BM25 scores a gated document's nodes with (DOCS: those rule 62
    gates in, `opening_vectors`' keys): QUERY less the ENTITIES that the opening of any
    of DOCS writes (`opening_names`; also where later leaves write them: a report's body
    names its company in sentences that are not the answer; rules 80 and 81), its own
    or another gated document's (two reports compared: the other company's name is no
    unit's either; rule 82), unless a part of it is `titled_by` one of ENTITIES (an entry
    about the name, whose opening is its evidence: it keeps the question). TITLED: doc_id
    -> whether it is (default: `titled_by` read here)."""
    written = {e for d in docs for e in opening_names(stored[d].texts, entities)}
    drop = [e for e in entities if e in written]
    if not drop:
        return {}
    titled = titled or (lambda d: titled_by(stored[d].texts, entities))
    free = name_free(query, drop)
    return {d: free for d in docs if not titled(d)}


def opening_vectors(query: str, qvec: np.ndarray, entities: Sequence[str],
                    stored: Mapping[str, StoredTree],
                    embed: Callable[[list[str]], np.ndarray], floor: int = NAME_FREE_LEAVES,
                    share: float = NAME_FREE_SHARE,
                    titled: Callable[[str], bool] | None = None) -> dict[str, np.ndarray]:
    """doc_id -> the `blend` of QUERY (QVEC; ENTITIES: its `question_entities`) for each
    document of STORED that `opens_with` them, the name-free question at SHARE (rule 77)
    or at half in a document `titled_by` one of ENTITIES; {} when none opens with them or
    the question less its names and its openings' words (`opening_words`, rule 72) has no
    word left or is the same. EMBED encodes the name-free question, only then. TITLED:
    doc_id -> whether it is `titled_by` one of ENTITIES (default: read here)."""
    if not entities:
        return {}
    titled = titled or (lambda d: titled_by(stored[d].texts, entities))
    docs = [d for d, st in stored.items() if opens_with(st.texts, st.tree.n, entities, floor)]
    free = name_free(query, [*entities, *opening_words(stored, docs)]) if docs else ""
    if not _WORD.search(free) or free == query:
        return {}
    vector = embed([free])[0]
    return {d: blend(qvec, vector, TITLED_SHARE if titled(d) else share) for d in docs}


def own_questions(query: str, qvec: np.ndarray, stored: Mapping[str, StoredTree],
                  embed: Callable[[list[str]], np.ndarray], floor: int = NAME_FREE_LEAVES
                  ) -> tuple[dict[str, np.ndarray], dict[str, str] | None]:
    """(`opening_vectors`, `lexical_questions` or None) of QUERY (QVEC) over STORED: what
    the documents rule 62 gates in are scored with instead of the question, as the
    Retriever and the evaluation both score them (rules 62 and 80-82)."""
    entities = question_entities(query)
    seen: dict[str, bool] = {}

    def titled(d: str) -> bool:  # read once per document for both
        if d not in seen:
            seen[d] = titled_by(stored[d].texts, entities)
        return seen[d]

    own = opening_vectors(query, qvec, entities, stored, embed, floor, titled=titled)
    if not own:
        return own, None
    return own, lexical_questions(query, entities, stored, list(own), titled=titled) or None


__all__ = ["ALONE_OPENING_LEAVES", "NAME_FREE_LEAVES", "NAME_FREE_SHARE", "OPENING_CHARS",
           "TITLED_SHARE", "all_open_with", "blend", "corpus_owner", "lexical_questions",
           "name_free",
           "opening", "opening_leaves", "opening_names", "opening_vectors", "opening_words",
           "opens_with", "own_questions", "own_writers", "titled_by"]
