from __future__ import annotations

import pytest
from sproutrag.schemas.settings import ConfigFileError, load_settings


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
    flag = tmp_path / "flag.yaml"  # pydantic read true as 1
    flag.write_text("chunking:\n  sentences_per_chunk: true\n", encoding="utf-8")
    with pytest.raises(ValueError, match="chunking.sentences_per_chunk: .*got true"):
        load_settings(flag)
    typo = tmp_path / "typo.yaml"
    typo.write_text("chunking:\n  sentence_per_chunk: 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="sentence_per_chunk"):
        load_settings(typo)
    nan = tmp_path / "nan.yaml"  # NaN was "should be less than or equal to 1000000"
    nan.write_text("search:\n  link_weight: .nan\n", encoding="utf-8")
    with pytest.raises(ValueError, match="search.link_weight: Input should be a finite"):
        load_settings(nan)


def test_errors_name_the_variable_or_file_never_the_value(tmp_path, monkeypatch):
    from sproutrag.schemas.settings import SettingsError

    secret = "do-not-print-this-secret-9f2c"
    monkeypatch.setenv("SPROUTRAG_PIPELINE__BATCH_DOCS", "many")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "environment variable SPROUTRAG_PIPELINE__BATCH_DOCS" in str(err.value)
    assert "many" not in str(err.value) and "file" not in str(err.value)
    monkeypatch.delenv("SPROUTRAG_PIPELINE__BATCH_DOCS")
    # A misspelled secret field: named, with the valid names; its value never shown.
    monkeypatch.setenv("SPROUTRAG_STORAGE__SECRET_KEY", secret)
    with pytest.raises(SettingsError) as err:
        load_settings()
    text = f"{err.value} {err.value!r} {err.value.__context__!r} {err.value.__cause__!r}"
    assert "SPROUTRAG_STORAGE__SECRET_KEY" in text and "secret_access_key" in text
    assert secret not in text
    monkeypatch.delenv("SPROUTRAG_STORAGE__SECRET_KEY")
    cfg = tmp_path / "s.yaml"
    cfg.write_text(f"storage:\n  secret_key: {secret}\n", encoding="utf-8")
    with pytest.raises(SettingsError) as err:
        load_settings(cfg)
    assert str(cfg) in str(err.value) and secret not in str(err.value)
    # an endpoint without its scheme: named, its value (credentials in it) never shown
    monkeypatch.setenv("SPROUTRAG_STORAGE__ENDPOINT", f"user:{secret}@minio:9000")
    with pytest.raises(SettingsError) as err:
        load_settings()
    text = f"{err.value} {err.value!r} {err.value.__context__!r} {err.value.__cause__!r}"
    assert "storage.endpoint" in text and "http://HOST:PORT" in text and secret not in text


def test_misspelled_sections_and_broken_yaml_are_refused(tmp_path, monkeypatch):
    from sproutrag.schemas.settings import SettingsError

    monkeypatch.setenv("SPROUTRAG_PIPELNE__BATCH_DOCS", "4")  # silently ignored before
    with pytest.raises(SettingsError, match="SPROUTRAG_PIPELNE__BATCH_DOCS: no such settings"):
        load_settings()
    monkeypatch.delenv("SPROUTRAG_PIPELNE__BATCH_DOCS")
    monkeypatch.setenv("SPROUTRAG_CRASH_AT", "")  # a test hook, not a setting
    assert load_settings().pipeline.batch_docs == 1000
    broken = tmp_path / "broken.yaml"
    broken.write_text("pipeline:\n  batch_docs: [1\n  work_dir: x\n", encoding="utf-8")
    with pytest.raises(ConfigFileError, match=r"broken.yaml' is not valid YAML at line 3"):
        load_settings(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- pipeline\n", encoding="utf-8")
    with pytest.raises(ConfigFileError, match="must be a mapping"):
        load_settings(listed)
    numbered = tmp_path / "numbered.yaml"
    numbered.write_text("1: x\n", encoding="utf-8")  # was a TypeError, an internal error
    with pytest.raises(ConfigFileError, match="1 is no settings section"):
        load_settings(numbered)
    empty = tmp_path / "empty.yaml"
    empty.write_text("encoding:\n  model: ''\n", encoding="utf-8")  # was the current folder
    with pytest.raises(SettingsError, match="encoding.model: .*an empty path"):
        load_settings(empty)


@pytest.mark.parametrize("text, where, key", [
    ("encoding:\n  batch_size: 16\nchunking: {}\nencoding:\n  device: cpu\n",
     "line 4", "'encoding' is given twice \\(first at line 1\\)"),
    ("chunking:\n  sentences_per_chunk: 2\n  sentences_per_chunk: 3\n", "line 3",
     "'sentences_per_chunk' is given twice \\(first at line 2\\)"),
    ("chunking: {lists: true, lists: false}\n", "line 1", "'lists' is given twice"),
])
def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path, text, where, key):
    """PyYAML keeps a repeated key's last value: a second `encoding:` section silently
    dropped the first one's settings."""
    twice = tmp_path / "twice.yaml"
    twice.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigFileError, match=f"twice.yaml' is not valid YAML at {where}, "
                                              f"column [0-9]+: {key}"):
        load_settings(twice)


def test_a_merge_key_may_still_be_overridden(tmp_path):
    merged = tmp_path / "merged.yaml"
    merged.write_text("chunking:\n  <<: {sentences_per_chunk: 2, lists: true}\n"
                      "  sentences_per_chunk: 3\n", encoding="utf-8")
    chunking = load_settings(merged).chunking
    assert chunking.sentences_per_chunk == 3 and chunking.lists is True


def test_the_search_section_gives_the_retrievers_first_stage(tmp_path):
    assert load_settings().search.retriever_options() == {
        "n_docs": 8, "first_stage": "hybrid", "entity_ranking": True, "ranking_leaders": 0,
        "anchor_leaves": 32,
        "link_weight": 3.0, "leader_weight": 2.0, "fetch_named": 1, "mention_weight": 3.0,
        "fetch_mentioned": 2, "mention_statistics": True, "long_mention_weight": 6.0,
        "mention_alone": True, "alone_opening_leaves": 16, "dominant_ratio": 0.0,
        "name_free_leaves": 16}
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("search:\n  anchor_leaves: 0\n  link_weight: 0\n  fetch_named: 0\n"
                   "  mention_weight: 0\n  entity_ranking: false\n  fetch_mentioned: 0\n"
                   "  dominant_ratio: 3\n  ranking_leaders: 2\n  name_free_leaves: 0\n"
                   "  alone_opening_leaves: 0\n",
                   encoding="utf-8")
    options = load_settings(cfg).search.retriever_options()
    assert options["anchor_leaves"] == 0 and options["link_weight"] == 0  # off
    assert options["fetch_named"] == 0 and options["mention_weight"] == 0
    assert options["entity_ranking"] is False and options["fetch_mentioned"] == 0
    assert options["dominant_ratio"] == 3.0 and options["ranking_leaders"] == 2
    assert options["name_free_leaves"] == 0 and options["alone_opening_leaves"] == 0  # off
    for bad in ("anchor_leaves: -1", "link_weight: -0.5", "link_weight: .nan",
                "fetch_named: -1", "fetch_named: 0.5", "leader_weight: -1",
                "mention_weight: -1", "mention_weight: .inf", "entity_ranking: maybe",
                "ranking_leaders: -1", "ranking_leaders: 1.5",
                "fetch_mentioned: -1", "fetch_mentioned: 1.5", "mention_statistics: maybe",
                "long_mention_weight: -1", "mention_alone: maybe", "dominant_ratio: -1",
                "name_free_leaves: -1", "name_free_leaves: 1.5", "alone_opening_leaves: -1"):
        cfg.write_text(f"search:\n  {bad}\n", encoding="utf-8")
        with pytest.raises(ValueError, match=bad.split(":")[0]):
            load_settings(cfg)
