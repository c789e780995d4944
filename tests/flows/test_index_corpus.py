"""End to end: the index-corpus flow on the sample corpus, real spaCy, model and LanceDB."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sproutrag.ingest.corpus import discover
from sproutrag.storage.store import Store
from sproutrag.trees.tree import validate_tree
from tests.helpers import SAMPLE

pytestmark = pytest.mark.model


@pytest.fixture
def indexed(sample_index):
    return sample_index


def test_tables_match_the_design(indexed):
    db, row = indexed
    docs, failures = _pair(discover(str(SAMPLE)))
    assert failures == [] and row["n_failed"] == 0
    assert row["n_new"] == len(docs) >= 5
    store = Store.open_existing(db)
    documents = store.table("documents").to_arrow().to_pylist()
    assert {d["doc_id"] for d in documents} == {d.doc_id for d in docs}
    by_id = {d.doc_id: d for d in docs}
    assert max(len(d.text) for d in docs) > 50_000
    nodes = store.table("nodes").to_arrow()
    assert nodes.num_rows == row["n_nodes"]
    for d in documents:
        assert d["content_hash"] == by_id[d["doc_id"]].content_hash
        assert d["text"] == by_id[d["doc_id"]].text and d["n_chars"] == len(d["text"])
        st = store.load_tree(d["doc_id"])
        n = st.tree.n
        assert n == d["n_chunks"] and len(st.tree.left) == 2 * n - 1
        validate_tree(st.tree)
        for (s, e), text in zip(st.spans.tolist(), st.texts):
            assert d["text"][s:e] == text and text.strip() == text and text
        assert np.all(np.diff(st.spans[:, 0]) > 0)  # leaves in document order
        kids = st.tree.left[n:], st.tree.right[n:]
        assert np.all(st.tree.parent[kids[0]] == np.arange(n, 2 * n - 1))
        assert np.all(st.tree.parent[kids[1]] == np.arange(n, 2 * n - 1))
    one = store.load_tree("one_sentence.txt").tree
    assert one.n == 1 and len(one.left) == 1
    meta = nodes.schema.metadata
    assert meta[b"sproutrag.encoder"] == b"sentence-transformers/all-MiniLM-L6-v2"
    assert meta[b"sproutrag.dim"] == b"384" and meta[b"sproutrag.schema_version"] == b"7"


def test_run_is_recorded_and_rerun_is_incremental(indexed):
    from sproutrag.flows.index_corpus import index_corpus

    db, first = indexed
    settings_version = Store.open_existing(db).table("index_settings").version
    again = index_corpus(corpus=str(SAMPLE), db=db)
    assert again["n_unchanged"] == first["n_new"] and again["n_new"] == 0
    assert again["n_nodes"] == 0
    store = Store.open_existing(db)
    assert store.table("index_settings").version == settings_version  # nothing changed
    runs = store.table("runs").to_arrow().to_pylist()
    assert len(runs) == 2
    # Each row names its Prefect flow run (a downstream job can tie rows to runs).
    assert all(r["flow_run_id"] for r in runs) and runs[0]["flow_run_id"] != runs[1][
        "flow_run_id"]
    timings = json.loads(runs[0]["timings_json"])
    assert {"discover", "chunk", "encode", "build_trees", "store"} <= set(timings)
    assert runs[0]["n_chars"] > 50_000 and runs[0]["n_chunks"] > 0


def _pair(found):
    """(documents, failures) of a `Discovery`."""
    return found.docs, found.failures


def _settings_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k.upper().startswith("SPROUTRAG_")}


TEXTS = {"a.txt": "The supplier delivers within ten days. Payment is due in thirty days.",
         "b.txt": "Staff may work remotely. The stipend covers a desk and a chair."}


def test_the_cli_hands_its_settings_to_the_flow_as_a_parameter(
    prefect_harness, tmp_path, monkeypatch
):
    """`sproutrag index --no-progress` changes no environment variable: the flow run gets
    the settings preflight loaded as its `settings` parameter, which Prefect stores
    without the credentials' values."""
    import uuid

    from prefect.client.orchestration import get_client
    from sproutrag.flows.cli import main

    secret = "sproutrag-flow-parameter-secret"
    monkeypatch.delenv("SPROUTRAG_PIPELINE__PROGRESS", raising=False)
    monkeypatch.setenv("SPROUTRAG_STORAGE__SECRET_ACCESS_KEY", secret)
    corpus, db = tmp_path / "corpus", str(tmp_path / "db")
    corpus.mkdir()
    for name, text in TEXTS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    before = _settings_env()
    assert main(["index", str(corpus), "--db", db, "--no-progress"]) == 0
    assert _settings_env() == before
    [run] = Store.open_existing(db).table("runs").to_arrow().to_pylist()
    with get_client(sync_client=True) as client:
        params = client.read_flow_run(uuid.UUID(run["flow_run_id"])).parameters
    assert params["settings"]["pipeline"]["progress"] is False and params["config"] is None
    assert params["settings"]["storage"]["secret_access_key"] == "**********"
    assert secret not in json.dumps(params)


def test_settings_and_config_together_are_refused(prefect_harness, tmp_path):
    from sproutrag.flows.index_corpus import index_corpus
    from sproutrag.flows.parameters import SettingsParameterError
    from sproutrag.schemas.settings import Settings

    config = tmp_path / "s.yaml"
    config.write_text("pipeline:\n  batch_docs: 2\n", encoding="utf-8")
    with pytest.raises(SettingsParameterError, match="either settings or config"):
        index_corpus(corpus=str(SAMPLE), db=str(tmp_path / "db"), config=str(config),
                     settings=Settings())
    assert not (tmp_path / "db").exists()


def test_evaluate_db_indexes_as_index_does_with_the_evaluated_weights(
    prefect_harness, tmp_path, monkeypatch, capsys
):
    """`evaluate --db` runs the index flow through the same path as `sproutrag index`
    (its summary line), with the --weights file in the settings object it hands the
    flow, not in an environment variable."""
    import shutil

    from sproutrag.flows.cli import main

    from sproutrag.encoder.weights import PACKAGED_WEIGHTS
    from sproutrag.storage.index_info import read_index_infos

    monkeypatch.delenv("SPROUTRAG_ENCODING__WEIGHTS", raising=False)
    docs, queries = tmp_path / "docs.jsonl", tmp_path / "queries.jsonl"
    docs.write_text("".join(json.dumps({"doc_id": n, "text": t}) + "\n"
                            for n, t in TEXTS.items()), encoding="utf-8")
    start = TEXTS["a.txt"].index("Payment")
    queries.write_text(json.dumps({
        "qid": "q1", "query": "When is payment due?", "doc_ids": ["a.txt"],
        "gold": [{"doc_id": "a.txt", "start": start, "end": len(TEXTS["a.txt"])}],
    }) + "\n", encoding="utf-8")
    weights, db = tmp_path / "w.json", str(tmp_path / "db")
    shutil.copy(PACKAGED_WEIGHTS, weights)
    before = _settings_env()
    assert main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--k", "1",
                 "--modes", "flat", "tree", "--weights", str(weights), "--db", db,
                 "--out", str(tmp_path / "eval")]) == 0
    assert f"indexed {docs} into {db}: 2 new" in capsys.readouterr().out
    assert _settings_env() == before
    [info] = read_index_infos(Store.open_existing(db)).values()
    assert info.weights_source == str(weights)


def test_a_completed_run_s_summary_survives_a_state_without_data(prefect_harness, tmp_path):
    """Under load Prefect's server may answer a run's final state from its own record (a
    retried request), which holds no data: the summary is then the row the run wrote to
    `runs`, found by the flow run's id."""
    from prefect.exceptions import MissingResult
    from sproutrag.flows.commands import index_result
    from sproutrag.flows.index_corpus import index_corpus

    from tests.helpers import TEXTS, write_files

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    state = index_corpus(corpus=str(corpus), db=str(db), return_state=True)
    row = index_result(state, str(db))
    bare = state.model_copy(update={"data": None})
    with pytest.raises(MissingResult):
        bare.result(raise_on_failure=False)
    stored = index_result(bare, str(db))
    assert stored["flow_run_id"] == str(state.state_details.flow_run_id)
    assert {k: stored[k] for k in ("run_id", "n_new", "n_chunks", "status")} == {
        k: row[k] for k in ("run_id", "n_new", "n_chunks", "status")}
