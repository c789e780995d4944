"""Issue 11 through the real flows and CLI: the database knows how it was built (index
settings, model content), symlinks out of the corpus are skipped, a missing corpus
fails at once, and runs name their Prefect flow run."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from sproutrag.encoder.weights import PACKAGED_WEIGHTS, TrainedWeights
from sproutrag.params import SearchParams
from sproutrag.storage.store import Store
from tests.helpers import TEXTS, write_files

pytestmark = pytest.mark.model

QUESTION = "When is payment due?"


def _weights_file(path: Path, *, alpha_shift: float = 0.0, **search) -> Path:
    """The packaged weights with other search parameters (and optionally another alpha)."""
    base = TrainedWeights.load(PACKAGED_WEIGHTS)
    TrainedWeights(base.alpha + np.float32(alpha_shift), SearchParams(**search),
                   layers=base.layers).save(path)
    return path


def _config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(prefect_harness, tmp_path_factory):
    """A small corpus with a symlink to a file outside it, indexed with weights whose
    search parameters differ from the packaged ones (a high delta, no seeds)."""
    from sproutrag.flows.index_corpus import index_corpus

    root = tmp_path_factory.mktemp("built")
    corpus, db = root / "corpus", root / "db"
    write_files(corpus, TEXTS)
    (root / "private.txt").write_text("root:x:0:0:do not index me", encoding="utf-8")
    (corpus / "leak.txt").symlink_to(root / "private.txt")
    weights = _weights_file(root / "strict.json", threshold=0.95, lexical_weight=0.5,
                            size_penalty=2.0, seed_leaves=False)
    config = _config(root / "strict.yaml", f"encoding:\n  weights: {weights}\n")
    row = index_corpus(corpus=str(corpus), db=str(db), config=str(config))
    return root, corpus, str(db), weights, row


def test_symlink_out_of_the_corpus_is_skipped_and_reported(built):
    _, _, db, _, row = built
    assert (row["n_new"], row["n_failed"], row["status"]) == (3, 0, "completed")
    assert "skipped 1 symlinks pointing outside the corpus folder" in row["message"]
    assert "leak.txt" in row["message"]
    docs = Store.open_existing(db).table("documents").to_arrow().to_pylist()
    assert sorted(d["doc_id"] for d in docs) == sorted(TEXTS)
    assert not any("do not index me" in d["text"] for d in docs)
    assert row["flow_run_id"]  # the Prefect flow run of this index run


def test_index_settings_are_stored_and_readers_default_to_them(built, capsys):
    from sproutrag.flows.cli import main

    from sproutrag.encoder.encoder import Encoder
    from sproutrag.search.retriever import Retriever
    from sproutrag.storage.index_info import read_index_infos

    root, _, db, weights, row = built
    [info] = read_index_infos(Store.open_existing(db)).values()
    strict = TrainedWeights.load(weights)
    assert info.index_fingerprint == row["index_fingerprint"]
    assert (info.weights_source, info.weights_fingerprint) == (str(weights),
                                                               strict.fingerprint())
    assert info.tree_fingerprint == strict.tree_fingerprint()
    assert info.search == strict.search
    assert (info.search.threshold, info.search.lexical_weight) == (0.95, 0.5)
    assert info.encoder_sha256 == Encoder().model_sha256
    assert "storage" not in info.settings_json  # never credentials

    retriever = Retriever(db)  # no settings at all: the database's defaults
    assert (retriever.threshold, retriever.lexical_weight) == (0.95, 0.5)
    capsys.readouterr()
    assert main(["query", "--db", db, QUESTION]) == 0  # no --config: the database's delta
    assert "a.txt:" in capsys.readouterr().out  # orders the evidence: k is still filled
    assert main(["query", "--db", db, QUESTION, "--threshold", "0.95"]) == 0  # a cutoff
    out = capsys.readouterr().out
    assert "no evidence has cosine >= 0.95 (the threshold)" in out

    # Settings naming a weights file: its alpha must be the database's ...
    other = _weights_file(root / "other.json", alpha_shift=0.5)
    bad = _config(root / "other.yaml", f"encoding:\n  weights: {other}\n")
    assert main(["query", "--db", db, "--config", str(bad), QUESTION]) == 1
    err = capsys.readouterr().err
    assert f"built with weights '{weights}'" in err and str(other) in err
    assert "alpha fingerprint" in err and "Traceback" not in err
    # ... and then its search parameters are used (re-learned search, same trees).
    loose = _weights_file(root / "loose.json", threshold=0.0, seed_leaves=True)
    good = _config(root / "loose.yaml", f"encoding:\n  weights: {loose}\n")
    assert main(["query", "--db", db, "--config", str(good), QUESTION]) == 0
    assert "a.txt:" in capsys.readouterr().out


def test_new_search_defaults_reach_a_long_lived_reader_without_reindexing(built):
    from sproutrag.flows.index_corpus import index_corpus

    from sproutrag.search.retriever import Retriever

    root, corpus, db, _, _ = built
    reader = Retriever(db)
    assert reader.threshold == 0.95
    relearned = _weights_file(root / "relearned.json", threshold=0.1, lexical_weight=0.5,
                              size_penalty=2.0, seed_leaves=False)
    config = _config(root / "relearned.yaml", f"encoding:\n  weights: {relearned}\n")
    again = index_corpus(corpus=str(corpus), db=db, config=str(config))
    assert (again["n_unchanged"], again["n_changed"]) == (3, 0)  # alpha only: no re-index
    assert reader.threshold == 0.1 and reader.search(QUESTION, k=2)


def test_missing_corpus_fails_at_once_without_retries_or_database(prefect_harness, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from sproutrag.flows.index_corpus import index_corpus

    from sproutrag.ingest.corpus import CorpusNotFoundError

    db = tmp_path / "db"
    state = index_corpus(corpus=str(tmp_path / "nowhere"), db=str(db), return_state=True)
    assert state.is_failed() and not db.exists()
    assert isinstance(state.result(raise_on_failure=False), CorpusNotFoundError)
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(
            id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    assert [(r.name.split("-")[0], r.run_count) for r in runs] == [("check_corpus", 1)]


def _rewrite_weights(folder: Path, seed: int) -> None:
    """Fine-tune "again" into the same folder: new weights, same names and sizes."""
    from safetensors.numpy import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(path)
    rng = np.random.default_rng(seed)
    name = next(k for k in sorted(tensors) if k.endswith("query.weight"))
    tensors[name] = tensors[name] + rng.normal(0, 0.02, tensors[name].shape).astype(
        tensors[name].dtype)
    save_file(tensors, path, metadata={"format": "pt"})


def test_a_model_fine_tuned_again_into_its_folder_reindexes_and_is_checked(
    prefect_harness, tmp_path, capsys
):
    from sproutrag.flows.cli import main
    from sproutrag.flows.index_corpus import index_corpus

    from sproutrag.encoder.encoder import DEFAULT_MODEL

    model = tmp_path / "encoder"
    shutil.copytree(DEFAULT_MODEL, model)
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, {k: TEXTS[k] for k in ("a.txt", "b.md")})
    config = _config(tmp_path / "ft.yaml", f"encoding:\n  model: {model}\n")
    first = index_corpus(corpus=str(corpus), db=str(db), config=str(config))
    assert first["n_new"] == 2
    assert main(["query", "--db", str(db), QUESTION]) == 0  # the database's own model
    _rewrite_weights(model, seed=1)
    capsys.readouterr()
    assert main(["query", "--db", str(db), QUESTION]) == 1  # stale vectors: refused
    err = capsys.readouterr().err
    assert "content sha256" in err and str(model) in err and "sproutrag index" in err
    again = index_corpus(corpus=str(corpus), db=str(db), config=str(config))
    assert (again["n_changed"], again["n_unchanged"]) == (2, 0)  # same path, new content
    assert again["index_fingerprint"] != first["index_fingerprint"]
    assert main(["query", "--db", str(db), QUESTION]) == 0
