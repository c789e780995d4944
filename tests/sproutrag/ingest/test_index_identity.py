"""The index identity: one library function, byte-identical to the fingerprints databases
already carry (a changed string would re-index every corpus)."""

from __future__ import annotations

import numpy as np
import pytest
from sproutrag.schemas.settings import Settings
from sproutrag.tasks.database import index_fingerprint as task_index_fingerprint

from sproutrag.encoder.encoder import PACKAGED_MODEL_ID, Encoder
from sproutrag.encoder.factory import shared_encoder
from sproutrag.encoder.weights import PACKAGED_WEIGHTS, TrainedWeights
from sproutrag.ingest.index_identity import (
    encoder_fields,
    fingerprint,
    index_fields,
    index_fingerprint,
)
from sproutrag.learn.features import feature_path
from sproutrag.params import SearchParams

pytestmark = pytest.mark.model  # reads the packaged model (config, content hash)

#: Computed before the identity moved into the library (commit 199a7df, with
#: `sproutrag.tasks.database.index_fingerprint(Settings(...))`), with the packaged model, the
#: weights packaged then (now weights-6-layers.json) and the units of then
#: (chunking.respect_structure false, join_max_chars null, the sentence rules before 0.11):
#: both are added to every row below.
OLD_WEIGHTS = str(PACKAGED_WEIGHTS.with_name("weights-6-layers.json"))
OLD_UNITS = {"respect_structure": False, "join_max_chars": None, "lists": False,
             "sentence_rules": 1}
PINNED = [
    ({}, "be3aa5efbbbcfd0e"),
    ({"chunking": {"sentences_per_chunk": 3}, "tree": {"parent_embedding": "mean_of_children"}},
     "bb1d60eb285db0b5"),
    ({"encoding": {"window_stride": 256, "embedding_mode": "context"},
      "chunking": {"within_paragraphs": True}}, "bd9a89a22eb4a8c5"),
]


@pytest.mark.parametrize("overrides, expected", PINNED)
def test_index_fingerprints_are_byte_identical_to_before(overrides, expected):
    encoding = {**overrides.get("encoding", {}), "weights": OLD_WEIGHTS}
    chunking = {**overrides.get("chunking", {}), **OLD_UNITS}
    settings = Settings(**{**overrides, "encoding": encoding, "chunking": chunking})
    encoder = shared_encoder(settings)
    got = index_fingerprint(encoder, chunking=settings.chunking, tree=settings.tree)
    assert got == expected
    assert task_index_fingerprint(settings) == expected  # the index flow's path
    assert index_fingerprint(encoder, chunking=settings.chunking.model_dump(),
                             tree=settings.tree.model_dump()) == expected  # plain dicts


def test_the_fields_are_what_the_settings_table_records():
    settings = Settings()
    fields = index_fields(shared_encoder(settings), chunking=settings.chunking,
                          tree=settings.tree)
    assert fields == {
        "encoder": PACKAGED_MODEL_ID, "encoder_sha256": "f5a5e1242ff43d92",
        "embedding_mode": "alone", "window_tokens": 512, "window_stride": 510,
        "chunk_max_tokens": 256, "weights": "8a88e83e5f60ed98", "schema_version": "3",
        "chunking": {"sentences_per_chunk": 2, "max_chunk_chars": 1000,
                     "within_paragraphs": False, "respect_structure": True,
                     "join_max_chars": 600, "sentence_rules": 2},
        "tree": {"parent_embedding": "size_weighted"},
    }
    assert fingerprint(fields) == fingerprint(dict(reversed(fields.items())))  # key order


def test_every_part_changes_the_fingerprint_and_the_search_does_not():
    settings = Settings()
    base = Encoder(device="cpu")

    def fp(encoder: Encoder = base, **sections) -> str:
        parts = {"chunking": settings.chunking.model_dump(), "tree": settings.tree.model_dump()}
        return index_fingerprint(encoder, **{**parts, **sections})

    alpha = np.ones((6, 12), np.float32)
    changed = {
        fp(), fp(Encoder(device="cpu", window_stride=128)),
        fp(Encoder(device="cpu", chunk_max_tokens=128)),
        fp(Encoder(device="cpu", embedding_mode="context")),
        fp(Encoder(device="cpu", weights=TrainedWeights(alpha))),
        fp(chunking={**settings.chunking.model_dump(), "sentences_per_chunk": 3}),
        fp(tree={"parent_embedding": "mean_of_children"}),
    }
    assert len(changed) == 7
    searched = TrainedWeights(alpha, SearchParams(threshold=0.4, lexical_weight=1.0,
                                                  size_penalty=2.0, seed_leaves=True))
    assert fp(Encoder(device="cpu", weights=searched)) == fp(
        Encoder(device="cpu", weights=TrainedWeights(alpha)))  # query time: no re-index
    # weights of another shape than the model: refused (only the packaged file gives way)
    with pytest.raises(ValueError, match="2 layers x 2 heads.*has 6 layers x 12 heads"):
        fp(Encoder(device="cpu", weights=TrainedWeights.uniform(2, 2)))
    with pytest.raises(TypeError, match="settings section or a mapping"):
        fp(tree="size_weighted")


def test_precision_enters_the_identity_only_off_float32(monkeypatch):
    """A mixed-precision GPU run (bf16 / fp16 autocast) gets another fingerprint, so it
    re-indexes a CPU-built index instead of mixing float32 and bf16 vectors; float32 (on
    any device, the default) keeps the fingerprints databases already carry."""
    # the device is not in the identity
    settings = Settings(encoding={"device": "cpu", "weights": OLD_WEIGHTS},
                        chunking=OLD_UNITS)
    cpu = shared_encoder(settings)
    assert cpu.precision == "float32" and "precision" not in encoder_fields(cpu)
    mixed = shared_encoder(settings.model_copy(update={"encoding": settings.encoding.model_copy(
        update={"mixed_precision": True})}))
    assert mixed.mixed_precision and mixed.precision == "float32"  # not on CPU
    parts = {"chunking": settings.chunking, "tree": settings.tree}
    assert index_fingerprint(cpu, **parts) == PINNED[0][1]
    for half in ("bfloat16", "float16"):
        monkeypatch.setattr(Encoder, "precision", property(lambda self, h=half: h))
        assert encoder_fields(cpu)["precision"] == half
        assert index_fingerprint(cpu, **parts) != PINNED[0][1]


def test_the_feature_cache_key_shares_the_encoder_part_and_is_pinned(tmp_path):
    """The evaluation's cache key uses `encoder_fields` (not alpha, not the tree: see the
    module docstring) and keeps its values from before the move (caches stay valid)."""
    settings = Settings(chunking=OLD_UNITS)  # the units of then
    encoder = shared_encoder(settings)
    assert "weights" not in encoder_fields(encoder)
    docs = [{"doc_id": "a", "text": "One sentence. Two sentences."}]
    chunking = settings.chunking.model_dump()
    assert feature_path(tmp_path, docs, encoder, chunking).name == "features-3d6f254eced3f13c.npz"
    structured = Settings().chunking.model_dump()  # the default units: another key
    assert feature_path(tmp_path, docs, encoder, structured) != feature_path(
        tmp_path, docs, encoder, chunking)
    other = {"sentences_per_chunk": 3, "max_chunk_chars": 500, "within_paragraphs": True}
    assert feature_path(tmp_path, docs, encoder, other).name == "features-7337d0aa012ae53e.npz"
    reweighted = Encoder(device="cpu", weights=TrainedWeights(np.ones((6, 12))))
    assert feature_path(tmp_path, docs, reweighted, chunking) == feature_path(
        tmp_path, docs, encoder, chunking)  # alpha does not change the features


def test_structured_units_change_the_fingerprint_and_the_old_behaviour_keeps_it():
    """chunking.respect_structure enters the identity only when on (the default): an
    index built before the option, or with it off, keeps its fingerprint; the new units
    re-index once."""
    base, on = Settings(), Settings(chunking={"respect_structure": True})
    off = Settings(chunking={"respect_structure": False})
    assert task_index_fingerprint(on) == task_index_fingerprint(base)
    assert task_index_fingerprint(off) != task_index_fingerprint(base)
    fields = index_fields(shared_encoder(on), chunking=on.chunking, tree=on.tree)
    assert fields["chunking"]["respect_structure"] is True
    fields = index_fields(shared_encoder(off), chunking=off.chunking, tree=off.tree)
    assert "respect_structure" not in fields["chunking"]


def test_the_default_fingerprints_are_pinned():
    """Today's defaults (structured units, sentences joined within 600 characters, lists
    not told apart, sentence rules 2); `lists` on is another identity; 0.10's defaults
    (sentence rules 1), stop 19's (join cap off) and the layer-1 weights with the units of
    before keep theirs."""
    assert Settings().chunking.join_max_chars == 600 and not Settings().chunking.lists
    assert Settings().chunking.sentence_rules == 2
    assert task_index_fingerprint(Settings()) == "bb475185105d238c"
    rules1 = {"sentence_rules": 1}
    assert task_index_fingerprint(Settings(chunking=rules1)) == "c88cdd4f40df0c5e"
    assert task_index_fingerprint(Settings(chunking={"lists": True, **rules1})
                                  ) == "4bfa11727bed2e25"
    assert task_index_fingerprint(Settings(chunking={"lists": True})) not in {
        "4bfa11727bed2e25", "bb475185105d238c"}
    stop19 = Settings(chunking={"join_max_chars": None, "lists": False, **rules1})
    assert task_index_fingerprint(stop19) == "4972dfe7916fe0c2"
    old_units = Settings(chunking={"respect_structure": False, "join_max_chars": None,
                                   "lists": False, **rules1})
    assert task_index_fingerprint(old_units) == "c1faec46309c5d2b"
    fields = index_fields(shared_encoder(stop19), chunking=stop19.chunking, tree=stop19.tree)
    assert "join_max_chars" not in fields["chunking"]


def test_setting_changes_name_each_changed_setting_dotted():
    from sproutrag.ingest.index_identity import setting_changes

    before = {"encoder": "m", "chunking": {"sentences_per_chunk": 2}, "tree": {"p": "a"}}
    after = {"encoder": "m", "chunking": {"sentences_per_chunk": 1, "lists": True},
             "tree": {"p": "a"}, "schema_version": "7"}
    # "lists" left out of a fingerprint at its old default reads as that default
    assert setting_changes(before, after) == [
        "chunking.lists: false -> true", "chunking.sentences_per_chunk: 2 -> 1",
        'schema_version: unset -> "7"']
    assert setting_changes(after, after) == []
    # the encoder's fields sit at the top of the fingerprint: named by their settings
    assert setting_changes({"window_tokens": 512, "window_stride": 510},
                           {"window_tokens": 256, "window_stride": 254}) == [
        "encoding.window_stride: 510 -> 254", "encoding.window_tokens: 512 -> 256"]


def test_a_reindex_note_without_recorded_settings_says_why_none_are_named():
    from sproutrag.ingest.index_identity import reindex_note

    assert reindex_note(2, ["chunking.lists: false -> true"]) == (
        "2 documents indexed with other index settings are re-indexed with this run's "
        "(chunking.lists: false -> true)")
    # a schema-2 database recorded none: the note no longer ends as if cut short
    assert reindex_note(7, []).endswith(
        "with this run's (the database records no settings for them: a schema version 1 "
        "or 2 database, or documents written by `Store` directly)")
