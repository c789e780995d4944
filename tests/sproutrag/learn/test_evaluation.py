from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.learn.evaluation import evaluate_variants
from sproutrag.learn.features import DocFeatures, load_features, pair_heads, save_features
from sproutrag.learn.report import write_report
from sproutrag.learn.variants import (
    Variant,
    make_variants,
    relations,
    retrieve_flat,
    retrieve_tree,
    variant_trees,
)
from sproutrag.params import SearchParams


def _window(start, blocks):
    blocks = np.asarray(blocks, np.float32)
    return SimpleNamespace(start=start, stop=start + blocks.shape[1], blocks=blocks)


def test_pair_heads_average_symmetrised_blocks_over_windows():
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 3))  # window over chunks 0..2, two heads
    b = rng.random((2, 2, 2))  # window over chunks 1..2
    i, j, h = pair_heads([_window(0, a), _window(1, b)], 3)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 2)]
    sym = lambda x, p, q: (x[:, p, q] + x[:, q, p]) / 2  # noqa: E731
    np.testing.assert_allclose(h[0], sym(a, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(h[2], (sym(a, 1, 2) + sym(b, 0, 1)) / 2, rtol=1e-6)
    # relations are linear in the heads: any mix = heads @ w
    w = np.array([0.3, 0.7])
    f = DocFeatures("d", np.zeros((3, 2), np.int64), np.eye(3, dtype=np.float32), i, j, h)
    _, _, m = relations(f, Variant("x", mix=w.reshape(1, 2)))
    mixed_a, mixed_b = np.tensordot(w, a, 1), np.tensordot(w, b, 1)
    want12 = ((mixed_a[1, 2] + mixed_a[2, 1]) / 2 + (mixed_b[0, 1] + mixed_b[1, 0]) / 2) / 2
    assert m[2] == pytest.approx(want12, rel=1e-5)


def _toy() -> dict[str, DocFeatures]:
    # 4 unit vectors; attention joins (0,1) and (2,3); the query points at leaf 0.
    emb = np.eye(4, dtype=np.float32)
    spans = np.array([[0, 10], [10, 20], [20, 30], [30, 40]])
    i = np.array([0, 1, 2], np.int32)
    j = np.array([1, 2, 3], np.int32)
    heads = np.array([[0.9], [0.1], [0.8]], np.float32)
    return {"d": DocFeatures("d", spans, emb, i, j, heads)}


def test_tree_retrieval_expands_internal_nodes_and_respects_the_budget():
    feats = _toy()
    v = Variant("t", mix=np.ones((1, 1)), parent_embedding="size_weighted")
    trees = variant_trees(feats, v)
    q = np.array([1.0, 0.9, 0.0, 0.0], np.float32)  # closest to the node {0, 1}
    p = SearchParams(beam_width=5, threshold=0.0)
    units = retrieve_tree(trees, feats, q, ["d"], k=2, params=p)
    assert units == [("d", 0, 10), ("d", 10, 20)]  # node {0,1} expanded
    one = retrieve_tree(trees, feats, q, ["d"], k=1, params=p)
    assert one == [("d", 0, 10)]  # the node does not fit k = 1: its best leaf does
    high = SearchParams(beam_width=5, threshold=0.9995)  # no node passes: the threshold
    assert retrieve_tree(trees, feats, q, ["d"], k=5, params=high) == [  # orders, k is
        ("d", 0, 10), ("d", 10, 20), ("d", 20, 30), ("d", 30, 40)]  # filled by leaf score
    # a size penalty makes the node lose to its own best leaf, then the next leaf
    calibrated = SearchParams(beam_width=5, size_penalty=0.3)  # node 0.999 - 0.3 < leaf 0.743
    units = retrieve_tree(trees, feats, q, ["d"], k=2, params=calibrated)
    assert units == [("d", 0, 10), ("d", 10, 20)]
    stats: dict = {}
    retrieve_tree(trees, feats, q, ["d"], k=2, params=calibrated, stats=stats)
    assert stats == {"hits": 2, "internal_hits": 0}
    assert retrieve_flat(feats, q, ["d"], k=2) == [("d", 0, 10), ("d", 10, 20)]


def test_band_and_embedding_relations():
    f = _toy()["d"]
    i, j, m = relations(f, Variant("x", band=1))
    assert len(i) == 0
    _, _, m = relations(f, Variant("x", relation="embedding"))
    np.testing.assert_allclose(m, 0.5)  # orthogonal unit vectors: (1 + 0) / 2


def test_features_round_trip(tmp_path):
    feats = _toy()
    save_features(feats, tmp_path / "f.npz")
    back = load_features(tmp_path / "f.npz")
    for name in ("spans", "emb", "pair_i", "pair_j", "heads"):
        np.testing.assert_array_equal(getattr(back["d"], name), getattr(feats["d"], name))


def test_evaluate_variants_and_report(tmp_path):
    feats = _toy()
    queries = [{"qid": "a", "doc_ids": ["d"], "gold": [{"doc_id": "d", "start": 2, "end": 5}]}]
    qvecs = np.array([[1.0, 0.9, 0.0, 0.0]], np.float32)
    w = TrainedWeights(np.zeros((1, 1)))
    variants = make_variants(["flat", "tree", "b1"], w, "size_weighted")
    rows = evaluate_variants(variants, feats, queries, qvecs, [1, 2])
    flat, tree = rows[0], rows[1]
    assert flat["per_k"][0]["precision"] == 1.0 and flat["per_k"][1]["precision"] == 0.5
    assert tree["per_k"][1]["recall"] == 1.0 and tree["stats"]["internal_hit_share_at_kmax"] == 1
    paths = write_report(rows, tmp_path, {"command": "x"}, flat_name=flat["name"])
    assert paths["png"].stat().st_size > 1000
    assert "IE / flat" in paths["markdown"].read_text()
    assert json.loads(paths["json"].read_text())["rows"][0]["name"] == flat["name"]
    with pytest.raises(ValueError, match="unknown modes"):
        make_variants(["nope"], w, "size_weighted")
    from sproutrag.learn.variants import VARIANT_NAMES  # what `evaluate --modes` accepts

    assert len(make_variants(list(VARIANT_NAMES), w, "size_weighted")) == len(VARIANT_NAMES)
    with pytest.raises(ValueError, match=r"choose from \[(.*)\]") as got:
        make_variants(["nope"], w, "size_weighted")
    assert sorted(VARIANT_NAMES) == [m.strip("'") for m in
                                     got.value.args[0].split("[")[-1][:-1].split(", ")]


@pytest.mark.model
@pytest.mark.parametrize("embedding_mode", ["alone", "context"])
def test_head_features_give_the_encoders_relations(embedding_mode):
    """heads @ mix equals the relations `encode_documents` stores (the index path), and
    the embeddings are the index's, in either embedding mode."""
    from sproutrag.encoder.encoder import Encoder
    from sproutrag.ingest.chunking import chunk_text
    from sproutrag.learn.features import featurize_document

    text = " ".join(f"Clause {n}. The party shall keep item {n} secret." for n in range(16))
    spans = np.asarray(chunk_text(text), np.int64)
    alpha = np.random.default_rng(1).normal(size=(6, 12)).astype(np.float32)
    enc = Encoder(device="cpu", window_tokens=64, window_stride=32,
                  weights=TrainedWeights(alpha), embedding_mode=embedding_mode)
    f = featurize_document(enc, "d", text, spans)
    ref = enc.encode_document(text, [tuple(s) for s in spans.tolist()])
    i, j, m = relations(f, Variant("x", mix=enc.weights.mix()))
    np.testing.assert_array_equal(i, ref.rel_i)
    np.testing.assert_array_equal(j, ref.rel_j)
    np.testing.assert_allclose(m, ref.rel_m, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(f.emb, ref.embeddings, atol=1e-5)


@pytest.mark.model
def test_evaluate_db_scores_against_the_features_it_used(prefect_harness, tmp_path, capsys):
    """`evaluate --db` loads the feature file of this evaluation, not the newest file in
    the cache (here a decoy of another corpus, touched later)."""
    import os

    from sproutrag.flows.cli import main

    from tests.helpers import TEXTS

    docs, queries = tmp_path / "docs.jsonl", tmp_path / "queries.jsonl"
    docs.write_text("".join(json.dumps({"doc_id": k, "text": v}) + "\n"
                            for k, v in {**TEXTS, "blank.txt": " "}.items()), encoding="utf-8")
    # (a blank document cannot be indexed: reported, not fatal, as in memory, where it has
    # no units; it aborted `evaluate --db` before)
    golds = [("q1", "When is payment due?", "a.txt", "Payment is due in 45 days."),
             ("q2", "How often is security training?", "sub/c.txt",
              "Security training is mandatory every year.")]
    queries.write_text("".join(json.dumps({
        "qid": q, "query": text, "doc_ids": [d],
        "gold": [{"doc_id": d, "start": TEXTS[d].index(g), "end": TEXTS[d].index(g) + len(g)}],
    }) + "\n" for q, text, d, g in golds), encoding="utf-8")
    cache = tmp_path / "cache"
    decoy = cache / "features-0000000000000000.npz"
    save_features(_toy(), decoy)
    os.utime(decoy, (2_000_000_000, 2_000_000_000))  # the newest file in the cache
    out = tmp_path / "eval"
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "flat", "leaves", "tree", "--db", str(tmp_path / "db"), "--out", str(out),
                 "--cache", str(cache), "--corpus-wide", "--budgets", "60", "200",
                 "--k", "3", "1", "3"]) == 0  # a k given twice crashed the scoring
    report = json.loads((out / "results.json").read_text())
    rows = {r["name"]: r for r in report["rows"]}
    assert report["meta"]["ks"] == [3, 1]
    command = report["meta"]["command"]  # the run again, as it ran (it dropped both)
    assert f"--cache {cache}" in command and "--corpus-wide" in command
    assert report["meta"]["features"] != str(decoy)
    for mode, name in (("flat", "flat (leaf only)"), ("tree", "tree (trained)"),
                       ("leaves", "leaves (tree's fused score and cutoffs, no tree)")):
        stored = rows[f"{mode} [database {tmp_path / 'db'}]"]
        assert stored["per_query"]["qid"] == rows[name]["per_query"]["qid"] == ["q1", "q2"]
        assert stored["avg"] == pytest.approx(rows[name]["avg"], abs=1e-9), mode
        wide = rows[f"{mode} corpus-wide [database {tmp_path / 'db'}]"]
        assert wide["per_query"]["qid"] == ["q1", "q2"] and wide["avg"]["recall"] > 0
        loss = wide["corpus_wide"]  # where corpus-wide search loses against within
        assert 0 <= loss["non_gold_units"] <= 1
        assert loss["ie_ratio"] == pytest.approx(wide["avg"]["ie"] / stored["avg"]["ie"])
        # within's answer first, other documents' units after it: never fewer relevant
        # units than within's own answer, so its unit IE ratio is at least 1
        assert loss["filled_ie_ratio"] >= 1 - 1e-9 and 0 < loss["filled_char_ie_ratio"] <= 1
        assert "within's answers filled to k" in wide["notes"]
        if mode == "flat":  # flat ranks every leaf: no first stage to report, nothing fetched
            assert "gold_docs_chosen" not in loss and "(n_docs" not in wide["notes"]
            assert "no first stage" in wide["notes"]
            continue
        assert 0 < loss["gold_docs_chosen"] <= 1 and 0 <= loss["all_gold_chosen"] <= 1
        assert loss["gold_docs_chosen"] <= loss["gold_docs_searched"] <= 1
        assert "of the gold documents" in wide["notes"]
        assert "searched with the documents fetched by name or mention" in wide["notes"]
    text = (out / "results.md").read_text()
    assert "Where corpus-wide search loses against within" in text
    # the shipped context through the database under each budget: within the queries'
    # documents it is the in-memory shipped row's context; corpus-wide paired against it
    budget = {r["name"]: r for r in report["meta"]["budget_rows"]}
    stored = budget[f"shipped context [database {tmp_path / 'db'}]"]
    memory = next(r for n, r in budget.items() if n.endswith("(shipped)"))
    assert stored["per_query"] == memory["per_query"] and stored["mean_pr"] > 0
    wide = budget[f"shipped context corpus-wide [database {tmp_path / 'db'}]"]
    assert list(wide["budgets"]) == ["60", "200"]
    assert wide["corpus_wide"]["pr_ratio"] == pytest.approx(wide["mean_pr"] / stored["mean_pr"])
    assert "under the budgets" in wide["notes"] and wide["name"] in text
    assert "doc_weight 0.0" in text and "ancestor_weight 0.0" in text  # the search reported
    assert report["meta"]["weights"]["search"]["doc_diversity"] == 0.0


def test_corpus_wide_runs_search_without_doc_ids():
    """`retriever_runs(corpus_wide=True)` asks the Retriever for no doc_ids (its first
    stage chooses), the restricted runs for each query's own."""
    from sproutrag.learn.evaluation import retriever_runs

    class Recorder:
        def __init__(self):
            self.calls = []

        def search(self, query, *, k, doc_ids, mode):
            self.calls.append((query, k, doc_ids, mode))
            return []

    r = Recorder()
    qs = [{"query": "q", "doc_ids": ["a"]}]
    assert retriever_runs(r, qs, (1, 3), "tree") == {1: [[]], 3: [[]]}
    retriever_runs(r, qs, (1,), "leaves", corpus_wide=True)
    assert r.calls == [("q", 1, ["a"], "tree"), ("q", 3, ["a"], "tree"),
                       ("q", 1, None, "leaves")]


def _labelled(tmp_path, query_lines, doc_id="a"):
    docs, queries = tmp_path / "docs.jsonl", tmp_path / "queries.jsonl"
    docs.write_text(json.dumps({"doc_id": doc_id, "text": "Payment is due in 45 days."})
                    + "\n", encoding="utf-8")
    queries.write_text("".join(q if isinstance(q, str) else json.dumps(q) + "\n"
                               for q in query_lines), encoding="utf-8")
    return docs, queries


_GOLD = {"qid": "q1", "query": "When is payment due?", "doc_ids": ["a"],
         "gold": [{"doc_id": "a", "start": 0, "end": 7}]}


def _gold(**span):
    return {**_GOLD, "gold": [{"doc_id": "a", "start": 0, "end": 7, **span}]}


@pytest.mark.parametrize("lines, doc_id, why", [
    ([_GOLD, '{"qid": "q2", "query": \n'], "a", "queries.jsonl line 2 is not a JSON object"),
    ([_GOLD], "b", "queries.jsonl: no query can be scored: the documents of its 1 queries"),
    # what crashed (a traceback) or scored 0 without a word
    ([_gold(start="a")], "a", r"query 1 \(qid 'q1'\): a gold span's start and end must be "
     "integers"),
    ([_GOLD], 3.5, r"docs.jsonl: document 1: doc_id must be a string or an integer"),
])
def test_bad_queries_are_refused_before_any_document_is_encoded(tmp_path, lines, doc_id, why):
    from sproutrag.errors import DatasetError
    from sproutrag.learn.evaluation import evaluate_corpus

    docs, queries = _labelled(tmp_path, lines, doc_id)
    encoder = SimpleNamespace()  # any use (encoding a document) raises AttributeError
    with pytest.raises(DatasetError, match=why):
        evaluate_corpus(docs, queries, encoder=encoder, chunking={}, variants=[],
                        cache_dir=tmp_path / "cache", log=lambda *a: None)


def test_a_query_whose_only_document_is_blank_is_refused_before_encoding(tmp_path):
    """Its document has no units: the set was refused only after every document had been
    encoded (minutes on a large --docs)."""
    from sproutrag.errors import DatasetError
    from sproutrag.learn.evaluation import evaluate_corpus

    docs, queries = _labelled(tmp_path, [{**_GOLD, "gold": []},
                                         {**_GOLD, "qid": "q2", "doc_ids": ["blank"]}])
    with open(docs, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"doc_id": "blank", "text": "  "}) + "\n")
    encoder = SimpleNamespace()  # any use (encoding a document) raises AttributeError
    with pytest.raises(DatasetError, match="no query can be scored: the documents of its 1 "
                       "queries with gold evidence have no text"):
        evaluate_corpus(docs, queries, encoder=encoder, chunking={}, variants=[],
                        cache_dir=tmp_path / "cache", log=lambda *a: None)


def test_an_empty_doc_ids_list_is_no_scope_to_warn_about(tmp_path):
    """`"doc_ids": []` is asked of every document, as no doc_ids: its gold is not "outside
    its doc_ids" (the warning said so, and the query was scored anyway)."""
    from sproutrag.learn.datasets import read_labelled

    docs, queries = _labelled(tmp_path, [{**_GOLD, "doc_ids": []}])
    logged = []
    read_labelled(docs, queries, log=logged.append)
    assert logged == []


@pytest.mark.parametrize("lines, said", [
    ([_gold(start=500, end=100)], "gold span 500-100 is not inside document 'a' (0-26, "
     "start before end): it cannot be found"),
    ([{**_gold(), "doc_ids": ["b"]}], "gold document 'a' is not among its doc_ids"),
    ([_GOLD, _GOLD], "query 2 (qid 'q1'): the qid again (both are scored)"),
])
def test_labels_that_would_score_0_are_said_and_still_scored(tmp_path, lines, said):
    """Evaluation scripts call `evaluate` on their own sets (DESIGN.md's contract): a
    label that cannot be found is said before encoding, and the set is scored as given."""
    from sproutrag.learn.datasets import read_labelled

    docs, queries = _labelled(tmp_path, lines)
    logged = []
    got_docs, got_queries = read_labelled(docs, queries, log=logged.append)
    assert len(got_queries) == len(lines) and len(got_docs) == 1
    assert len(logged) == 1 and logged[0].startswith("warning: ") and said in logged[0]


@pytest.mark.model
def test_evaluate_names_the_queries_it_does_not_score(tmp_path, capsys):
    """A query without gold, or naming a document --docs lacks, was dropped without a
    word and the report never said how many were scored."""
    from sproutrag.flows.cli import main

    docs, queries = _labelled(tmp_path, [_GOLD, {**_GOLD, "qid": "q2", "gold": []},
                                         {**_GOLD, "qid": "q3", "doc_ids": ["a", "z"]}])
    out = tmp_path / "eval"
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "flat", "--out", str(out)]) == 0
    why = ("qid 'q2' has no gold evidence; qid 'q3' names document 'z', which is not among "
           "the documents given")
    assert f"warning: 2 of 3 queries are not scored: {why}" in capsys.readouterr().out
    report = json.loads((out / "results.json").read_text())["meta"]
    assert (report["n_queries"], report["n_queries_given"]) == (1, 3)
    assert (f"Scored 1 queries of 3 given over 1 documents: not scored, {why}."
            in (out / "results.md").read_text())


def test_a_document_that_is_not_text_is_refused_and_one_twice_is_said(tmp_path):
    from sproutrag.errors import DatasetError
    from sproutrag.learn.datasets import read_labelled

    docs, queries = _labelled(tmp_path, [_GOLD])
    first = json.dumps({"doc_id": "a", "text": "Payment is due."}) + "\n"
    docs.write_text(first + json.dumps({"doc_id": "b", "text": 5}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="document 2 \\('b'\\): text must be a string, "
                       "got int"):
        read_labelled(docs, queries)
    docs.write_text(first + first, encoding="utf-8")
    logged = []
    read_labelled(docs, queries, log=logged.append)
    assert logged == [f"warning: {docs}: document 2: doc_id 'a' again (the last one is used)"]


def test_evaluate_refuses_an_unknown_mode_before_the_model_loads(tmp_path, capsys):
    from sproutrag.flows.cli import main

    docs, queries = _labelled(tmp_path, [_GOLD])
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "tree", "bogus", "--out", str(tmp_path / "eval")]) == 2
    err = capsys.readouterr().err
    assert "--modes: unknown bogus; choose from flat" in err and "lancedb_hybrid" in err


def test_evaluate_exits_2_naming_the_file_and_line_of_a_malformed_line(tmp_path, capsys):
    from sproutrag.flows.cli import main

    docs, queries = _labelled(tmp_path, [_GOLD])
    with open(docs, "a", encoding="utf-8") as fh:
        fh.write('{"doc_id": "b", "text": oops}\n')
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "flat", "--out", str(tmp_path / "eval")]) == 2
    err = capsys.readouterr().err
    assert f"{docs} line 2 is not a JSON object" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--out", "--db", "--cache"])
def test_evaluate_refuses_an_output_folder_that_is_a_file_at_once(tmp_path, capsys, flag):
    from sproutrag.flows.cli import main

    docs, queries = _labelled(tmp_path, [_GOLD])
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    args = {"--out": str(tmp_path / "eval"), flag: str(afile / "sub")}
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                 "flat", *[x for kv in args.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {afile / 'sub'}: {afile} is a file, not a folder" in err
    assert afile.read_text(encoding="utf-8") == "x"


def test_evaluate_db_holding_another_corpus_is_refused_with_advice_it_can_follow(
        tmp_path, monkeypatch):
    """`evaluate --db` indexes --docs into it: a database of another corpus would lose
    its documents, and the mass-delete refusal named `--allow-mass-delete`, a flag
    evaluate does not have."""
    from sproutrag.flows import commands
    from sproutrag.schemas.settings import Settings

    from sproutrag.errors import MassDeleteError

    def refuse(*args, **kwargs):
        raise MassDeleteError("... run again with --allow-mass-delete")

    monkeypatch.setattr(commands, "run_index", refuse)
    args = SimpleNamespace(weights=None, docs="d.jsonl", db="other-db", queries="q.jsonl")
    with pytest.raises(MassDeleteError, match="--db other-db holds documents that d.jsonl "
                       "does not.*give evaluate a folder of its own") as got:
        commands._index_for_evaluation(args, Settings())
    assert "--allow-mass-delete" not in str(got.value)


def test_evaluate_db_deletes_no_document_whatever_its_share(monkeypatch):
    """One document of nine missing from --docs was deleted without a word (only more
    than `pipeline.max_delete_share` was refused): evaluate's index run may delete none."""
    from sproutrag.flows import commands
    from sproutrag.schemas.settings import Settings

    from sproutrag.errors import MassDeleteError
    from sproutrag.ingest.plan import Plan, check_deletions

    shares = []

    def index(docs, db, settings, **kwargs):
        shares.append(settings.pipeline.max_delete_share)
        plan = Plan(fingerprint="fp", deleted=["extra"], n_listed=8)
        check_deletions(plan, 9, corpus=docs, allow=False,
                        max_share=settings.pipeline.max_delete_share)

    monkeypatch.setattr(commands, "run_index", index)
    args = SimpleNamespace(weights=None, docs="d.jsonl", db="eval-db", queries="q.jsonl")
    with pytest.raises(MassDeleteError, match="--db eval-db holds documents that d.jsonl"):
        commands._index_for_evaluation(args, Settings())
    assert shares == [0.0]


@pytest.mark.model
def test_a_damaged_feature_cache_is_encoded_again(tmp_path):
    """A cache file damaged outside (truncated) stopped evaluate with a traceback
    (BadZipFile): it is said, encoded again and rewritten."""
    from sproutrag.schemas.settings import Settings

    from sproutrag.encoder.encoder import Encoder
    from sproutrag.learn.features import feature_path, featurize_corpus, load_features

    encoder, chunking = Encoder(), Settings().chunking.model_dump()
    docs = [{"doc_id": "a", "text": "The supplier delivers within 30 days. Payment is due "
             "in 45 days. Late fees apply."}]
    first = featurize_corpus(docs, encoder, chunking=chunking, cache_dir=tmp_path,
                             log=lambda line: None)
    path = feature_path(tmp_path, docs, encoder, chunking)
    path.write_bytes(path.read_bytes()[:300])
    said: list[str] = []
    again = featurize_corpus(docs, encoder, chunking=chunking, cache_dir=tmp_path,
                             log=said.append)
    assert said[0].startswith(f"feature cache {path} cannot be read (")
    np.testing.assert_array_equal(again["a"].emb, first["a"].emb)
    np.testing.assert_array_equal(load_features(path)["a"].emb, first["a"].emb)


def test_corpus_wide_loss_counts_gold_documents_by_the_gold_spans():
    """Gold documents are those of a query's gold spans (its doc_ids may hold more: the
    documents it is asked of); units from other documents are those outside its
    doc_ids. Flat mode has no first stage: it is not asked for one."""
    import contextlib

    from sproutrag.learn.evaluation import corpus_wide_loss

    class FirstStage:
        asked = 0

        def _embed(self, texts):
            return [[0.0]] * len(texts)

        def _one_view(self):
            return contextlib.nullcontext()

        def choose_documents(self, qvec, doc_ids, *, k, query):
            self.asked += 1
            return ["g", "x"]

        def searched_documents(self, query, qvec, first):
            return [*first, "h"]

    q = {"query": "q", "doc_ids": ["g", "h", "s"],
         "gold": [{"doc_id": "g", "start": 0, "end": 1}, {"doc_id": "h", "start": 0, "end": 1}]}
    runs = {3: [[("g", 0, 1), ("x", 0, 1), ("s", 0, 1)]]}
    rows = {"avg": {"ie": 0.5, "char_ie": 0.5}}
    r = FirstStage()
    loss = corpus_wide_loss(r, [q], runs, rows, rows)
    assert loss["gold_docs_chosen"] == 0.5 and loss["gold_docs_searched"] == 1.0  # g, h
    assert loss["all_gold_chosen"] == 0.0 and loss["non_gold_units"] == pytest.approx(1 / 3)
    flat = corpus_wide_loss(r, [q], runs, rows, rows, "flat")
    assert r.asked == 1 and "gold_docs_chosen" not in flat
    assert flat["non_gold_units"] == pytest.approx(1 / 3) and flat["ie_ratio"] == 1.0


def test_filled_runs_put_within_first_and_fill_k_from_other_documents_only():
    """A k-filled answer as good as within: within's units, then the corpus-wide answer's
    units of documents outside the query's doc_ids (its own documents' units are within's
    to give), cut at k. Short within answers are where char-IE is lost however well a
    k-filling search ranks."""
    from sproutrag.learn.evaluation import filled_runs, result_row

    q = {"qid": "q", "query": "q", "doc_ids": ["g"],
         "gold": [{"doc_id": "g", "start": 0, "end": 10}]}
    within = {1: [[("g", 0, 10)]], 3: [[("g", 0, 10)]]}
    wide = {1: [[("x", 0, 10)]], 3: [[("x", 0, 10), ("g", 20, 30), ("y", 0, 30)]]}
    filled = filled_runs(within, wide, [q])
    assert filled == {1: [[("g", 0, 10)]], 3: [[("g", 0, 10), ("x", 0, 10), ("y", 0, 30)]]}
    units = {"g": np.array([[0, 10], [20, 30]]), "x": np.array([[0, 10]]),
             "y": np.array([[0, 30]])}
    own, full = (result_row(n, r, {}, [q], units=units) for n, r in (("w", within),
                                                                       ("f", filled)))
    assert full["avg"]["ie"] == pytest.approx(own["avg"]["ie"])  # precision counts over k
    assert full["per_k"][1]["char_ie"] == pytest.approx(10 / 50)  # 10 gold of 50 returned
    assert own["per_k"][1]["char_ie"] == pytest.approx(1.0)


def _report(n_fillers: int, dim: int = 8) -> tuple[DocFeatures, str]:
    """A report of 1 + N_FILLERS + 1 lines: its opening writes the name (axis 0), its last
    line is the answer (axis 1), the fillers are orthogonal to both; a chain of relations."""
    lines = (["Acme Robotics annual report 2024."]
             + [f"Section {i} covers other matters." for i in range(n_fillers)]
             + ["Gross margin was 41 percent."])
    text, spans = "", []
    for line in lines:
        spans.append((len(text), len(text) + len(line)))
        text += line + "\n"
    rng = np.random.default_rng(5)
    filler = rng.normal(size=(n_fillers, dim))
    filler[:, :2] = 0
    emb = np.vstack([np.eye(dim)[0], filler / np.linalg.norm(filler, axis=1, keepdims=True),
                     np.eye(dim)[1]]).astype(np.float32)
    n = len(lines)
    i, j = np.arange(n - 1, dtype=np.int32), np.arange(1, n, dtype=np.int32)
    return DocFeatures("report", np.asarray(spans, np.int64), emb, i, j,
                       np.full((n - 1, 1), 0.5, np.float32)), text


def test_the_in_memory_rows_score_a_named_report_with_its_name_free_question():
    """`sproutrag evaluate`'s in-memory tree and leaves rows search as `Retriever` does
    with doc_ids (rule 62, stop 81): in a report of 32 leaves that opens with the
    question's name, the question's own vector ranks the opening first; the name-free
    blend ranks the answer first. Below the floor (or at 0) the question's vector stays,
    and the name-free question is encoded only when a document is gated in."""
    from sproutrag.learn.features import attach_terms
    from sproutrag.learn.variants import NameFree

    f, text = _report(30)
    feats, docs = {"report": f}, [{"doc_id": "report", "text": text}]
    attach_terms(feats, docs)
    answer = [int(x) for x in f.spans[-1]]
    query = "What was Acme Robotics' gross margin in 2024?"
    queries = [{"qid": "q", "query": query, "doc_ids": ["report"],
                "gold": [{"doc_id": "report", "start": answer[0], "end": answer[1]}]}]
    qvecs = np.asarray([0.8 * np.eye(8)[0] + 0.6 * np.eye(8)[1]], np.float32)
    asked: list[str] = []

    def embed(texts):
        asked.extend(texts)
        return np.asarray([np.eye(8)[1]] * len(texts), np.float32)

    w = TrainedWeights(np.zeros((1, 1)), SearchParams(threshold=-1.0))
    variants = make_variants(["tree", "leaves"], w, "size_weighted")

    def ie_at_1(floor):
        name_free = None if floor is None else NameFree.of(feats, docs, embed, floor)
        rows = evaluate_variants(variants, feats, queries, qvecs, [1], name_free)
        return [r["per_k"][0]["ie"] for r in rows]

    assert ie_at_1(16) == [1.0, 1.0]  # the answer first, in tree and leaves modes
    assert set(asked) == {"What was gross margin in ?"}  # less the opening's "2024" too
    asked.clear()
    for floor in (None, 0, 40):  # no name-free vectors, off, or the report below the floor
        assert ie_at_1(floor) == [0.0, 0.0]  # the opening first
    assert asked == []


def test_the_in_memory_contexts_rank_a_named_report_by_its_name_free_question():
    """`evaluate --budgets`: the shipped selection's context under a budget of one line
    is the answer with rule 62's vectors, the opening without them."""
    from sproutrag.learn.budgets import Selection, budget_rows
    from sproutrag.learn.features import attach_terms
    from sproutrag.learn.variants import NameFree

    f, text = _report(30)
    feats, docs = {"report": f}, [{"doc_id": "report", "text": text}]
    attach_terms(feats, docs)
    s, e = (int(x) for x in f.spans[-1])
    queries = [{"qid": "q", "query": "What was Acme Robotics' gross margin in 2024?",
                "doc_ids": ["report"], "gold": [{"doc_id": "report", "start": s, "end": e}]}]
    qvecs = np.asarray([0.8 * np.eye(8)[0] + 0.6 * np.eye(8)[1]], np.float32)
    v = Variant("t", mix=np.ones((1, 1)), parent_embedding="size_weighted",
                search=SearchParams(threshold=-1.0))
    name_free = NameFree.of(feats, docs, lambda t: np.asarray([np.eye(8)[1]] * len(t)))
    leaves = [Selection("leaves", "leaves")]
    for given, pr in ((name_free, 1.0), (None, 0.0)):
        row = budget_rows(feats, {"report": text}, queries, qvecs, variant_trees(feats, v),
                          v.search, [30], leaves, name_free=given)[0]
        assert row["budgets"]["30"]["pr"] == pytest.approx(pr)
