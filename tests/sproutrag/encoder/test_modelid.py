"""A model is identified by its content: rewriting its folder (fine-tuning again into it)
changes the index fingerprint and the evaluation's feature cache key."""

from __future__ import annotations

import os
import shutil

import pytest

from sproutrag.encoder.encoder import DEFAULT_MODEL, Encoder
from sproutrag.encoder.identity import ModelNotFoundError, folder_sha256, model_sha256
from sproutrag.encoder.weights import TrainedWeights
from sproutrag.ingest.index_identity import encoder_fields
from sproutrag.learn.features import feature_path


@pytest.fixture
def model_dir(tmp_path):
    """A model folder: the packaged config and tokenizer, stand-in weight bytes."""
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "vocab.txt"):
        shutil.copy(os.path.join(DEFAULT_MODEL, name), folder / name)
    (folder / "model.safetensors").write_bytes(b"weights v1" * 1000)
    (folder / "README.md").write_text("about the model", encoding="utf-8")
    return folder


def test_rewriting_the_weights_changes_the_identity_not_the_readme(model_dir):
    first = folder_sha256(model_dir)
    (model_dir / "README.md").write_text("edited", encoding="utf-8")
    assert folder_sha256(model_dir) == first
    (model_dir / "model.safetensors").write_bytes(b"weights v2" * 1000)  # same size
    second = folder_sha256(model_dir)
    assert second != first and model_sha256(str(model_dir)) == second
    (model_dir / "config.json").write_text(
        (model_dir / "config.json").read_text().replace("}", ', "extra": 1}', 1))
    assert folder_sha256(model_dir) not in (first, second)


def test_fingerprint_and_feature_cache_follow_the_content(model_dir, tmp_path):
    weights = TrainedWeights.uniform(6, 12)
    encoder = Encoder(str(model_dir), weights=weights)
    before = encoder_fields(encoder)
    docs = [{"doc_id": "a", "text": "One. Two."}]
    cache = feature_path(tmp_path / "cache", docs, encoder, {"sentences_per_chunk": 2})
    (model_dir / "model.safetensors").write_bytes(b"fine-tuned again")  # same folder
    after = encoder_fields(Encoder(str(model_dir), weights=weights))
    assert after["encoder"] == before["encoder"] == str(model_dir.resolve())
    assert after["encoder_sha256"] != before["encoder_sha256"]
    assert feature_path(tmp_path / "cache", docs, encoder, {"sentences_per_chunk": 2}) != cache
    assert Encoder().model_sha256 == folder_sha256(DEFAULT_MODEL)  # the packaged model too


def test_bad_model_paths_are_named(tmp_path, model_dir):
    with pytest.raises(ModelNotFoundError, match="no model folder at"):
        model_sha256(str(tmp_path / "missing" / "model"))
    (model_dir / "config.json").unlink()
    with pytest.raises(ModelNotFoundError, match="not a model folder"):
        model_sha256(str(model_dir))


@pytest.mark.parametrize("remove, broken, said", [
    (("model.safetensors",), None, r"no weights \(model.safetensors\)"),
    (("tokenizer.json", "vocab.txt"), None, r"no tokenizer \(tokenizer.json\)"),
    ((), "{not json", "config.json cannot be read as JSON"),
    ((), "[1, 2]", "config.json is not a JSON object"),
])
def test_a_folder_a_model_cannot_load_from_is_named_before_any_run(model_dir, remove, broken,
                                                                    said):
    """A folder of config.json alone passed, and the run then failed every document while
    stamping a new database with a model it could not load."""
    for name in remove:
        (model_dir / name).unlink()
    if broken is not None:
        (model_dir / "config.json").write_text(broken, encoding="utf-8")
    with pytest.raises(ModelNotFoundError, match=said):
        model_sha256(str(model_dir))
