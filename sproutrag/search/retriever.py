"""Query a SproutRAG database: the Python API behind `sproutrag query` and `query-corpus`.

    from sproutrag.search.retriever import Retriever
    hits = Retriever(".sproutrag/db").search("termination notice period", k=5)

Tree mode: pick candidate documents (`sproutrag.search.first_stage`: the nearest nodes
and the full-text index's best leaves, fused), then
`sproutrag.search.tree_search.search_trees` over their trees: every node scored by cosine fused with
BM25 over the node's text, beam search seeded with the best leaves, internal nodes
calibrated against their leaves, rerank, spend the budget of k evidence units (the
learned parameters come from the weights file). Flat mode (the baseline): cosine top-k
over leaves only, same encoder, same tables.

Only the current tree of each document is read: the `nodes` rows whose (doc_id, tree_id)
a `documents` row names. While an index run writes (or after it was killed) `nodes` can
also hold a document's next or previous tree; those rows are never used.

The search parameters default to those the database was indexed with
(`sproutrag.search.database_params`): a `weights` file given instead must have the
database's alpha, and an encoder whose content differs from the indexing one is refused.
Both checks are made again whenever the tables change, so a long-lived Retriever follows
re-index runs. Trees and their term counts are cached by tree id in
one LRU of `cache_bytes`.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from sproutrag.params import DEFAULT, MODES, SearchParams, check_count, check_number
from sproutrag.search.context import DEFAULT_MARGIN, Context
from sproutrag.search.current import Current
from sproutrag.search.database_params import (
    DatabaseParams,
    check_query_encoder,
    database_encoder,
    given_weights,
)
from sproutrag.search.first_stage import FIRST_STAGES, FirstStage, check_first_stage
from sproutrag.search.flat_search import FlatSearch
from sproutrag.search.hits import (
    Hit,
    QueryError,
    check_doc_ids,
    check_queries,
    check_query_text,
    hit_of,
    node_text,
)
from sproutrag.search.leaf_search import leaves_mode
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.links import (
    FETCH_MENTIONED,
    FETCH_NAMED,
    LEADER_WEIGHT,
    LINK_WEIGHT,
    LONG_MENTION_WEIGHT,
    MENTION_WEIGHT,
)
from sproutrag.search.name_free import ALONE_OPENING_LEAVES, NAME_FREE_LEAVES
from sproutrag.search.node_scores import ANCHOR_LEAVES
from sproutrag.search.query_context import check_budget, read_context
from sproutrag.search.reader_settings import open_reader
from sproutrag.search.retriever_settings import RetrieverSettings
from sproutrag.search.searched import CorpusWideSettings, SearchedDocuments
from sproutrag.search.stored_documents import CACHE_BYTES, StoredDocuments
from sproutrag.search.tree_search import Reranker, Selected, cosine_rerank, search_trees
from sproutrag.search.view import TablesView
from sproutrag.storage.filters import sql_quote
from sproutrag.storage.reader import Reader
from sproutrag.storage.rows import StoredTree

Mode = Literal["tree", "leaves", "flat"]


class Retriever(RetrieverSettings):
    """Search a database built by `sproutrag index`; trees are cached by tree id. Its
    settings are attributes (`RetrieverSettings`)."""

    def __init__(
        self, db: str | Reader, *, encoder: Any = None, weights: Any = None,
        beam_width: int = 5, threshold: float | None = None, margin: float | None = DEFAULT,
        lexical_weight: float | None = None, overrides: Mapping[str, Any] | None = None,
        n_docs: int = 8, first_stage: str = "hybrid", entity_ranking: bool = True,
        ranking_leaders: int = 0, anchor_leaves: int = ANCHOR_LEAVES,
        link_weight: float = LINK_WEIGHT, leader_weight: float = LEADER_WEIGHT,
        fetch_named: int = FETCH_NAMED, mention_weight: float = MENTION_WEIGHT,
        fetch_mentioned: int = FETCH_MENTIONED, mention_statistics: bool = True,
        long_mention_weight: float = LONG_MENTION_WEIGHT, mention_alone: bool = True,
        alone_opening_leaves: int = ALONE_OPENING_LEAVES, dominant_ratio: float = 0.0,
        name_free_leaves: int = NAME_FREE_LEAVES,
        reranker: Reranker = cosine_rerank, storage_options: dict[str, str] | None = None,
        memory_rows: int = 300_000, cache_bytes: int = CACHE_BYTES,
    ) -> None:
        """THRESHOLD, LEXICAL_WEIGHT (None: not set), MARGIN (None: off) and OVERRIDES (any
        `SearchParams` field) replace the database's defaults (`_resolve`). FIRST_STAGE: how a query
        without doc_ids picks its documents (`choose_documents`): "hybrid" (nearest nodes and the
        full-text index's best leaves, fused) or "vector". ENTITY_RANKING: the hybrid first stage
        fuses a third ranking, the full-text index's for the question's entities alone, when it has
        any (rule 25). RANKING_LEADERS: the first documents of each of its rankings the hybrid first
        stage keeps among its `n_docs` (rule 54; 0: the fused order alone). The keywords
        ANCHOR_LEAVES to NAME_FREE_LEAVES (the last also with doc_ids): how a query without doc_ids
        searches beyond the first stage's choice, one `CorpusWideSettings` (its fields say what
        each does), each also an attribute of the Retriever (checked when set). STORAGE_OPTIONS:
        LanceDB's for an s3:// DB (default: the environment's, `open_reader`)."""
        # checked before the database is opened and the encoder loaded
        wide = CorpusWideSettings(
            anchor_leaves=anchor_leaves, link_weight=link_weight, leader_weight=leader_weight,
            fetch_named=fetch_named, mention_weight=mention_weight, dominant_ratio=dominant_ratio,
            fetch_mentioned=fetch_mentioned, mention_statistics=mention_statistics,
            long_mention_weight=long_mention_weight, mention_alone=mention_alone,
            alone_opening_leaves=alone_opening_leaves, name_free_leaves=name_free_leaves)
        leaders = check_first_stage(first_stage, entity_ranking, ranking_leaders)
        given = {"threshold": threshold, "lexical_weight": lexical_weight}
        checked = SearchParams.overrides({
            "beam_width": beam_width, "margin": margin, **(overrides or {}),
            **{k: v for k, v in given.items() if v is not None}})
        # DB: a path (opened here) or a `Reader` callers share (one `index_settings` read)
        self.reader = db if isinstance(db, Reader) else open_reader(db, storage_options)
        self.store = self.reader.store
        encoder = encoder if encoder is not None else database_encoder(self.reader)
        check_query_encoder(encoder, self.store)
        self.reranker = reranker
        self.view = TablesView(self.reader)  # per thread: one `documents` read a search
        # The documents of a query without doc_ids (node vectors in memory to memory_rows)
        self.first = FirstStage(self.store, self.view.current, n_docs=n_docs, kind=first_stage,
                                memory_rows=memory_rows, entities=entity_ranking, leaders=leaders)
        self._assemble(encoder, weights, checked, wide, cache_bytes)

    def _assemble(self, encoder: Any, weights: Any, checked: Mapping[str, Any],
                  wide: CorpusWideSettings, cache_bytes: int) -> None:
        """The parts a search uses besides `view` and `first`, from `__init__`'s
        arguments, checked."""
        if (isinstance(cache_bytes, bool) or not isinstance(cache_bytes, numbers.Integral)
                or cache_bytes < 0):
            raise QueryError(f"cache_bytes must be an integer of 0 or more (the bytes of "
                             f"trees, terms and texts kept between searches), got "
                             f"{cache_bytes!r}")
        # Trees, term counts, texts and names, cached by tree id in one LRU.
        self.documents = StoredDocuments(self.store, self.view, int(cache_bytes))
        self.flat = FlatSearch(self.first, self.documents, self.view)  # flat mode
        # What a tree or leaves search reads: the documents, links, anchor and fetch.
        self.searching = SearchedDocuments(self.documents, self.view.current, wide,
                                           writing=self.first.writing, embed=self._embed)
        # The search parameters: the database's defaults as its tables are now, overridden.
        self.database_params = DatabaseParams(self.reader, encoder, given_weights(weights), checked,
                                              self.view.current)
        self._resolve()  # refuses a mismatched encoder or weights file now

    # -- documents and trees ------------------------------------------------------

    def known_doc_ids(self, doc_ids: Sequence[str]) -> list[str]:
        """DOC_IDS that the database holds (once each, in their order)."""
        return self.view.known(doc_ids)

    def _one_view(self):
        """One view of the tables for a search (`TablesView.one_view`)."""
        return self.view.one_view()

    def _current(self) -> Current:
        """The current trees (`TablesView.current`)."""
        return self.view.current()

    def n_documents(self) -> int:
        """The documents the database holds now (0: none indexed, or all deleted)."""
        return len(self._current())

    def tree(self, doc_id: str, tree_id: str) -> StoredTree:
        """The tree TREE_ID of DOC_ID, cached (`StoredDocuments.tree`)."""
        return self.documents.tree(doc_id, tree_id)

    def leaf_terms(self, doc_id: str, tree_id: str) -> LeafTerms:
        """Term counts of a tree's leaves, cached (`StoredDocuments.leaf_terms`)."""
        return self.documents.leaf_terms(doc_id, tree_id)

    def document_text(self, doc_id: str, tree_id: str) -> str:
        """The text of DOC_ID's tree TREE_ID, cached (`StoredDocuments.text`)."""
        return self.documents.text(doc_id, tree_id)

    def document_name(self, doc_id: str, tree_id: str) -> str | None:
        """The name other documents may call DOC_ID by (`StoredDocuments.name`)."""
        return self.documents.name(doc_id, tree_id)

    def choose_documents(
        self, qvec: np.ndarray, doc_ids: Sequence[str] | None, *, k: int = 0,
        query: str | None = None, allowed: Collection[str] | None = None,
    ) -> list[str]:
        """The documents a search looks at: DOC_IDS when given, else the first stage's
        (`FirstStage.choose`: `n_docs` and more until they hold K units; fused with the
        full-text index's when QUERY is given and the first stage is hybrid), among
        ALLOWED when given (a filter's documents)."""
        if doc_ids:
            return list(doc_ids)
        return self.first.choose(qvec, k=k, query=query, allowed=allowed)

    def searched_documents(self, query: str, qvec: np.ndarray, chosen: Sequence[str]
                           ) -> list[str]:
        """The documents a corpus-wide query (no doc_ids, no filter) searches in tree and
        leaves mode, given the first stage's CHOSEN (`choose_documents`): those, then the
        documents its best unit names that the first stage missed (`fetch_named`;
        docs/whole-corpus.md, rule 13). `sproutrag evaluate --corpus-wide` reports both
        shares."""
        with self._one_view():
            params, _ = self._resolve()
            return self.searching.find(query, qvec, chosen, params, True).docs

    def scope(self, doc_ids: Sequence[str] | None, where: str | None
              ) -> tuple[list[str] | None, set[str] | None]:
        """(doc_ids to search, documents the first stage may choose) given DOC_IDS and a
        filter WHERE (`TablesView.scope`)."""
        return self.view.scope(doc_ids, where)

    def has_text_index(self) -> bool:
        """Whether `nodes` has its full-text index (the hybrid first stage's words)."""
        return self.first.has_text_index()

    # -- search -------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int = 5,
        doc_ids: Sequence[str] | None = None,
        mode: Mode = "tree",
        where: str | None = None,
    ) -> list[Hit]:
        """Rank evidence for `query`; at most k evidence units over all hits. DOC_IDS (a
        non-empty list of ids; integers are taken as their decimal strings) and WHERE (a
        SQL filter over `documents` columns) restrict the documents searched."""
        check_query_text(query)
        check_count("k", k)
        doc_ids = check_doc_ids(doc_ids)
        with self._one_view():
            doc_ids, allowed = self.scope(doc_ids, where)
            return self.search_vector(query, self._embed([query])[0], k=k,
                                      doc_ids=doc_ids, mode=mode, allowed=allowed)

    def _embed(self, queries: Sequence[str]) -> np.ndarray:
        """The questions' vectors: `Encoder.encode_queries` (a few questions without
        torch), or `encode_texts` of an encoder without it."""
        encode = getattr(self.encoder, "encode_queries", None) or self.encoder.encode_texts
        return encode(list(queries))

    def search_many(
        self,
        queries: Sequence[str],
        *,
        k: int = 5,
        doc_ids: Sequence[Sequence[str] | None] | None = None,
        mode: Mode = "tree",
        batch_size: int = 32,
        where: str | None = None,
    ) -> list[list[Hit]]:
        """`search` for many questions (DOC_IDS: one list, or None, per question): every
        question is checked first (`QueryError` naming the first bad one), then they are
        encoded BATCH_SIZE at a time (one forward pass a batch, where `search` runs one a
        question) and searched one by one, each batch on one view of the tables (one
        refresh and one read of `documents` for its questions: they all answer from the
        same version)."""
        queries, scopes = check_queries(queries, doc_ids)
        check_count("k", k)
        check_count("batch_size", batch_size, limits="k")
        out = []
        for at in range(0, len(queries), batch_size):
            part = queries[at : at + batch_size]
            vectors = self._embed(part)
            with self._one_view():  # one refresh and `documents` read for the batch
                if mode != "flat" and any(x is None for x in scopes[at : at + batch_size]):
                    self.first.prefetch(vectors, self.first.default_limit)
                try:
                    for query, qvec, scope in zip(part, vectors,
                                                  scopes[at : at + batch_size]):
                        known, allowed = self.scope(scope, where)
                        out.append(self.search_vector(query, qvec, k=k, doc_ids=known,
                                                      mode=mode, allowed=allowed))
                finally:
                    self.first.prefetch(vectors[:0], 0)  # forget the batch's rankings
        return out

    def context(
        self,
        query: str,
        *,
        budget_chars: int | None = None,
        budget_tokens: int | None = None,
        k: int | None = None,
        doc_ids: Sequence[str] | None = None,
        where: str | None = None,
        mode: Mode = "tree",
        selection: str | None = None,
        tokenizer: str | None = None,
        cutoff: float | None = DEFAULT_MARGIN,
    ) -> Context:
        """The best evidence for QUERY that fits BUDGET_CHARS characters and/or
        BUDGET_TOKENS tokens (counted by TOKENIZER, a model folder or name: the encoder's
        by default), and at most K units when given: non-overlapping spans, adjacent
        evidence merged into one, grouped by document (by relevance) and in document order
        inside each (`sproutrag.search.context`). DOC_IDS and WHERE restrict the documents
        as in `search`. SELECTION (tree and leaves modes): how evidence competes for the
        budget (`SELECTIONS`; default `DEFAULT_SELECTION`, the one the evaluation chose);
        mode flat takes leaves by cosine. CUTOFF: evidence scoring more than this below
        the best unit is left out even when the budget has room (None: fill the budget
        from the searched documents). The beam width, threshold and margin shape `search`
        only. A span's tokens are counted without special tokens, and no separator between
        spans is counted: joining them costs the reader more."""
        check_query_text(query)
        check_budget(budget_chars, budget_tokens, k, mode, selection, tokenizer)
        doc_ids = check_doc_ids(doc_ids)
        if cutoff is not None:
            check_number("cutoff", cutoff)
        measure = None
        if budget_tokens is not None:
            from sproutrag.search.tokens import token_counter

            measure = token_counter(tokenizer or self.store.encoder_id)
        with self._one_view():
            doc_ids, allowed = self.scope(doc_ids, where)
            qvec = self._embed([query])[0]

            def read() -> Context:
                params, _ = self._resolve()
                docs = self.choose_documents(qvec, doc_ids, k=k or 5, query=query,
                                             allowed=allowed)
                return read_context(
                    self.searching, self.documents, params, query, qvec, docs, not doc_ids,
                    allowed, budget_chars, budget_tokens, measure, k, mode, selection,
                    cutoff)

            return self.view.retried(read, replaced=True)

    def search_vector(
        self,
        query: str,
        qvec: np.ndarray,
        *,
        k: int = 5,
        doc_ids: Sequence[str] | None = None,
        mode: Mode = "tree",
        allowed: Collection[str] | None = None,
    ) -> list[Hit]:
        """`search` with the query already encoded (doc_ids already checked; ALLOWED: the
        documents a filter matched, `scope`).

        An index run removes the table versions it wrote meanwhile: a search that started
        on one of them may find a file gone; it is run once more on the latest versions."""
        if mode not in MODES:
            raise QueryError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        check_count("k", k)
        return self.view.retried(lambda: self._search_vector(
            query, qvec, k=k, doc_ids=doc_ids, mode=mode, allowed=allowed))

    def _search_vector(self, query: str, qvec: np.ndarray, *, k: int,
                       doc_ids: Sequence[str] | None, mode: Mode,
                       allowed: Collection[str] | None = None) -> list[Hit]:
        with self._one_view():  # one refresh, one `documents` read for this query
            params, _ = self._resolve()  # re-checks the encoder if the tables changed
            if mode == "flat":
                return self.flat.search(qvec, k, doc_ids, allowed,
                                        threshold=self.flat_threshold)
            docs = self.choose_documents(qvec, doc_ids, k=k, query=query, allowed=allowed)
            ranked = not doc_ids  # in the first stage's order: its leading ones anchor
            if mode == "leaves":
                return self._leaves(query, qvec, k, docs, params, ranked, allowed)
            return self._tree(query, qvec, k, docs, params, ranked, allowed)

    def _tree(self, query: str, qvec: np.ndarray, k: int, docs: Sequence[str],
              params: SearchParams, ranked: bool = False,
              allowed: Collection[str] | None = None) -> list[Hit]:
        found = self.searching.find(query, qvec, docs, params, ranked, allowed)
        stored = found.stored
        chosen = search_trees(
            {d: s.tree for d, s in stored.items()}, qvec, k=k, params=params, query=query,
            lexical=found.lexical, reranker=self.reranker, scores=found.scores,
            node_text=lambda d, n: node_text(stored[d], n), fill=self.fills_k,
            anchor=found.anchor, links=found.links, doc_vectors=found.vectors,
            doc_questions=found.questions,
        )
        return [hit_of(stored[c.doc_id], c) for c in chosen]

    def _leaves(self, query: str, qvec: np.ndarray, k: int, docs: Sequence[str],
                params: SearchParams, ranked: bool = False,
                allowed: Collection[str] | None = None) -> list[Hit]:
        """Leaves mode: the documents tree mode searches, their leaves ranked by tree mode's
        fused score and cutoffs (`leaf_search.leaves_mode`), no tree."""
        found = self.searching.find(query, qvec, docs, params, ranked, allowed)
        stored = found.stored
        vectors = {d: st.tree.vectors[: st.tree.n] for d, st in stored.items()}
        best = leaves_mode(vectors, qvec, k=k, params=params, query=query,
                           lexical=found.lexical, fill=self.fills_k, anchor=found.anchor,
                           links=found.links, doc_vectors=found.vectors,
                           doc_questions=found.questions)
        return [hit_of(stored[d], Selected(d, u, score, np.array([u]))) for d, u, score in best]


__all__ = ["FIRST_STAGES", "MODES", "Current", "Hit", "QueryError", "Retriever", "sql_quote"]
