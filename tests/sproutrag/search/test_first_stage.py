"""The corpus-wide first stage: LanceDB's full-text index over the leaves, kept by the
index run, and its documents fused with the nearest nodes' (issue 21)."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.search.first_stage import usable_cores
from sproutrag.search.rankings import fuse_rankings, keep_leaders
from sproutrag.search.retriever import QueryError, Retriever
from sproutrag.storage.store import TEXT_ANALYZER, text_analyzer_matches
from tests.helpers import toy_document, toy_encoder, toy_store, write_files


def test_reciprocal_rank_fusion():
    assert fuse_rankings([["a", "b", "c"], ["c", "d"]]) == ["c", "a", "b", "d"]
    assert fuse_rankings([["a", "b"], []]) == ["a", "b"]
    assert fuse_rankings([["a", "b"], ["b", "a"]]) == ["a", "b"]  # a tie keeps first seen
    assert fuse_rankings([]) == []


def test_each_ranking_keeps_its_leaders_among_the_first_n():
    """Rule 54: a ranking's first documents that the fused order leaves out of its first N
    take the places of the last ones that lead no ranking; nothing else moves."""
    vector, text = ["a", "b", "c", "d", "e"], ["x", "y", "a", "z"]
    fused = fuse_rankings([vector, text])
    assert fused == ["a", "x", "b", "y", "c", "d", "z", "e"]
    assert keep_leaders(fused, [vector, text], 3, 0) == fused  # off
    assert keep_leaders(fused, [vector, text], 3, 2) == fused  # a, b, x, y: already first
    assert keep_leaders(fused, [vector, text], 2, 2) == fused  # every place a leader's
    # two rankings that agree, and a third whose leader only it ranks (the full-text
    # index's document the vectors miss)
    rankings = [["a", "b", "c", "d"], ["b", "a", "c", "x"], ["q"]]
    fused = fuse_rankings(rankings)
    assert fused[:4] == ["a", "b", "c", "q"]
    assert keep_leaders(fused, rankings, 3, 1) == ["a", "b", "q", "c", "d", "x"]
    assert keep_leaders([], [[], []], 3, 2) == []


def test_usable_cores_are_the_affinity_not_the_machine(monkeypatch):
    # a container or taskset gives the process fewer cores than the machine has: the
    # threads are sized by those
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
        assert usable_cores() == 3
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set())
        assert usable_cores() == 1
        monkeypatch.delattr(os, "sched_getaffinity")
    assert usable_cores() == 64  # no affinity reported: the machine's count
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cores() == 1


def _toy_retriever(db, **kw) -> Retriever:
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    return Retriever(str(db), encoder=toy_encoder(weights), **kw)


def test_the_hybrid_first_stage_finds_a_document_only_the_words_match(tmp_path):
    store = toy_store(tmp_path / "db")
    docs = [toy_document("near", "alpha beta gamma", seed=1),
            toy_document("other", "delta epsilon zeta", seed=2),
            toy_document("words", "eta quokka theta", seed=3)]
    store.write(docs, "fp")
    assert store.ensure_text_index()
    q = docs[0].tree.vectors[0]  # the query vector is one of "near"'s leaves
    vector = _toy_retriever(store.uri, first_stage="vector", n_docs=1)
    hybrid = _toy_retriever(store.uri, n_docs=1)
    assert vector.choose_documents(q, None, query="quokka") == ["near"]
    assert hybrid.choose_documents(q, None, query="quokka") == ["words"]
    assert hybrid.choose_documents(q, None) == ["near"]  # no query text: vectors only
    assert hybrid.choose_documents(q, None, query="a word no leaf has") == ["near"]
    assert hybrid.search_vector("quokka", q, k=1, mode="leaves")[0].doc_id == "words"
    assert vector.search_vector("quokka", q, k=1, mode="leaves")[0].doc_id == "near"
    with pytest.raises(QueryError, match="first_stage"):
        _toy_retriever(store.uri, first_stage="bm25")
    # rule 54: the nearest nodes' leader is kept beside the fused choice
    leaders = _toy_retriever(store.uri, n_docs=1, ranking_leaders=1)
    assert leaders.ranking_leaders == 1 and hybrid.ranking_leaders == 0
    for query in ("quokka", "a word no leaf has"):  # one place, held by a leader
        assert leaders.choose_documents(q, None, query=query) == hybrid.choose_documents(
            q, None, query=query)
    with pytest.raises(QueryError, match="ranking_leaders"):
        _toy_retriever(store.uri, ranking_leaders=-1)
    # n_docs as `search.n_docs` takes it: 0 or less searched one document, a huge
    # count overflowed at search time, a string or a fraction failed there
    for bad in (0, -1, 10**12, "8", 2.5, True):
        with pytest.raises(QueryError, match=r"n_docs .*got"):
            _toy_retriever(store.uri, n_docs=bad)


def test_the_full_text_query_runs_while_the_vectors_rank(tmp_path, monkeypatch):
    """`choose` starts the full-text query in a thread of its own and ranks by vector
    meanwhile (in its own thread when SPARE_CORES searches already choose): the answer is
    the sequential one, and what the query raises reaches the caller (a damaged index:
    the vectors alone, warned; anything else: raised)."""
    import threading

    from sproutrag.search import first_stage as module

    store = toy_store(tmp_path / "db")
    docs = [toy_document("near", "alpha beta gamma", seed=1),
            toy_document("words", "eta quokka theta", seed=3)]
    store.write(docs, "fp")
    assert store.ensure_text_index()
    r = _toy_retriever(store.uri, n_docs=1)
    q = docs[0].tree.vectors[0]
    threads, overlapped = [], threading.Event()
    text_query, by_vector = module.text_query, module.FirstStage.ranked_by_vector

    def slow_text_query(*args):
        threads.append(threading.current_thread().name)
        assert overlapped.wait(10)  # the vectors were ranked while this query ran
        return text_query(*args)

    def vector_ranking(self, *args):
        out = by_vector(self, *args)
        overlapped.set()
        return out

    monkeypatch.setattr(module, "text_query", slow_text_query)
    monkeypatch.setattr(module.FirstStage, "ranked_by_vector", vector_ranking)
    assert r.choose_documents(q, None, query="quokka") == ["words"]
    assert threads == ["sproutrag-text-query"]
    # with no core to spare (as many searches choosing as SPARE_CORES), in this thread
    overlapped.set()
    monkeypatch.setattr(module, "SPARE_CORES", 0)
    assert r.choose_documents(q, None, query="quokka") == ["words"]
    assert threads[1:] == [threading.current_thread().name] and r.first._choosing == 0
    monkeypatch.setattr(module, "SPARE_CORES", 1)
    overlapped.clear()

    def damaged(*args):
        raise OSError("lance error: _indices/fts-0001 not found")

    monkeypatch.setattr(module, "text_query", damaged)
    assert r.choose_documents(q, None, query="quokka") == ["near"]  # the vectors alone

    def broken(*args):
        raise RuntimeError("something else")

    monkeypatch.setattr(module, "text_query", broken)
    with pytest.raises(RuntimeError, match="something else"):
        r.choose_documents(q, None, query="quokka")


def test_without_a_text_index_the_first_stage_is_the_vectors(tmp_path):
    store = toy_store(tmp_path / "db")
    docs = [toy_document("near", "alpha beta", seed=1), toy_document("words", "quokka", seed=3)]
    store.write(docs, "fp")
    r = _toy_retriever(store.uri, n_docs=1)
    assert not r.has_text_index()
    assert r.choose_documents(docs[0].tree.vectors[0], None, query="quokka") == ["near"]


def test_an_index_with_another_analyzer_is_built_again(tmp_path):
    from lancedb.index import FTS

    store = toy_store(tmp_path / "db")
    store.write([toy_document("d", "running dogs", seed=1)], "fp")
    store.table("nodes").create_index("text", config=FTS(stem=False))
    assert not text_analyzer_matches(store.text_index().index_details)
    assert store.ensure_text_index()
    details = store.text_index().index_details
    assert text_analyzer_matches(details) and details["stem"] is True
    assert {k: details[k] for k in TEXT_ANALYZER} == TEXT_ANALYZER


def _fts_docs(db, word: str) -> set[str]:
    from sproutrag.storage.store import Store

    nodes = Store.open_existing(str(db)).table("nodes")
    rows = (nodes.search(word, query_type="fts").select(["doc_id", "_score"]).limit(100)
            .to_list())
    return {r["doc_id"] for r in rows}


@pytest.mark.model
def test_the_index_run_keeps_the_text_index(prefect_harness, tmp_path):
    """An index run builds the full-text index with the recorded analyzer; after an
    incremental run a changed document's old words stop matching, a deleted document's
    words are gone and new words match."""
    from sproutrag.storage.index_info import read_index_infos
    from sproutrag.storage.store import Store
    from tests.helpers import run_index

    corpus = write_files(tmp_path / "corpus", {
        "a.txt": "The quokka clause. Payment is due in 45 days.",
        "b.txt": "The wombat clause. Notices go by registered mail.",
        "c.txt": "Security training is mandatory every year.",
    })
    db = tmp_path / "db"
    assert run_index(corpus, db)["n_new"] == 3
    store = Store.open_existing(str(db))
    index = store.text_index()
    assert index is not None and text_analyzer_matches(index.index_details)
    [info] = read_index_infos(store).values()  # the analyzer, recorded for readers
    assert text_analyzer_matches(index.index_details, info.text_index()["analyzer"])
    assert _fts_docs(db, "quokkas") == {"a.txt"}  # stemmed: quokkas -> quokka
    (corpus / "a.txt").write_text("The platypus clause. Payment is due in 45 days.")
    (corpus / "b.txt").unlink()
    row = run_index(corpus, db)
    assert (row["n_changed"], row["n_deleted"]) == (1, 1)
    assert _fts_docs(db, "quokka") == set()
    assert _fts_docs(db, "wombat") == set()
    assert _fts_docs(db, "platypus") == {"a.txt"}


def _readme_block(heading: str) -> str:
    """The first python code block after HEADING in the README."""
    from tests.helpers import ROOT

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(heading):]
    start = after.index("```python\n") + len("```python\n")
    return after[start:after.index("```", start)]


@pytest.mark.model
def test_the_readme_downstream_recipe_runs_on_the_tables_alone(sample_index, capsys):
    """The README's LanceDB-only hybrid search, run as written on the indexed sample: it
    prints current leaves whose offsets give their text, the security-incident clause among
    them."""
    from sproutrag.storage.store import Store

    db, _ = sample_index
    code = _readme_block("### The same search from the tables alone")
    assert 'lancedb.connect(".sproutrag/db")' in code
    exec(compile(code.replace('".sproutrag/db"', repr(db)), "README", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert 1 <= len(lines) <= 5
    store = Store.open_existing(db)
    for line in lines:
        doc_id, start, end, text = line.split(" ", 3)
        tree_id = store.current_trees()[doc_id][0]
        assert store.document_text(doc_id, tree_id)[int(start):int(end)][:80] == text
    assert any("9.7 Security Incidents. Provider shall notify" in line for line in lines)
    assert not any(line.split(" ", 1)[0].endswith(".md") for line in lines)  # the filter


def test_prefetched_rankings_are_the_rankings_one_question_gets(tmp_path):
    """`search_many` ranks a batch's nodes with one matrix product (`prefetch`): each
    question's documents are those `ranked_by_vector` finds for it alone, at every limit
    up to the prefetched one; forgotten after the batch."""
    store = toy_store(tmp_path / "db")
    store.write([toy_document(f"d{n}", f"words of document {n}", seed=n) for n in range(9)],
                "fp")
    r = _toy_retriever(store.uri)
    qvecs = np.random.default_rng(7).normal(size=(5, store.dim)).astype(np.float32)
    alone = {lim: [r.first.ranked_by_vector(q, lim) for q in qvecs] for lim in (3, 10, 50)}
    r.first.prefetch(qvecs, 50)
    assert len(r.first._ranked.found) == 5
    for lim, want in alone.items():
        assert [r.first.ranked_by_vector(q, lim) for q in qvecs] == want
    r.first.prefetch(qvecs[:0], 0)
    assert r.first._ranked.found == {}


def test_the_batch_product_on_torch_ranks_as_numpy_does(monkeypatch):
    """`top_rows` runs on torch once torch is imported (one thread pool), on numpy
    otherwise: the same scores and the same best rows."""
    import sys

    import torch  # noqa: F401 - imported: the torch path

    from sproutrag.search.node_memory import top_rows

    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(500, 16)).astype(np.float32)
    q = rng.normal(size=(4, 16)).astype(np.float32)
    on_torch = top_rows(q, vecs, 20)
    monkeypatch.setitem(sys.modules, "torch", None)  # as in a process without torch
    on_numpy = top_rows(q, vecs, 20)
    assert np.allclose(on_torch[0], on_numpy[0], atol=1e-5)
    assert np.allclose(on_numpy[0], -(q @ vecs.T), atol=1e-5)
    for a, b, s in zip(on_torch[1], on_numpy[1], on_numpy[0]):
        assert set(a.tolist()) == set(b.tolist()) == set(np.argsort(s)[:20].tolist())


def test_prefetched_rankings_past_memory_rows_come_from_one_lancedb_search(tmp_path):
    """Past memory_rows the first stage ranks nodes with LanceDB: `prefetch` asks it
    once for the whole batch, and each question gets the documents its own search finds."""
    store = toy_store(tmp_path / "db")
    store.write([toy_document(f"d{n}", f"words of document {n}", seed=n) for n in range(9)],
                "fp")
    r = _toy_retriever(store.uri, memory_rows=0)
    assert r.first.node_matrix()[1] is None  # LanceDB ranks the nodes
    qvecs = np.random.default_rng(7).normal(size=(5, store.dim)).astype(np.float32)
    alone = {lim: [r.first.ranked_by_vector(q, lim) for q in qvecs] for lim in (3, 10)}
    r.first.prefetch(qvecs, 10)
    assert len(r.first._ranked.found) == 5
    assert all(len(found[2]) == 10 for found in r.first._ranked.found.values())
    for lim, want in alone.items():
        assert [r.first.ranked_by_vector(q, lim) for q in qvecs] == want
    r.first.prefetch(qvecs[:0], 0)
    assert r.first._ranked.found == {}


def test_fewer_documents_than_n_docs_rank_the_nodes_once(tmp_path, monkeypatch):
    """A database of fewer documents than `n_docs` (one long document, a few reports)
    holds them all after the first ranking: it is not widened until every node is ranked
    (one long document: 34-45 -> 16 ms a query, bench/query.py's 2,000 leaves). A
    filter's documents, all found, stop the widening the same way."""
    from sproutrag.search.first_stage import FirstStage

    words = " ".join(f"w{i}" for i in range(60))  # 119 nodes each: past one ranking's 80
    store = toy_store(tmp_path / "db")
    docs = [toy_document(d, words, seed=s) for s, d in enumerate(("a", "b", "c"))]
    store.write(docs[:2], "fp")
    assert store.ensure_text_index()
    calls = []
    by_vector = FirstStage.ranked_by_vector

    def counted(self, qvec, limit):
        calls.append(limit)
        return by_vector(self, qvec, limit)

    monkeypatch.setattr(FirstStage, "ranked_by_vector", counted)
    r = _toy_retriever(store.uri)
    q = docs[0].tree.vectors[0]
    assert sorted(r.choose_documents(q, None, k=5, query="w3")) == ["a", "b"]
    assert calls == [r.first.default_limit]
    store.write(docs[2:], "fp")
    r = _toy_retriever(store.uri)
    calls.clear()
    assert r.choose_documents(q, None, k=5, query="w3", allowed={"a"}) == ["a"]
    assert calls == [r.first.default_limit]
    calls.clear()  # without a filter, three documents are still fewer than n_docs
    assert sorted(r.choose_documents(q, None, k=5, query="w3")) == ["a", "b", "c"]
    assert calls == [r.first.default_limit]


def test_full_text_rows_tied_at_the_cut_are_the_same_in_every_process():
    """LanceDB cuts a tie at its limit wherever its scan met the rows (two processes got
    two sets of a question's 80 best leaves on an incrementally updated database):
    `best_rows` reads on until the tie at the cut is whole and ranks it by row id."""
    import pyarrow as pa

    from sproutrag.search.text_index import best_rows

    scores = np.array([5.0] * 10 + [3.0] * 150 + [1.0] * 40)
    want = np.lexsort((np.arange(200), -scores))[:80]
    for seed in range(20):
        rng, asked = np.random.default_rng(seed), []

        def search(n, rng=rng, asked=asked):  # best first, ties in any order, cut at n
            asked.append(n)
            order = np.lexsort((rng.permutation(200), -scores))[:n]
            return pa.table({"_rowid": order.astype(np.uint64), "_score": scores[order]})

        found = best_rows(search, 80)
        assert found["_rowid"].to_numpy().tolist() == want.tolist()
        assert asked == [96, 192]  # the 96th row still tied the 80th: read on
    few = best_rows(lambda n: pa.table({"_rowid": pa.array([7, 3], pa.uint64()),
                                        "_score": [2.0, 2.0]}), 80)
    assert few["_rowid"].to_pylist() == [3, 7]
