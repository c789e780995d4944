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

The search parameters default to those the database was indexed with (its
`index_settings` table, `sproutrag.storage.index_info`); a `weights` file given instead must have
the database's alpha, and an encoder whose content differs from the indexing one is
refused. Both checks are made again whenever the tables change, so a long-lived
Retriever follows re-index runs. Trees and their term counts are cached by tree id in
one LRU of `cache_bytes`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from sproutrag.params import DEFAULT, MODES, SearchParams, check_count, check_number
from sproutrag.search.context import (
    DEFAULT_LENGTH_PENALTY,
    DEFAULT_MARGIN,
    DEFAULT_SELECTION,
    DEFAULT_WINDOW,
    SELECTIONS,
    Context,
    Units,
    build_context,
    ranked_pieces,
    selection_pieces,
)
from sproutrag.search.current import Current
from sproutrag.search.first_stage import FIRST_STAGES, LEAF_FILTER, FirstStage
from sproutrag.search.hits import Hit, QueryError, check_query_text, hit_of, node_text
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.links import (
    FETCH_NAMED,
    LEADER_WEIGHT,
    LINK_WEIGHT,
    Links,
    best_leaf,
)
from sproutrag.search.node_scores import (
    ANCHOR_LEAVES,
    NodeScores,
    anchor_documents,
    cosine_scores,
    node_scores,
)
from sproutrag.search.stored_documents import CACHE_BYTES, StoredDocuments
from sproutrag.search.tree_search import (
    Reranker,
    Selected,
    cosine_rerank,
    leaves_mode,
    rank_scores,
    search_trees,
)
from sproutrag.search.view import TablesView, files_gone
from sproutrag.storage.filters import doc_filter, in_filter, sql_quote
from sproutrag.storage.index_info import search_defaults
from sproutrag.storage.reader import Reader
from sproutrag.storage.rows import StoredTree
from sproutrag.storage.store import StaleIndexError

Mode = Literal["tree", "leaves", "flat"]


#: A filter matching at most this many documents searches them all (as doc_ids do); past
#: it the first stage ranks the documents among those it matches.
FILTER_DIRECT = 64


class Retriever:
    """Search a database built by `sproutrag index`; trees are cached by tree id."""

    def __init__(
        self,
        db: str | Reader,
        *,
        encoder: Any = None,
        weights: Any = None,
        beam_width: int = 5,
        threshold: float | None = None,
        margin: float | None = DEFAULT,
        lexical_weight: float | None = None,
        overrides: Mapping[str, Any] | None = None,
        n_docs: int = 8,
        first_stage: str = "hybrid",
        anchor_leaves: int = ANCHOR_LEAVES,
        link_weight: float = LINK_WEIGHT,
        leader_weight: float = LEADER_WEIGHT,
        fetch_named: int = FETCH_NAMED,
        reranker: Reranker = cosine_rerank,
        storage_options: dict[str, str] | None = None,
        memory_rows: int = 300_000,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        """THRESHOLD, LEXICAL_WEIGHT (None: not set), MARGIN (None: off) and OVERRIDES (any
        `SearchParams` field) replace the database's defaults (`_resolve`). FIRST_STAGE:
        how a query without doc_ids picks its documents (`choose_documents`): "hybrid"
        (nearest nodes and the full-text index's best leaves, fused) or "vector".
        ANCHOR_LEAVES: a query without doc_ids takes BM25's collection and the z-scores
        of its rank scores from the first stage's leading documents until they hold this
        many leaves (`node_scores.anchor_documents`; 0: from every searched document).
        LINK_WEIGHT: in a query without doc_ids, the rank-score points every node of a
        searched document gains when the query or the best leaf's document names it
        (`sproutrag.search.links`; 0: off), and the best leaf's document LEADER_WEIGHT
        when it links to any. FETCH_NAMED: in a query without doc_ids, at
        most this many documents the first stage did not choose are searched too when
        the query or its best leaf writes their name (`_named_elsewhere`; 0: off)."""
        self.anchor_leaves = check_count("anchor_leaves", anchor_leaves)
        self.link_weight = check_number("link_weight", link_weight)
        self.leader_weight = check_number("leader_weight", leader_weight)
        self.fetch_named = check_count("fetch_named", fetch_named)
        if first_stage not in FIRST_STAGES:
            raise QueryError(f"first_stage must be one of {', '.join(FIRST_STAGES)}; got "
                             f"{first_stage!r}")
        given = {"threshold": threshold, "lexical_weight": lexical_weight}
        self._overrides = SearchParams.overrides({
            "beam_width": beam_width, "margin": margin, **(overrides or {}),
            **{k: v for k, v in given.items() if v is not None}})
        # DB: a path (opened here) or a `Reader` that callers share (one open, one read
        # of `index_settings` per version for the reader's settings and this Retriever).
        self.reader = db if isinstance(db, Reader) else Reader.open(
            db, storage_options=storage_options)
        self.store = self.reader.store
        encoder = encoder if encoder is not None else self._database_encoder()
        if encoder.model_id != self.store.encoder_id or encoder.dim != self.store.dim:
            raise StaleIndexError(
                f"database {self.store.uri!r} was built with encoder {self.store.encoder_id!r} "
                f"(dim {self.store.dim}, index fingerprint {self._fingerprints()}); this "
                f"query uses {encoder.model_id!r} (dim {encoder.dim}): query with the "
                "encoder the database was built with (settings encoding.model)"
            )
        self.encoder, self.weights = encoder, weights
        self.reranker = reranker
        self.view = TablesView(self.reader)  # per thread: one `documents` read a search
        # Trees, term counts, texts and names, cached by tree id in one LRU.
        self.documents = StoredDocuments(self.store, self.view, cache_bytes)
        # The documents of a query without doc_ids; vectors from memory while `nodes`
        # has at most `memory_rows` rows (about 1.5 KB each), LanceDB beyond.
        self.first = FirstStage(self.store, self.view.current, n_docs=n_docs,
                                kind=first_stage, memory_rows=memory_rows)
        self._settings: tuple[tuple[int, int], SearchParams, Any] | None = None
        self._resolve()  # refuses a mismatched encoder or weights file now

    def _database_encoder(self) -> Any:
        """The encoder the database names (model, query truncation), packaged weights."""
        from sproutrag.encoder.factory import shared_encoder
        from sproutrag.schemas.settings import EncodingSettings

        fields = self.reader.encoding_fields()
        return shared_encoder(EncodingSettings(
            model=self.store.encoder_id, chunk_max_tokens=fields.get("chunk_max_tokens", 256)))

    def _resolve(self) -> tuple[SearchParams, Any]:
        """(search parameters, their defaults) for the tables as they are now: the
        database's index settings (or WEIGHTS, or the encoder's), then the overrides."""
        current = self._current()
        version, fingerprints = current.version, current.fingerprints
        infos_version, stored = self.reader.index_infos()
        key = (version, infos_version)
        if self._settings is None or self._settings[0] != key:
            infos = {f: stored[f] for f in fingerprints if f in stored}
            base = search_defaults(infos, encoder=self.encoder, weights=self.weights,
                                   uri=self.store.uri)
            params = replace(base.params, **self._overrides)
            self._settings = (key, params, base)
        return self._settings[1], self._settings[2]

    @property
    def params(self) -> SearchParams:
        """The tree search's parameters now (see `_resolve`)."""
        return self._resolve()[0]

    @property
    def defaults(self) -> Any:
        """Where the defaults came from (`sproutrag.storage.index_info.SearchDefaults`)."""
        return self._resolve()[1]

    @property
    def beam_width(self) -> int:
        return self.params.beam_width

    @property
    def threshold(self) -> float:
        return self.params.threshold

    @property
    def margin(self) -> float | None:
        return self.params.margin

    @property
    def lexical_weight(self) -> float:
        return self.params.lexical_weight

    @property
    def fills_k(self) -> bool:
        """Whether tree and leaves modes return k units whenever the searched documents
        hold k: yes with the database's threshold and margin (they order the evidence:
        what passes them comes first), no with a threshold or a margin given explicitly
        (then a cutoff, as flat mode's threshold; an explicit margin of None is none)."""
        return "threshold" not in self._overrides and self._overrides.get("margin") is None

    @property
    def flat_threshold(self) -> float | None:
        """Flat mode cuts only at an explicit threshold."""
        return self._overrides.get("threshold")

    def _fingerprints(self) -> str:
        """The index fingerprints of the stored documents, for error messages."""
        tbl = self.store.table("documents")
        if tbl is None:
            return "none"
        rows = tbl.search().select(["index_fingerprint"]).limit(None).to_arrow()
        return ", ".join(sorted(set(rows.column(0).to_pylist()))) or "none"

    # -- documents and trees ------------------------------------------------------

    def known_doc_ids(self, doc_ids: Sequence[str]) -> list[str]:
        """DOC_IDS that the database holds (once each, in their order)."""
        return list(self._current().tree_ids_of(doc_ids))

    def _one_view(self):
        """One view of the tables for a search (`TablesView.one_view`)."""
        return self.view.one_view()

    def _current(self) -> Current:
        """The current trees (`TablesView.current`)."""
        return self.view.current()

    def _forget_view(self) -> None:
        self.view.forget()

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

    @property
    def n_docs(self) -> int:
        """Documents a query without doc_ids searches (at least; see `choose_documents`)."""
        return self.first.n_docs

    @property
    def first_stage(self) -> str:
        return self.first.kind

    @property
    def memory_rows(self) -> int:
        return self.first.memory_rows

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
        docs/results.md, rule 13). `sproutrag evaluate --corpus-wide` reports both
        shares."""
        with self._one_view():
            params, _ = self._resolve()
            return self._searched(query, qvec, chosen, params, True)[0]

    def scope(self, doc_ids: Sequence[str] | None, where: str | None
              ) -> tuple[list[str] | None, set[str] | None]:
        """(doc_ids to search, documents the first stage may choose) of a search given
        DOC_IDS and a filter WHERE on `documents` columns: the known doc_ids (QueryError
        when none is); with WHERE only the matching ones, searched all when at most
        `FILTER_DIRECT` match, else ranked by the first stage among them (a prefilter: k
        is filled from the matching documents). QueryError when no document matches."""
        known = None
        if doc_ids is not None:
            known = self.known_doc_ids(list(doc_ids))
            if not known:
                raise QueryError(f"none of the doc_ids {list(doc_ids)!r} is in the database")
        if where is None:
            return known, None
        matching = self.view.matching(where)
        if known is not None:
            wanted = set(matching)
            matching = [d for d in known if d in wanted]
        if not matching:
            raise QueryError(f"no document matches the filter {where!r}"
                             + (" among the doc_ids" if known is not None else ""))
        if len(matching) <= FILTER_DIRECT:
            return matching, None
        return None, set(matching)

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
        """Rank evidence for `query`; at most k evidence units over all hits. DOC_IDS and
        WHERE (a SQL filter over `documents` columns) restrict the documents searched."""
        check_query_text(query)
        check_count("k", k)
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
        queries = list(queries)
        for n, query in enumerate(queries):
            try:
                check_query_text(query)
            except QueryError as exc:
                raise QueryError(f"query {n}: {exc}") from None
        check_count("k", k)
        scopes = list(doc_ids) if doc_ids is not None else [None] * len(queries)
        if len(scopes) != len(queries):
            raise QueryError(f"doc_ids: {len(scopes)} lists for {len(queries)} queries")
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
        mode flat takes leaves by cosine."""
        check_query_text(query)
        self._check_budget(budget_chars, budget_tokens, k, mode, selection)
        if cutoff is not None:
            check_number("cutoff", cutoff)
        measure = None
        if budget_tokens is not None:
            from sproutrag.search.tokens import token_counter

            measure = token_counter(tokenizer or self.store.encoder_id)
        with self._one_view():
            doc_ids, allowed = self.scope(doc_ids, where)
            qvec = self._embed([query])[0]
            for again in (True, False):
                try:
                    return self._context(query, qvec, budget_chars, budget_tokens, measure,
                                         k, doc_ids, allowed, mode, selection, cutoff)
                except KeyError:  # a document replaced under this view: read it again
                    if not again:
                        raise
                    self._forget_view()
                except (RuntimeError, OSError) as exc:
                    if not again or not files_gone(exc):
                        raise
                    self.view.refresh()
                    self._forget_view()
        raise AssertionError("unreachable")

    @staticmethod
    def _check_budget(budget_chars: int | None, budget_tokens: int | None, k: int | None,
                      mode: str, selection: str | None) -> None:
        if budget_chars is None and budget_tokens is None:
            raise QueryError("a context needs a budget: give budget_chars or budget_tokens")
        for name, value in (("budget_chars", budget_chars), ("budget_tokens", budget_tokens)):
            if value is not None:
                check_count(name, value)
        if k is not None:
            check_count("k", k)
        if mode not in MODES:
            raise QueryError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        if selection is not None and selection not in SELECTIONS:
            raise QueryError(f"selection must be one of {', '.join(SELECTIONS)}; got "
                             f"{selection!r}")

    def _context(self, query: str, qvec: np.ndarray, budget_chars: int | None,
                 budget_tokens: int | None, measure: Any, k: int | None,
                 doc_ids: Sequence[str] | None, allowed: Collection[str] | None,
                 mode: str, selection: str | None, cutoff: float | None) -> Context:
        params, _ = self._resolve()
        docs = self.choose_documents(qvec, doc_ids, k=k or 5, query=query, allowed=allowed)
        found = links = None  # a corpus-wide query's node scores and names, from the fetch
        if mode != "flat" and not doc_ids:
            docs, _, _, links, found = self._searched(query, qvec, docs, params, True,
                                                      allowed, texts=True)
        loaded = self.documents.load_trees(docs)
        stored = {d: st for d, (_, st) in loaded.items()}
        self.documents.prefetch(loaded, texts=True, names=False,
                                terms=mode != "flat" and params.lexical_weight > 0)
        units = {d: Units(st.spans, self.document_text(d, t)) for d, (t, st) in loaded.items()}
        if mode == "flat":
            cos = {d: cosine_scores(st.tree.vectors[: st.tree.n], qvec)
                   for d, st in stored.items()}
            order = sorted((-float(c[u]), d, u) for d, c in cos.items() for u in range(len(c)))
            pieces, overlap = ranked_pieces((d, u, -r) for r, d, u in order), "skip"
            chosen = "flat"
        else:
            lexical = ({d: self.leaf_terms(d, t) for d, (t, _) in loaded.items()}
                       if params.lexical_weight > 0 else None)
            trees = {d: st.tree for d, st in stored.items()}
            scores = rank_scores(trees, qvec, params=params, query=query, lexical=lexical,
                                 scores=found, anchor=self._anchor(docs, stored, not doc_ids),
                                 links=links)
            chosen = selection or DEFAULT_SELECTION
            if mode == "leaves" and chosen == "tree":
                chosen = "leaves"  # leaves mode has no tree to select from
            pieces, overlap = selection_pieces(
                chosen, {d: s.rank for d, s in scores.items()}, units, trees=trees,
                length_penalty=DEFAULT_LENGTH_PENALTY, window=DEFAULT_WINDOW, margin=cutoff)
        ctx = build_context(pieces, units, budget_chars=budget_chars,
                            budget_tokens=budget_tokens, measure=measure, k=k,
                            overlap=overlap)
        ctx.meta.update(selection=chosen, mode=mode,
                        cutoff=cutoff if mode != "flat" else None)
        return ctx

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
        try:
            return self._search_vector(query, qvec, k=k, doc_ids=doc_ids, mode=mode,
                                       allowed=allowed)
        except (RuntimeError, OSError) as exc:
            if not files_gone(exc):
                raise
            self.view.refresh()
            self._forget_view()
            return self._search_vector(query, qvec, k=k, doc_ids=doc_ids, mode=mode,
                                       allowed=allowed)

    def _search_vector(self, query: str, qvec: np.ndarray, *, k: int,
                       doc_ids: Sequence[str] | None, mode: Mode,
                       allowed: Collection[str] | None = None) -> list[Hit]:
        with self._one_view():  # one refresh, one `documents` read for this query
            params, _ = self._resolve()  # re-checks the encoder if the tables changed
            if mode == "flat":
                return self._flat(qvec, k, doc_ids, allowed=allowed)
            docs = self.choose_documents(qvec, doc_ids, k=k, query=query, allowed=allowed)
            ranked = not doc_ids  # in the first stage's order: its leading ones anchor
            if mode == "leaves":
                return self._leaves(query, qvec, k, docs, params, ranked, allowed)
            return self._tree(query, qvec, k, docs, params, ranked, allowed)

    def _flat(self, qvec: np.ndarray, k: int, doc_ids: Sequence[str] | None,
              allowed: Collection[str] | None = None, again: int = 3) -> list[Hit]:
        """Cosine top-k over the current trees' leaves (of DOC_IDS, or among ALLOWED). An
        index run may have replaced the trees this search's view names since it read
        them (their rows gone): then the search runs again on a fresh view, up to AGAIN
        more times (a view can be several batches old on a loaded machine)."""
        where = LEAF_FILTER
        current = self._current()
        if doc_ids:
            trees = self.documents.tree_ids(doc_ids)
            if not trees:
                return []
            where += f" AND {doc_filter(trees)} AND {in_filter('tree_id', trees.values())}"
            units = int(current.leaves_of(trees).sum())
        elif allowed is not None:
            units = int(current.leaves_of(allowed).sum())
        else:
            units = current.units  # no more rows to ask LanceDB for
        want = min(k, units)
        rows = self._nearest_leaves(qvec, want, where, allowed) if units else []
        if again and len(rows) < want:  # trees replaced under this view
            self._forget_view()
            return self._flat(qvec, k, doc_ids, allowed, again=again - 1)
        hits = [
            Hit(r["doc_id"], f"{r['doc_id']}:{r['idx']}", 1.0 - float(r["_distance"]),
                [(int(r["start"]), int(r["end"]))], r["text"])
            for r in rows
        ]
        if self.flat_threshold is not None:
            hits = [h for h in hits if h.score >= self.flat_threshold]
        return hits

    def _nearest_leaves(self, qvec: np.ndarray, k: int, where: str,
                        allowed: Collection[str] | None) -> list[dict[str, Any]]:
        """The K nearest leaves matching WHERE (and of the ALLOWED documents: asked for
        four times as many until K of them are found, or every row was)."""
        if allowed is None:
            return self.first.nearest_nodes(qvec, k, where)
        limit, units = 4 * k, self._current().units
        while True:
            rows = [r for r in self.first.nearest_nodes(qvec, limit, where)
                    if r["doc_id"] in allowed]
            if len(rows) >= k or limit >= units:
                return rows[:k]
            limit = min(4 * limit, units)

    def _loaded(self, docs: Sequence[str], params: SearchParams, query: str, ranked: bool,
                *, texts: bool = False):
        """(doc_id -> stored tree, doc_id -> leaf terms or None, the query's `Links` or
        None) of DOCS' current trees (TEXTS: their texts read into the cache too)."""
        loaded = self.documents.load_trees(docs)
        stored = {d: st for d, (_, st) in loaded.items()}
        self.documents.prefetch(loaded, terms=params.lexical_weight > 0,
                                names=ranked and self.link_weight > 0, texts=texts)
        lexical = ({d: self.leaf_terms(d, t) for d, (t, _) in loaded.items()}
                   if params.lexical_weight > 0 else None)
        return stored, lexical, self._links(query, loaded, ranked)

    def _links(self, query: str, loaded: Mapping[str, tuple[str, StoredTree]],
               ranked: bool) -> Links | None:
        """The names a query follows when LOADED (doc_id -> (tree id, tree)) are the first
        stage's RANKED choice and the link weight is not 0; else None. The best leaf's
        text (where names are looked for) is in memory. A document replaced meanwhile has no
        name for this query, nor one that another document of the corpus also has (a
        generic heading; `documents.name_key`, docs/results.md, rule 15)."""
        if not ranked or self.link_weight <= 0:
            return None
        names: dict[str, str | None] = {}
        for d, (t, _) in loaded.items():
            try:
                names[d] = self.document_name(d, t)
            except KeyError:
                names[d] = None
        return Links(self._current().names.unique(names), lambda d, u: loaded[d][1].texts[u],
                     query, self.link_weight, self.leader_weight)

    def _anchor(self, docs: Sequence[str], stored: Mapping[str, StoredTree],
                ranked: bool) -> list[str] | None:
        """The documents a query's statistics come from: the first stage's leading ones
        when DOCS are its RANKED choice (`anchor_documents`), else all (None)."""
        if not ranked:
            return None
        leaves = {d: st.tree.n for d, st in stored.items()}
        return anchor_documents([d for d in docs if d in stored], leaves, self.anchor_leaves)

    def _searched(self, query: str, qvec: np.ndarray, docs: Sequence[str],
                  params: SearchParams, ranked: bool,
                  allowed: Collection[str] | None = None, *, texts: bool = False):
        """(the documents searched, their trees, leaf terms and `Links` as `_loaded`
        gives them, and their `node_scores` when computed already, else None): DOCS, and
        when they are the first stage's RANKED choice the documents `_named_elsewhere`
        adds (among ALLOWED). TEXTS: their texts are read too (a context's)."""
        stored, lexical, links = self._loaded(docs, params, query, ranked, texts=texts)
        if not ranked or self.fetch_named <= 0 or not stored:
            return list(docs), stored, lexical, links, None
        scores = node_scores({d: st.tree for d, st in stored.items()}, qvec, query=query,
                             lexical=lexical, lexical_weight=params.lexical_weight,
                             anchor=self._anchor(docs, stored, ranked))
        extra = self._named_elsewhere(query, stored, scores, allowed)
        if not extra:
            return list(docs), stored, lexical, links, scores
        docs = [*docs, *extra]
        stored, lexical, links = self._loaded(docs, params, query, ranked, texts=texts)
        return docs, stored, lexical, links, None

    def _named_elsewhere(self, query: str, stored: Mapping[str, StoredTree],
                         scores: Mapping[str, NodeScores],
                         allowed: Collection[str] | None) -> list[str]:
        """The documents not in STORED (the searched ones) whose name the query or the
        best leaf by SCORES writes, a name no other document has (`documents.name_key`,
        looked up in the view's `NameIndex`: no read), among ALLOWED when given; at most
        `fetch_named`, in the order their names are written (docs/results.md, rule 13)."""
        best = best_leaf({d: s.rank[: stored[d].tree.n] for d, s in scores.items()})
        if best is None:
            return []
        texts = (query, stored[best[0]].texts[best[1]])
        return self._current().names.named_in(texts, self.fetch_named, skip=stored,
                                              allowed=allowed)

    def _tree(self, query: str, qvec: np.ndarray, k: int, docs: Sequence[str],
              params: SearchParams, ranked: bool = False,
              allowed: Collection[str] | None = None) -> list[Hit]:
        docs, stored, lexical, links, scores = self._searched(query, qvec, docs, params,
                                                              ranked, allowed)
        chosen = search_trees(
            {d: s.tree for d, s in stored.items()}, qvec, k=k, params=params, query=query,
            lexical=lexical, reranker=self.reranker, scores=scores,
            node_text=lambda d, n: node_text(stored[d], n), fill=self.fills_k,
            anchor=self._anchor(docs, stored, ranked), links=links,
        )
        return [hit_of(stored[c.doc_id], c) for c in chosen]

    def _leaves(self, query: str, qvec: np.ndarray, k: int, docs: Sequence[str],
                params: SearchParams, ranked: bool = False,
                allowed: Collection[str] | None = None) -> list[Hit]:
        """Leaves mode: the documents tree mode searches, their leaves ranked by tree mode's
        fused score and cutoffs (`tree_search.leaves_mode`), no tree."""
        docs, stored, lexical, links, _ = self._searched(query, qvec, docs, params, ranked,
                                                         allowed)
        vectors = {d: st.tree.vectors[: st.tree.n] for d, st in stored.items()}
        found = leaves_mode(vectors, qvec, k=k, params=params, query=query, lexical=lexical,
                            fill=self.fills_k, anchor=self._anchor(docs, stored, ranked),
                            links=links)
        return [hit_of(stored[d], Selected(d, u, score, np.array([u]))) for d, u, score in found]


__all__ = ["FIRST_STAGES", "MODES", "Current", "Hit", "QueryError", "Retriever", "sql_quote"]
