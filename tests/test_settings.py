from __future__ import annotations

import pytest

from schemas.settings import ConfigFileError, fingerprint, load_settings


def test_precedence_overrides_env_yaml_defaults(tmp_path, monkeypatch):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "chunking:\n  sentences_per_chunk: 3\n  max_chunk_chars: 500\n"
        "encoding:\n  device: cpu\n  window_stride: 128\n",
        encoding="utf-8",
    )
    assert load_settings().chunking.sentences_per_chunk == 2  # default
    s = load_settings(cfg)
    assert (s.chunking.sentences_per_chunk, s.chunking.max_chunk_chars) == (3, 500)
    monkeypatch.setenv("SPROUTRAG_CHUNKING__SENTENCES_PER_CHUNK", "4")
    s = load_settings(cfg)
    assert s.chunking.sentences_per_chunk == 4  # env beats YAML
    assert s.chunking.max_chunk_chars == 500  # the rest of the YAML section stays
    s = load_settings(cfg, chunking={"sentences_per_chunk": 1})
    assert s.chunking.sentences_per_chunk == 1  # overrides beat env
    assert s.encoding.window_stride == 128


def test_bad_settings_are_rejected(tmp_path):
    with pytest.raises(ConfigFileError, match="does not exist"):
        load_settings(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("chunking:\n  sentences_per_chunk: 0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="sentences_per_chunk"):
        load_settings(bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("chunking:\n  sentence_per_chunk: 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="sentence_per_chunk"):
        load_settings(typo)


def test_fingerprint_is_stable_and_sensitive():
    a = load_settings().tree_fields()
    assert load_settings().tree.parent_embedding == "size_weighted"
    b = load_settings(tree={"parent_embedding": "mean_of_children"}).tree_fields()
    assert fingerprint(a) == fingerprint(dict(a))
    assert fingerprint(a) != fingerprint(b)
