from __future__ import annotations

import json

import numpy as np
import pytest

from sproutrag.encoder.weights import (
    FORMAT,
    PACKAGED_WEIGHTS,
    TrainedWeights,
    WeightsFileError,
    load_default_weights,
)
from sproutrag.params import SearchParams


def test_uniform_mix_is_one_over_72():
    w = TrainedWeights.uniform()
    mix = w.mix()
    assert mix.shape == (6, 12) and mix.dtype == np.float32
    np.testing.assert_allclose(mix, 1 / 72, rtol=1e-6)
    assert w.search == SearchParams() and w.source == "uniform"


def test_mix_is_softmax_over_all_pairs():
    alpha = np.arange(6, dtype=np.float32).reshape(2, 3)
    mix = TrainedWeights(alpha).mix()
    e = np.exp(alpha - alpha.max())
    np.testing.assert_allclose(mix, e / e.sum(), rtol=1e-6)
    assert abs(float(mix.sum()) - 1) < 1e-6
    big = TrainedWeights(np.full((2, 2), 1e4, np.float32)).mix()  # no overflow
    np.testing.assert_allclose(big, 0.25)


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    w = TrainedWeights(rng.normal(size=(6, 12)).astype(np.float32), SearchParams(threshold=0.37),
                       trained_on="x.jsonl")
    path = w.save(tmp_path / "sub" / "weights.json")
    back = TrainedWeights.load(path)
    np.testing.assert_array_equal(back.alpha, w.alpha)
    assert back.search == w.search and back.trained_on == "x.jsonl"
    assert back.fingerprint() == w.fingerprint() and back == w
    assert back.source == str(path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["encoder"] == w.encoder
    assert not list(tmp_path.glob("sub/*.tmp"))


def test_fingerprint_changes_with_alpha_and_delta():
    base = TrainedWeights.uniform()
    alpha = base.alpha.copy()
    alpha[5, 11] = 1e-3
    fps = {
        base.fingerprint(),
        TrainedWeights(alpha).fingerprint(),
        TrainedWeights(base.alpha, SearchParams(threshold=0.5)).fingerprint(),
        TrainedWeights.uniform(12, 6).fingerprint(),
        TrainedWeights(base.alpha, SearchParams(margin=0.0)).fingerprint(),
        TrainedWeights(base.alpha, SearchParams(margin=0.05)).fingerprint(),
    }
    assert len(fps) == 6
    # the source (a path) is not content: same numbers, same fingerprint
    assert (
        TrainedWeights(base.alpha, source="elsewhere.json").fingerprint() == base.fingerprint()
    )
    assert len(base.fingerprint()) == 16


def test_alpha_is_read_only_copy():
    a = np.zeros((2, 2), np.float32)
    w = TrainedWeights(a)
    a[0, 0] = 5
    assert w.alpha[0, 0] == 0
    with pytest.raises(ValueError):
        w.alpha[0, 0] = 1


@pytest.mark.parametrize(
    "content, problem",
    [
        ("{not json", "not a readable JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"format": "other/9", "alpha": [[0]]}', "format"),
        (f'{{"format": "{FORMAT}"}}', "missing 'alpha'"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1], [2]]}}', "rectangular"),
        (f'{{"format": "{FORMAT}", "alpha": [0, 1]}}', "shape"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, NaN]]}}', "NaN"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1e308]]}}', "beyond float32's range"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": NaN}}', "delta"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": "high"}}', "delta"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "n_heads": 3}}', "n_heads"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "margin": -0.1}}', "margin"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "margin": "wide"}}', "margin"),
        # a misspelt parameter is refused, not its default without a word
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "doc_wieght": 1}}',
         "unknown key 'doc_wieght' .*a weights file holds .*doc_weight"),
    ],
)
def test_bad_files_raise_weights_file_error(tmp_path, content, problem):
    path = tmp_path / "w.json"
    path.write_text(content)
    with pytest.raises(WeightsFileError, match=problem) as err:
        TrainedWeights.load(path)
    assert str(path) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_missing_file(tmp_path):
    with pytest.raises(WeightsFileError, match="no such"):
        TrainedWeights.load(tmp_path / "absent.json")


def test_constructor_rejects_bad_values():
    with pytest.raises(ValueError):
        TrainedWeights(np.zeros(3))
    with pytest.raises(ValueError):
        TrainedWeights(np.array([[np.nan]]))
    with pytest.raises(ValueError):
        TrainedWeights(np.zeros((1, 1)), SearchParams(threshold=float("inf")))


def test_margin_round_trips_and_old_files_have_none(tmp_path):
    w = TrainedWeights(np.ones((2, 3)), SearchParams(threshold=0.4, margin=0.03))
    back = TrainedWeights.load(w.save(tmp_path / "w.json"))
    assert back.search.margin == 0.03 and back == w
    old = tmp_path / "old.json"  # written before margins existed: no key
    old.write_text(f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": 0.2}}')
    assert TrainedWeights.load(old).search.margin is None
    with pytest.raises(ValueError, match="margin"):
        TrainedWeights(np.zeros((1, 1)), SearchParams(margin=-1.0))


def test_search_parameters_round_trip_and_old_files_are_untrained(tmp_path):
    w = TrainedWeights(np.ones((2, 3)), SearchParams(threshold=0.1, lexical_weight=0.75,
                                                     size_penalty=2.0, seed_leaves=True))
    back = TrainedWeights.load(w.save(tmp_path / "w.json"))
    assert (back.search.lexical_weight, back.search.size_penalty, back.search.seed_leaves) == (
        0.75, 2.0, True)
    assert back == w and back.fingerprint() == w.fingerprint()
    old = tmp_path / "old.json"  # written before the search parameters existed
    old.write_text(f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": 0.2}}')
    o = TrainedWeights.load(old)
    assert o.search == SearchParams(threshold=0.2)
    for key, bad in (("lexical_weight", -1), ("size_penalty", "big"), ("seed_leaves", 1)):
        path = tmp_path / f"bad-{key}.json"
        path.write_text(json.dumps({"format": FORMAT, "alpha": [[0, 1]], key: bad}))
        with pytest.raises(WeightsFileError, match=key):
            TrainedWeights.load(path)


def test_only_alpha_changes_the_tree_fingerprint():
    base = TrainedWeights(np.zeros((2, 2)))
    query_time = [
        TrainedWeights(base.alpha, SearchParams(threshold=0.4)),
        TrainedWeights(base.alpha, SearchParams(margin=0.1)),
        TrainedWeights(base.alpha, SearchParams(lexical_weight=0.5)),
        TrainedWeights(base.alpha, SearchParams(size_penalty=1.0)),
        TrainedWeights(base.alpha, SearchParams(seed_leaves=True)),
    ]
    assert {w.tree_fingerprint() for w in query_time} == {base.tree_fingerprint()}
    assert len({w.fingerprint() for w in [base, *query_time]}) == 6  # the file differs
    assert TrainedWeights(np.ones((2, 2))).tree_fingerprint() != base.tree_fingerprint()


def test_previous_packaged_weights_load_and_fingerprint_as_before():
    """The previous packaged file (all six layers, kept as weights-6-layers.json) reads to
    the same numbers and fingerprints as before the search parameters became one
    `SearchParams` (values computed with the old `AggregationWeights`), and writes back
    byte for byte."""
    path = PACKAGED_WEIGHTS.with_name("weights-6-layers.json")
    w = TrainedWeights.load(path)
    assert (w.tree_fingerprint(), w.fingerprint()) == ("fc6fca376f1af9ed", "1003bc5350b29ea4")
    assert w.search == SearchParams(threshold=0.0, margin=None, lexical_weight=1.0,
                                    size_penalty=2.0, seed_leaves=True)
    assert w.layers is None
    assert json.dumps(w.to_dict(), indent=1) + "\n" == path.read_text("utf-8")


def test_packaged_weights_use_the_first_layer_with_the_previous_search():
    """The packaged weights: alpha over layer 1's heads (cheap trees), the search
    parameters of the previous file unchanged, pinned fingerprints, byte-for-byte."""
    w = load_default_weights(None)
    old = TrainedWeights.load(PACKAGED_WEIGHTS.with_name("weights-6-layers.json"))
    assert w.layers == 1 and w.used_layers == 1 and not w.mix()[1:].any()
    assert w.search == old.search
    assert (w.tree_fingerprint(), w.fingerprint()) == ("8a88e83e5f60ed98", "f5de541c3f62a77e")
    assert json.dumps(w.to_dict(), indent=1) + "\n" == PACKAGED_WEIGHTS.read_text("utf-8")


@pytest.mark.parametrize("search, expected", [
    ({}, "3c38e68c219a8586"),  # uniform (6, 12): the untrained default
    ({"threshold": 0.1, "margin": 0.03, "lexical_weight": 0.75, "size_penalty": 2.0,
      "seed_leaves": True}, "e11226236a35e831"),
    ({"threshold": -0.5, "margin": 0.0}, "f63af742064239fc"),
    ({"seed_leaves": True}, "181004a832e586cc"),
])
def test_weights_fingerprints_are_pinned(search, expected):
    """Fingerprints the old `AggregationWeights` computed for the same content."""
    alpha = np.zeros((6, 12)) if not search else np.ones((2, 3))
    assert TrainedWeights(alpha, SearchParams(**search)).fingerprint() == expected


def test_bad_search_values_in_a_file_name_the_key(tmp_path):
    for key, bad in (("delta", 1.5), ("delta", None), ("margin", 3.0), ("margin", True),
                     ("lexical_weight", 1e7), ("size_penalty", float("inf"))):
        path = tmp_path / "w.json"
        path.write_text(json.dumps({"format": FORMAT, "alpha": [[0, 1]], key: bad}))
        with pytest.raises(WeightsFileError, match=f"{path}: '{key}' must be") as err:
            TrainedWeights.load(path)
        assert repr(bad) in str(err.value)


def test_the_weights_hold_no_encoder_default():
    """The packaged encoder's id belongs to the encoder (`loading.PACKAGED_MODEL_ID`):
    untrained weights record no encoder, trained ones the encoder they were trained with."""
    assert TrainedWeights.uniform().encoder is None
    assert load_default_weights(None).encoder == "sentence-transformers/all-MiniLM-L6-v2"


def test_layers_limit_the_mix_round_trip_and_enter_only_the_tree_fingerprint(tmp_path):
    """Weights with `layers`: softmax over the first layers' heads, zero below; the file
    round-trips; the tree fingerprint changes (an index re-indexes once) while every
    all-layer fingerprint stays as it was (layers = n_layers is the same identity)."""
    alpha = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    cut = TrainedWeights(alpha, layers=1)
    w = cut.mix()
    assert w.shape == (3, 4) and cut.used_layers == 1
    np.testing.assert_allclose(w[0], np.exp(alpha[0]) / np.exp(alpha[0]).sum(), rtol=1e-6)
    assert not w[1:].any()
    whole = TrainedWeights(alpha)
    all_three = TrainedWeights(alpha, layers=3)
    assert all_three == whole and all_three.layers is None
    assert cut.tree_fingerprint() != whole.tree_fingerprint()
    assert TrainedWeights(alpha, layers=2).tree_fingerprint() != cut.tree_fingerprint()
    back = TrainedWeights.load(cut.save(tmp_path / "w.json"))
    assert back.layers == 1 and back == cut
    assert "layers" not in whole.to_dict()
    for bad in (0, 4, 1.5, True):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({"format": FORMAT, "alpha": alpha.tolist(), "layers": bad}))
        with pytest.raises(WeightsFileError, match="'layers' must be an integer from 1 to 3"):
            TrainedWeights.load(path)
    with pytest.raises(ValueError, match="layers must be"):
        TrainedWeights(alpha, layers=4)
