"""The documents a tree or leaves search looks at, read and ready to score.

A query restricted to doc_ids (or to a filter's few documents) searches those. A query
over the whole corpus searches the first stage's ranked choice, and with it:

- its statistics come from the leading documents (`node_scores.anchor_documents`,
  ANCHOR_LEAVES; docs/whole-corpus.md, rule 11);
- the documents the query or its best leaf names gain LINK_WEIGHT, and the best leaf's
  document LEADER_WEIGHT when it links to any (`sproutrag.search.links`; rules 12-18);
- at most FETCH_NAMED documents the first stage missed are searched too when the query
  or its best leaf writes their name (`named_elsewhere`; rule 13);
- a searched document that is the only one whose text writes an entity of the question
  gains MENTION_WEIGHT (`sproutrag.search.mentions`; rule 23), LONG_MENTION_WEIGHT when
  the mentioned documents hold ANCHOR_LEAVES leaves together (rule 30);
- at most FETCH_MENTIONED documents the first stage missed are searched too when one is
  the only document of the corpus whose text writes an entity of the question
  (`mentioned_elsewhere`; rule 27);
- when two or more searched documents so mentioned hold ANCHOR_LEAVES leaves together,
  the statistics come from them instead (`anchor`, `mention_statistics`; rule 29);
- when the mentioned documents, one or more, hold ANCHOR_LEAVES leaves together, only
  they are searched, as a query restricted to their doc_ids would search them
  (`mention_alone`; rule 31), or ALONE_OPENING_LEAVES when each writes an entity of the
  question in its opening (`alone_opening_leaves`; rule 65); else, when the question
  compares, the first stage's first two documents (rule 90; `sproutrag.search.alone`).
- an entity two or more searched documents write names its own document, the first of
  them in the first stage's order, when its opening writes the entity and it holds
  ALONE_OPENING_LEAVES leaves (`name_free.own_writers`; rules 70, 83-88); while one
  they write names none of them, "alone" waits (rule 84).

A searched document of at least NAME_FREE_LEAVES leaves whose opening writes an entity of
the question is scored with the question's vector blended with the question less its
names and its openings' words, and by BM25 with the question less the names its opening
writes (`sproutrag.search.name_free`; rules 62, 72, 77 and 80-82), with doc_ids too. The
twelve settings are one `CorpusWideSettings`.

`SearchedDocuments.find` returns all of it as one `Searched`; the Retriever's modes and
its context score it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from sproutrag.errors import QueryError
from sproutrag.params import SearchParams, check_count, check_number
from sproutrag.search.alone import alone_documents
from sproutrag.search.current import Current
from sproutrag.search.entities import place_pairs, question_entities
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.links import (
    FETCH_MENTIONED,
    FETCH_NAMED,
    LEADER_WEIGHT,
    LINK_WEIGHT,
    LONG_MENTION_WEIGHT,
    MENTION_WEIGHT,
    Links,
    best_leaf,
)
from sproutrag.search.mentions import dominant_writers, entity_holders, named_by
from sproutrag.search.name_free import (
    ALONE_OPENING_LEAVES,
    NAME_FREE_LEAVES,
    corpus_owner,
    own_questions,
    own_writers,
)
from sproutrag.search.node_scores import (
    ANCHOR_LEAVES,
    NodeScores,
    anchor_documents,
    node_scores,
)
from sproutrag.search.stored_documents import StoredDocuments
from sproutrag.storage.rows import StoredTree

#: The entities of one question looked up in the whole corpus at most (`mentioned_elsewhere`:
#: a full-text query each, 6-12 ms at 1M rows); the dev questions have up to 6 entities.
MAX_MENTION_LOOKUPS = 8


class Searched(NamedTuple):
    """What a search scores: DOCS in their order, their current trees (LOADED: doc_id ->
    (tree id, tree), as `StoredDocuments.read` gives them), their TEXTS when asked for
    (a context's; else {}), leaf term counts (LEXICAL, None without a lexical weight),
    the query's LINKS (None when off), its statistics' documents (ANCHOR, None: all), the
    `node_scores` when the fetch computed them already (SCORES, else None), the documents
    the question names (NAMED, `named_by`), whether they hold `anchor_leaves` leaves
    together (LONG: rules 29-31 act on it), its entities that no searched document
    writes (UNWRITTEN: what `mentioned_elsewhere` looks up), the vectors that replace
    the question's for some documents' nodes (VECTORS: `opening_vectors`, rule 62), the
    texts that replace it in their BM25 (QUESTIONS: `lexical_questions`, rule 82; None:
    none) and whether an entity searched documents write names none of them (UNNAMED)."""

    docs: list[str]
    loaded: dict[str, tuple[str, StoredTree]]
    texts: dict[str, str]
    lexical: dict[str, LeafTerms] | None
    links: Links | None
    anchor: list[str] | None
    scores: dict[str, NodeScores] | None
    named: tuple[str, ...] = ()
    long: bool = False
    unwritten: tuple[str, ...] = ()
    vectors: dict[str, np.ndarray] | None = None
    questions: dict[str, str] | None = None
    unnamed: bool = False

    @property
    def stored(self) -> dict[str, StoredTree]:
        """doc_id -> current tree."""
        return {d: st for d, (_, st) in self.loaded.items()}


@dataclass(frozen=True)
class CorpusWideSettings:
    """How a query without doc_ids searches beyond the first stage's choice (a
    `Retriever`'s, each also its attribute; each checked when made, QueryError naming the
    first bad one). The defaults are fitted on the train pools (docs/whole-corpus.md, rules
    11-31); `name_free_leaves` (rule 62) acts on a query with doc_ids too."""

    #: BM25's collection and the z-scores of the rank scores come from the first stage's
    #: leading documents until they hold this many leaves (`node_scores.anchor_documents`;
    #: 0: from every searched document; rule 11). Also the floor of rules 29-31.
    anchor_leaves: int = ANCHOR_LEAVES
    #: The rank-score points every node of a searched document gains when the query or
    #: the best leaf names it (`sproutrag.search.links`; 0: off; rules 12-18) ...
    link_weight: float = LINK_WEIGHT
    #: ... and the best leaf's document when it links to any (rule 14).
    leader_weight: float = LEADER_WEIGHT
    #: At most this many documents the first stage did not choose are searched too when
    #: the query or its best leaf writes their name (`named_elsewhere`; 0: off; rule 13).
    fetch_named: int = FETCH_NAMED
    #: The points every node of a searched document gains when it is the only one whose
    #: text writes an entity the question names (`sproutrag.search.mentions`; 0: off;
    #: rule 23).
    mention_weight: float = MENTION_WEIGHT
    #: At most this many documents the first stage did not choose are searched too when
    #: each is the only document of the corpus whose text writes an entity of the
    #: question (`mentioned_elsewhere`, with the full-text index; 0: off; rule 27).
    fetch_mentioned: int = FETCH_MENTIONED
    #: A question naming two or more searched documents that hold `anchor_leaves` leaves
    #: together takes its statistics from them (`anchor`; rule 29).
    mention_statistics: bool = True
    #: The points instead of `mention_weight` when the named documents hold
    #: `anchor_leaves` leaves together (long documents; rule 30).
    long_mention_weight: float = LONG_MENTION_WEIGHT
    #: A question whose named documents, one or more, hold `anchor_leaves` leaves together
    #: searches only them, as a query with their doc_ids would (`alone`; rule 31).
    mention_alone: bool = True
    #: With `mention_alone`, named documents that hold fewer than `anchor_leaves` leaves
    #: together but at least this many are searched alone too when each writes an entity
    #: of the question in its opening (`name_free.opens_with`; 0: off; rule 65). Also the
    #: least leaves of an entity's own document among two or more writers (`own_writers`;
    #: rule 70; 0: off too).
    alone_opening_leaves: int = ALONE_OPENING_LEAVES
    #: An entity two or more searched documents write also names the one that writes it
    #: at least this many times as often per word as every other (`dominant_writers`; 0:
    #: off; rule 35).
    dominant_ratio: float = 0.0
    #: A searched document of at least this many leaves whose opening writes an entity of
    #: the question is scored with the question's vector blended with the question less
    #: its names, in a query with doc_ids too (`sproutrag.search.name_free`; 0: off;
    #: rules 62 and 68).
    name_free_leaves: int = NAME_FREE_LEAVES

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "bool":
                if not isinstance(value, bool):
                    raise QueryError(f"{f.name} must be true or false; got {value!r}")
                continue
            check = check_count if f.type == "int" else check_number
            object.__setattr__(self, f.name, check(f.name, value))


class SearchedDocuments:
    """Reads the documents a search looks at from the trees' cache (DOCUMENTS) and the
    current trees (CURRENT: the view's, read when called), searched as SETTINGS say (a
    Retriever's, replaced whole when one changes); WRITING(entity): the documents of the
    whole corpus whose text writes an entity (`FirstStage.writing`; None: none are
    fetched by mention); EMBED(texts): their vectors, for the name-free question of rule
    62 (None: no document is scored with it)."""

    def __init__(self, documents: StoredDocuments, current: Callable[[], Current],
                 settings: CorpusWideSettings | None = None, *,
                 writing: Callable[[str], list[str]] | None = None,
                 embed: Callable[[list[str]], np.ndarray] | None = None) -> None:
        self.documents, self.current, self.writing = documents, current, writing
        self.embed = embed
        self.settings = settings if settings is not None else CorpusWideSettings()

    def find(self, query: str, qvec: np.ndarray, docs: Sequence[str], params: SearchParams,
             ranked: bool, allowed: Collection[str] | None = None, *,
             texts: bool = False) -> Searched:
        """DOCS, and when they are the first stage's RANKED choice the documents
        `named_elsewhere` and `mentioned_elsewhere` add (among ALLOWED), read (TEXTS:
        their texts too, a context's); only the documents the question names when they
        hold enough leaves to be searched `alone`. The long documents that open with the
        question's names get their own vectors and BM25 texts (`Searched.vectors`,
        `Searched.questions`; rules 62 and 80)."""
        found = self._found(query, qvec, docs, params, ranked, allowed, texts=texts)
        if self.embed is None or self.settings.name_free_leaves <= 0:
            return found
        own, lexical = own_questions(query, qvec, found.stored, self.embed,
                                     self.settings.name_free_leaves)
        return found._replace(scores=None, vectors=own, questions=lexical) if own else found

    def _found(self, query: str, qvec: np.ndarray, docs: Sequence[str], params: SearchParams,
               ranked: bool, allowed: Collection[str] | None, *, texts: bool) -> Searched:
        """`find` but the vectors of rule 62."""
        found = self._read(docs, params, query, ranked, texts=texts)
        if not ranked or not found.loaded:
            return found
        stored, scores, extra = found.stored, None, []
        if self.settings.fetch_named > 0:
            scores = node_scores({d: st.tree for d, st in stored.items()}, qvec,
                                 query=query, lexical=found.lexical,
                                 lexical_weight=params.lexical_weight, anchor=found.anchor)
            extra = self.named_elsewhere(query, stored, scores, allowed)
        extra += self.mentioned_elsewhere(found.unwritten, [*stored, *extra], allowed)
        if extra:
            found = self._read([*docs, *extra], params, query, ranked, texts=texts)
        else:
            found = found._replace(scores=scores)
        alone = self.alone(found, query)
        return found if alone is None else self._read(alone, params, query, False,
                                                      texts=texts)

    def alone(self, found: Searched, query: str) -> list[str] | None:
        """The documents FOUND's question (QUERY) searches alone when `mention_alone` is
        on (`alone.alone_documents`: the ones it names, rules 31, 65 and 84, or the two
        it compares, rule 90), else None."""
        s = self.settings
        if not s.mention_alone:
            return None
        return alone_documents(found, query, s.anchor_leaves, s.alone_opening_leaves)

    def _read(self, docs: Sequence[str], params: SearchParams, query: str, ranked: bool,
              *, texts: bool = False) -> Searched:
        """DOCS' current trees, their texts (TEXTS), leaf terms (when the lexical weight is
        not 0), links, anchor and the entities they do not write; no scores."""
        s = self.settings
        loaded, texts_read = self.documents.read(
            docs, texts=texts, terms=params.lexical_weight > 0,
            names=ranked and s.link_weight > 0,
            word_texts=ranked and s.mention_weight > 0 and bool(question_entities(query)))
        stored = {d: st for d, (_, st) in loaded.items()}
        lexical = ({d: self.documents.leaf_terms(d, t) for d, (t, _) in loaded.items()}
                   if params.lexical_weight > 0 else None)
        holders, word_texts = self.holders(query, loaded, ranked, docs)
        dominant = (dominant_writers(holders, word_texts, s.dominant_ratio)
                    if s.dominant_ratio > 0 and holders else None)
        named = named_by(holders, dominant)
        long = self.long(named, stored)
        return Searched(list(docs), loaded, texts_read, lexical,
                        self.links(query, loaded, ranked, named, long),
                        self.anchor(docs, stored, ranked, named, long), None, tuple(named),
                        long, tuple(e for e, ds in holders.items() if not ds),
                        unnamed=any(ds and not set(ds) & set(named) for ds in holders.values()))

    def long(self, named: Collection[str], stored: Mapping[str, StoredTree]) -> bool:
        """Whether the documents the question NAMES (all in STORED) hold `anchor_leaves`
        leaves together (long documents, where a named one is the question's): their
        statistics (rule 29), the larger mention weight (rule 30) and search alone (rule
        31) follow from it. False when nothing is named or `anchor_leaves` is 0."""
        floor = self.settings.anchor_leaves
        return (bool(named) and floor > 0
                and sum(stored[d].tree.n for d in named) >= floor)

    def links(self, query: str, loaded: Mapping[str, tuple[str, StoredTree]],
              ranked: bool, mentioned: Sequence[str] = (), long: bool = False
              ) -> Links | None:
        """The names a query follows and the documents it names (MENTIONED, from
        `holders`; they gain `long_mention_weight` instead of `mention_weight` when LONG,
        rule 30) when LOADED (doc_id -> (tree id, tree)) are the first stage's RANKED
        choice and the link or mention weight is not 0; else None. The best leaf's text
        (where names are looked for) is in memory. A document replaced meanwhile has no
        name for this query, nor has one a name that another document of the corpus also
        has (a generic heading; `documents.name_key`, docs/whole-corpus.md, rule 15)."""
        s = self.settings
        if not ranked or (s.link_weight <= 0 and s.mention_weight <= 0):
            return None
        names: dict[str, str | None] = {}
        if s.link_weight > 0:
            for d, (t, _) in loaded.items():
                try:
                    names[d] = self.documents.name(d, t)
                except KeyError:
                    names[d] = None
            names = self.current().names.unique(names)
        return Links(names, lambda d, u: loaded[d][1].texts[u], query, s.link_weight,
                     s.leader_weight, s.long_mention_weight if long else s.mention_weight,
                     tuple(mentioned))

    def holders(self, query: str, loaded: Mapping[str, tuple[str, StoredTree]],
                ranked: bool, order: Sequence[str] = ()
                ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """(entity of the question -> the documents of LOADED (the searched ones, when the
        first stage's RANKED choice) whose text writes it (`entity_holders`; its only
        holder is a document the question names, `named_by`), the word texts read for
        it); ({}, {}) when the mention weight is 0 or the question names nothing. With
        ORDER (the searched documents in the first stage's order), an entity two or more
        write is kept to its own long document (`own_writers`, `alone_opening_leaves`;
        rule 70). Computed once per read: the links' weights, the anchor, the corpus-wide
        lookup and the dominant writers all take it."""
        if not ranked or self.settings.mention_weight <= 0:
            return {}, {}
        entities = question_entities(query)
        if not entities:
            return {}, {}
        word_texts = self._word_texts(loaded)
        holders = entity_holders(entities, word_texts)
        if order:
            holders = own_writers(holders, {d: st for d, (_, st) in loaded.items()}, order,
                                  self.settings.alone_opening_leaves, place_pairs(query))
        return holders, word_texts

    def _word_texts(self, loaded: Mapping[str, tuple[str, StoredTree]]) -> dict[str, str]:
        """doc_id -> word text (`StoredDocuments.word_text`, cached) of LOADED; a document
        replaced meanwhile writes nothing for this query."""
        texts = {}
        for d, (t, _) in loaded.items():
            try:
                texts[d] = self.documents.word_text(d, t)
            except KeyError:
                continue
        return texts

    def anchor(self, docs: Sequence[str], stored: Mapping[str, StoredTree],
               ranked: bool, mentioned: Sequence[str] = (), long: bool = False
               ) -> list[str] | None:
        """The documents a query's statistics come from: when DOCS are the first stage's
        RANKED choice, the documents the question names (MENTIONED, `named_by`) when they
        are two or more and hold `anchor_leaves` leaves together (LONG; `mention_statistics`:
        then search within them would rank their leaves so; docs/whole-corpus.md, rule 29),
        else the first stage's leading ones (`anchor_documents`); else all (None)."""
        if not ranked:
            return None
        leaves = {d: st.tree.n for d, st in stored.items()}
        named_set = set(mentioned)
        named = [d for d in docs if d in stored and d in named_set]
        s = self.settings
        if s.mention_statistics and long and len(named) >= 2:
            return named
        return anchor_documents([d for d in docs if d in stored], leaves, s.anchor_leaves)

    def named_elsewhere(self, query: str, stored: Mapping[str, StoredTree],
                        scores: Mapping[str, NodeScores],
                        allowed: Collection[str] | None) -> list[str]:
        """The documents not in STORED (the searched ones) whose name the query or the
        best leaf by SCORES writes, a name no other document has (`documents.name_key`,
        looked up in the view's `NameIndex`: no read), among ALLOWED when given; at most
        `fetch_named`, in the order their names are written (docs/whole-corpus.md, rule 13)."""
        best = best_leaf({d: s.rank[: stored[d].tree.n] for d, s in scores.items()})
        if best is None:
            return []
        texts = (query, stored[best[0]].texts[best[1]])
        return self.current().names.named_in(texts, self.settings.fetch_named, skip=stored,
                                             allowed=allowed)

    def mentioned_elsewhere(self, unwritten: Sequence[str], skip: Collection[str],
                            allowed: Collection[str] | None) -> list[str]:
        """The documents not in SKIP (the searched ones), each one of UNWRITTEN's own (the
        question's entities that no searched document writes, `Searched.unwritten`): the
        only document of the corpus whose text writes it (`writing`; rule 27) or the
        single one of up to MAX_MENTION_LOOKUPS writers whose opening writes it, holding
        `alone_opening_leaves` leaves (`corpus_owner`; rule 92); among ALLOWED when given,
        at most `fetch_mentioned`, in the order of the entities. Rule 23 then gives each
        the mention weight. An entity a searched document writes is not looked up: it names
        that one, or no one; at most MAX_MENTION_LOOKUPS are (one full-text query each)."""
        s = self.settings
        if s.fetch_mentioned <= 0 or s.mention_weight <= 0 or self.writing is None:
            return []
        out: list[str] = []
        for entity in unwritten[:MAX_MENTION_LOOKUPS]:
            own = corpus_owner(entity, self.writing(entity), self._trees,
                               s.alone_opening_leaves, MAX_MENTION_LOOKUPS)
            if (own is not None and own not in skip and own not in out
                    and (allowed is None or own in allowed)):
                out.append(own)
                if len(out) == s.fetch_mentioned:
                    break
        return out

    def _trees(self, docs: Sequence[str]) -> dict[str, StoredTree]:
        """DOCS' current trees (`StoredDocuments.read`)."""
        return {d: st for d, (_, st) in self.documents.read(docs)[0].items()}


__all__ = ["MAX_MENTION_LOOKUPS", "CorpusWideSettings", "Searched", "SearchedDocuments"]
