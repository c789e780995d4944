"""The first stage of a corpus-wide query: which documents the search looks at.

`FirstStage.choose` ranks documents by their nearest nodes (vectors: from memory while
`nodes` is small, LanceDB's ANN-indexed search beyond) and, with the hybrid first stage,
by their best leaves in LanceDB's full-text index (the words), then fuses the two
rankings by reciprocal rank (`sproutrag.search.rankings`; the full-text reads are
`sproutrag.search.text_index`'s). The `Retriever` owns one and hands it a
view of the current trees (`Current`, read once per `documents` version); rows of other
trees (a run writing, or killed) are fetched in excess and dropped.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np

from sproutrag.errors import QueryError, short_error
from sproutrag.params import check_count
from sproutrag.search.entities import question_entities
from sproutrag.search.node_memory import NodeRows, read_node_rows, top_rows
from sproutrag.search.rankings import fuse_rankings, keep_leaders
from sproutrag.search.text_index import (
    WRITING_HITS,
    TextSearch,
    documents_writing,
    index_damaged,
    text_query,
    text_ranking,
    warn_once,
)
from sproutrag.storage.indexes import vector_index_record

if TYPE_CHECKING:
    from sproutrag.search.current import Current
    from sproutrag.storage.store import Store

#: How a query without doc_ids picks its documents (`FirstStage.choose`).
FIRST_STAGES = ("hybrid", "vector")

#: The ANN search of `FirstStage.nearest_nodes` probes PROBE_SHARE of the vector index's
#: IVF partitions (about sqrt(rows) of them: `storage.indexes.vector_partitions`), and at
#: least MIN_PROBES (small indexes); REFINE_FACTOR times the rows asked for are re-ranked
#: by their full vectors. An index without a record (LanceDB's default partitions, about
#: rows / 8192) is probed UNRECORDED_PROBES times. Recall@10 against exact search
#: (`bench/query.py --scale`, on-topic queries): 50 of 1,000 partitions (1M rows) 0.96,
#: 95 of 3,162 (10M rows) 0.996.
PROBE_SHARE = 0.03
MIN_PROBES = 50
REFINE_FACTOR = 2
UNRECORDED_PROBES = 32


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system reports one
    (a container or `taskset` limits it below the machine's count), else the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


#: `FirstStage.choose` runs its full-text queries beside its vector search while at most
#: this many searches choose at once (half the cores the process may use: beyond, every
#: core is busy and the threads would only contend; docs/results.md, "How a corpus-wide
#: query grows").
SPARE_CORES = max(1, usable_cores() // 2)

log = logging.getLogger(__name__)

#: The columns of each row `FirstStage.nearest_nodes` returns unless told otherwise.
NODE_COLUMNS = ("doc_id", "tree_id", "idx", "start", "end", "text", "_distance")


def _started(call: Callable[[], Any]) -> Future:
    """CALL running in a thread of its own; its Future gives the result or raises what
    CALL raised (a thread per call: nothing to shut down, nothing a fork inherits)."""
    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:  # handed to the caller of `result`
            future.set_exception(exc)

    threading.Thread(target=run, name="sproutrag-text-query", daemon=True).start()
    return future


def ann_probes(partitions: int | None) -> int:
    """The IVF partitions a query probes in an index of PARTITIONS (None: not recorded)."""
    if partitions is None:
        return UNRECORDED_PROBES
    return min(partitions, max(MIN_PROBES, math.ceil(PROBE_SHARE * partitions)))


#: The filter of the leaves (flat mode): about half of `nodes`, so an ANN search with it
#: probes as many partitions as one without it (a BITMAP index answers it).
LEAF_FILTER = "left = -1"


def check_first_stage(kind: Any, entities: Any, leaders: Any) -> int:
    """LEADERS (`FirstStage`'s), checked with its KIND (`FIRST_STAGES`) and ENTITIES (true
    or false): `QueryError` naming a bad one."""
    if kind not in FIRST_STAGES:
        raise QueryError(f"first_stage must be one of {', '.join(FIRST_STAGES)}; got {kind!r}")
    if not isinstance(entities, bool):
        raise QueryError(f"entity_ranking must be true or false; got {entities!r}")
    return check_count("ranking_leaders", leaders)


class FirstStage:
    """Candidate documents of a query over the current trees of STORE."""

    def __init__(self, store: Store, current: Callable[[], Current], *, n_docs: int,
                 kind: str, memory_rows: int, entities: bool = True,
                 leaders: int = 0) -> None:
        """CURRENT: the current trees now (the Retriever's pinned view during a search).
        KIND: "hybrid" or "vector" (`FIRST_STAGES`). MEMORY_ROWS: up to this many `nodes`
        rows the vectors are ranked from memory (about 1.5 KB a row), LanceDB beyond.
        ENTITIES: the hybrid stage also ranks by the question's entities (`choose`).
        LEADERS: the first documents of each ranking the hybrid stage keeps among its
        `n_docs` (`keep_leaders`; rule 54)."""
        self.leaders = leaders
        self.store, self.current = store, current
        self.kind, self.memory_rows = kind, memory_rows
        self.n_docs = check_count("n_docs", n_docs)  # as `search.n_docs` (1 to 10,000)
        self._text_index: tuple[int, bool] | None = None  # (nodes version, exists)
        self._rows: tuple[int, int] | None = None  # (nodes version, rows)
        self._probes: tuple[int, int] | None = None  # (nodes version, ANN probes)
        self._matrix: NodeRows | None = None
        self._ranked = threading.local()  # `prefetch`: node rankings of a batch's questions
        # A third ranking of the hybrid stage: the full-text index's for the question's
        # entities alone (docs/whole-corpus.md, rule 25).
        self.entities = entities
        self._choosing = 0  # `choose` calls running now, in all threads
        self._choosing_lock = threading.Lock()

    def _count(self, nodes: Any) -> int:
        """Rows of the `nodes` table at its version (counted once per version)."""
        version = self.store.version("nodes")
        if self._rows is None or self._rows[0] != version:
            self._rows = (version, nodes.count_rows())
        return self._rows[1]

    @property
    def default_limit(self) -> int:
        """Nodes a first ranking looks at (`choose` widens it when they hold too few)."""
        return max(50, 10 * self.n_docs)

    def stale_rows(self, nodes: Any) -> int:
        """Rows of `nodes` outside the current trees (0 unless a run writes or was killed)."""
        return max(0, self._count(nodes) - self.current().rows)

    def node_matrix(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(doc id per current node row, L2-normalised vectors), or (None, None) past
        memory_rows."""
        rows = self._node_rows()
        return rows.docs, rows.vecs

    def _node_rows(self) -> NodeRows:
        """The current nodes held in memory, read once per version of `nodes` and of the
        current trees (nothing past memory_rows)."""
        tbl = self.store.table("nodes")
        current = self.current()
        versions = (self.store.version("nodes"), current.version)
        if self._matrix is None or self._matrix.versions != versions:
            self._matrix = (NodeRows(versions) if self._count(tbl) > self.memory_rows
                            else read_node_rows(tbl, current, versions, self.store.dim))
        return self._matrix

    def probes(self, nodes: Any) -> int:
        """`ann_probes` of the vector index of `nodes` (read once per table version)."""
        if self._probes is None or self._probes[0] != self.store.version("nodes"):
            record = vector_index_record(nodes)
            self._probes = (self.store.version("nodes"),
                            ann_probes(record and record["partitions"]))
        return self._probes[1]

    def nearest_nodes(self, qvec: np.ndarray, limit: int, where: str | None,
                      columns: Sequence[str] = NODE_COLUMNS) -> list[dict[str, Any]]:
        """The LIMIT nearest rows of the current trees (matching WHERE), by LanceDB: exact
        below the vector index's size, else its ANN search (`ann_probes`, `REFINE_FACTOR`).
        With WHERE (other than `LEAF_FILTER`, which half the rows match), partitions past
        the probes are searched while too few rows match.
        COLUMNS: those of each row (`doc_id` and `tree_id` always; each one more is read
        row by row from the data files)."""
        nodes = self.store.table("nodes")
        try:
            rows = self._vector_query(nodes, qvec, limit, where, columns).to_list()
        except (RuntimeError, OSError) as exc:
            if not index_damaged(exc):
                raise
            warn_once("vector", f"the vector index of nodes cannot be read "
                      f"({short_error(exc)}): searching the vectors exactly (slower) until "
                      "an index run builds it again", log)
            rows = self._vector_query(nodes, qvec, limit, where, columns,
                                      bypass=True).to_list()
        now = self.current().is_current([r["doc_id"] for r in rows], [r["tree_id"] for r in rows])
        return [r for r, ok in zip(rows, now.tolist(), strict=True) if ok][:limit]

    def _vector_query(self, nodes: Any, qvecs: np.ndarray, limit: int, where: str | None,
                      columns: Sequence[str], bypass: bool = False) -> Any:
        """`nearest_nodes`' LanceDB query of one vector, or of each row of QVECS (n, d):
        LanceDB answers them in one search, its rows naming their `query_index`."""
        cols = list(dict.fromkeys(["doc_id", "tree_id", *columns]))
        q = nodes.search(list(np.asarray(qvecs, np.float32)) if np.ndim(qvecs) == 2
                         else np.asarray(qvecs, np.float32)).distance_type("cosine")
        if bypass:  # exact: the ANN index is damaged
            q = q.bypass_vector_index()
        else:
            probes = self.probes(nodes)  # used only once an ANN index exists
            rare = where is not None and where != LEAF_FILTER
            q = q.minimum_nprobes(probes).maximum_nprobes(0 if rare else probes)
            q = q.refine_factor(REFINE_FACTOR)
        if where:
            q = q.where(where, prefilter=True)
        return q.select(cols).limit(limit + self.stale_rows(nodes))

    def choose(self, qvec: np.ndarray, *, k: int = 0, query: str | None = None,
               allowed: Collection[str] | None = None) -> list[str]:
        """`n_docs` documents, best first, and more while their evidence units number
        fewer than K (up to every document), so that an answer can be filled to k.
        Documents are ranked by their nearest nodes (`ranked_by_vector`); with QUERY and
        the hybrid first stage, that ranking and the one of the documents of the best
        leaves by the full-text index (`ranked_by_text`) are fused by reciprocal rank, so
        a document that only the words match is looked at too; with `entities` and a
        question that names any (`question_entities`), so is the full-text ranking for
        their words alone (a company's or party's few rare words among the question's
        common ones; docs/whole-corpus.md, rule 25); the first `leaders` of each ranking
        are among the first `n_docs` (`keep_leaders`, rule 54). ALLOWED: only these
        documents (a filter): the ranking widens until it holds enough of them, or all
        of them (all the database's without ALLOWED: a database of fewer than `n_docs`
        documents ranks its nodes once, not until every node is ranked)."""
        current = self.current()
        limit = self.default_limit
        hybrid = query is not None and self.kind == "hybrid"
        names = question_entities(query) if hybrid and self.entities else []
        texts = [query, *([" ".join(names)] if names else [])] if hybrid else []
        with self._choosing_lock:
            self._choosing += 1
            # the full-text queries run in threads of their own while this one ranks by
            # vector, when the machine has a core to spare for them
            beside = self._choosing <= SPARE_CORES
        try:
            while True:
                searches = [self._text_search(text, limit) for text in texts]
                found = [(_started(x.run).result if beside else x.run)
                         if x is not None else None for x in searches]
                ranked = self.ranked_by_vector(qvec, limit)
                if hybrid:
                    rankings = [ranked, *(text_ranking(x, rows) if x is not None else []
                                          for x, rows in zip(searches, found, strict=True))]
                    ranked = keep_leaders(fuse_rankings(rankings), rankings, self.n_docs,
                                          self.leaders)
                if allowed is not None:
                    ranked = [d for d in ranked if d in allowed]
                chosen, enough = self._leading(ranked, current, k)
                every = len(chosen) >= len(current if allowed is None else allowed)
                if enough or every or limit >= current.rows:
                    return chosen  # more nodes would find no other document
                limit = min(4 * limit, current.rows)  # widen: rank more nodes
        finally:
            with self._choosing_lock:
                self._choosing -= 1

    def _leading(self, ranked: list[str], current: Current, k: int
                 ) -> tuple[list[str], bool]:
        """The first documents of RANKED until `n_docs` of them hold K evidence units
        (CURRENT's leaves), and whether they do."""
        chosen, units = [], 0
        for doc, leaves in zip(ranked, current.leaves_of(ranked).tolist(), strict=True):
            if len(chosen) >= self.n_docs and units >= k:
                break
            chosen.append(doc)
            units += leaves
        return chosen, len(chosen) >= self.n_docs and units >= k

    def prefetch(self, qvecs: np.ndarray, limit: int) -> None:
        """Rank the current nodes for every question of QVECS at once (one matrix product
        instead of one product a question), for this thread's next `ranked_by_vector`
        calls of these vectors with at most LIMIT nodes. Past memory_rows, one LanceDB
        search of all the vectors (`_vector_query`) instead of one a question; nothing
        when it fails (each question's own search reports a damaged index)."""
        docs, vecs = self.node_matrix()
        self._ranked.found = {}
        if not len(qvecs) or limit < 1:
            return
        if vecs is None:
            self._prefetch_lance(np.asarray(qvecs), limit)
            return
        if not len(vecs):
            return
        q = np.asarray(qvecs, np.float32)
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        top = min(limit, len(vecs))
        scores, best = top_rows(q, vecs, top)  # negated scores: best first
        for j, qvec in enumerate(np.asarray(qvecs)):
            b = best[j]
            b = b[np.argsort(scores[j, b], kind="stable")]
            self._ranked.found[np.asarray(qvec).tobytes()] = (id(vecs), top, docs[b])

    def _prefetch_lance(self, qvecs: np.ndarray, limit: int) -> None:
        nodes = self.store.table("nodes")
        try:
            rows = self._vector_query(nodes, qvecs, limit, None, ("_distance",)).to_arrow()
        except (RuntimeError, OSError):
            return
        per_query: list[list[str]] = [[] for _ in qvecs]
        which = rows["query_index"].to_numpy()
        order = np.lexsort((rows["_distance"].to_numpy(), which)).tolist()
        docs, trees = rows["doc_id"].to_pylist(), rows["tree_id"].to_pylist()
        now = self.current().is_current(docs, trees)
        for i, d, ok in ((int(which[j]), docs[j], now[j]) for j in order):
            if ok and len(per_query[i]) < limit:
                per_query[i].append(d)
        for qvec, ranked in zip(qvecs, per_query):
            self._ranked.found[qvec.tobytes()] = (id(None), limit, np.array(ranked, object))

    def ranked_by_vector(self, qvec: np.ndarray, limit: int) -> list[str]:
        """The documents of the LIMIT nearest nodes of the current trees, best first."""
        docs, vecs = self.node_matrix()
        found = getattr(self._ranked, "found", {}).get(np.asarray(qvec).tobytes())
        if found is not None and found[0] == id(vecs) and limit <= found[1]:
            return list(dict.fromkeys(found[2][:limit].tolist()))  # `prefetch`ed
        if vecs is None:  # a large table: LanceDB's (ANN-indexed) search
            rows = self.nearest_nodes(qvec, limit, None, columns=("_distance",))
            ranked = [r["doc_id"] for r in rows]
        elif len(vecs):  # the same exact cosine ranking, from memory
            q = (qvec / max(float(np.linalg.norm(qvec)), 1e-12)).astype(np.float32)
            scores, top = top_rows(q[None, :], vecs, min(limit, len(vecs)))
            top = top[0][np.argsort(scores[0, top[0]], kind="stable")]
            ranked = docs[top].tolist()
        else:
            ranked = []
        return list(dict.fromkeys(ranked))

    def has_text_index(self) -> bool:
        """Whether `nodes` has its full-text index (checked once per table version)."""
        version = self.store.version("nodes")
        if self._text_index is None or self._text_index[0] != version:
            self._text_index = (version, self.store.text_index() is not None)
        return self._text_index[1]

    def ranked_by_text(self, query: str, limit: int) -> list[str]:
        """The documents of the LIMIT best leaves of the current trees by LanceDB's
        full-text index (its BM25 over `nodes.text`), best first; [] without the index
        (a database no index run has maintained since it was built).

        Only leaves have a text (an internal node's is null), so the search is not
        filtered: a filter on `left` would be read for every row of `nodes` per query
        (0.3 s at 10M rows). Up to memory_rows the hits' row ids are looked up among the
        current leaves in memory (`LeafRows`); beyond, each hit's document and tree are
        read with it."""
        search = self._text_search(query, limit)
        return text_ranking(search, search.run) if search is not None else []

    def _text_search(self, query: str, limit: int) -> TextSearch | None:
        """`ranked_by_text`'s search of QUERY, not run yet; None (warned once) without
        the full-text index."""
        if not self.has_text_index():
            warn_once("text", "nodes has no full-text index: corpus-wide queries rank "
                      "documents by their vectors alone until an index run builds it")
            return None
        nodes = self.store.table("nodes")
        leaves, limit = self._node_rows().leaves, limit + self.stale_rows(nodes)
        if leaves is not None:  # row ids only, their documents from memory
            return TextSearch(lambda: text_query(nodes, query, [], limit),
                               lambda found: leaves.documents(found["_rowid"].to_numpy()))

        def current_documents(found: Any) -> list[str]:
            docs = found["doc_id"].to_pylist()
            now = self.current().is_current(docs, found["tree_id"].to_pylist())
            return list(dict.fromkeys(d for d, ok in zip(docs, now.tolist(), strict=True)
                                      if ok))

        return TextSearch(
            lambda: text_query(nodes, query, ["doc_id", "tree_id"], limit),
            current_documents)

    def writing(self, entity: str, limit: int = WRITING_HITS) -> list[str]:
        """The current documents whose leaves write ENTITY as whole words, among the LIMIT
        best leaves of the full-text index that hold every word of it
        (`text_index.documents_writing`); [] without the index (or when it cannot be read).
        One document alone writing a rare name takes all the hits; a name many documents
        write (a generic heading) gives many (docs/whole-corpus.md, rule 27)."""
        if not entity or not self.has_text_index():
            return []
        nodes = self.store.table("nodes")
        return documents_writing(nodes, entity, limit + self.stale_rows(nodes), self.current())
