from __future__ import annotations

import json

import numpy as np
import pytest

from sproutrag.encoder.weights import FORMAT, AggregationWeights, WeightsFileError


def test_uniform_mix_is_one_over_72():
    w = AggregationWeights.uniform()
    mix = w.mix()
    assert mix.shape == (6, 12) and mix.dtype == np.float32
    np.testing.assert_allclose(mix, 1 / 72, rtol=1e-6)
    assert w.delta == 0.0 and w.source == "uniform"


def test_mix_is_softmax_over_all_pairs():
    alpha = np.arange(6, dtype=np.float32).reshape(2, 3)
    mix = AggregationWeights(alpha).mix()
    e = np.exp(alpha - alpha.max())
    np.testing.assert_allclose(mix, e / e.sum(), rtol=1e-6)
    assert abs(float(mix.sum()) - 1) < 1e-6
    big = AggregationWeights(np.full((2, 2), 1e4, np.float32)).mix()  # no overflow
    np.testing.assert_allclose(big, 0.25)


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    w = AggregationWeights(rng.normal(size=(6, 12)).astype(np.float32), 0.37, trained_on="x.jsonl")
    path = w.save(tmp_path / "sub" / "weights.json")
    back = AggregationWeights.load(path)
    np.testing.assert_array_equal(back.alpha, w.alpha)
    assert back.delta == w.delta and back.trained_on == "x.jsonl"
    assert back.fingerprint() == w.fingerprint() and back == w
    assert back.source == str(path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["encoder"] == w.encoder
    assert not list(tmp_path.glob("sub/*.tmp"))


def test_fingerprint_changes_with_alpha_and_delta():
    base = AggregationWeights.uniform()
    alpha = base.alpha.copy()
    alpha[5, 11] = 1e-3
    fps = {
        base.fingerprint(),
        AggregationWeights(alpha).fingerprint(),
        AggregationWeights(base.alpha, delta=0.5).fingerprint(),
        AggregationWeights.uniform(12, 6).fingerprint(),
        AggregationWeights(base.alpha, margin=0.0).fingerprint(),
        AggregationWeights(base.alpha, margin=0.05).fingerprint(),
    }
    assert len(fps) == 6
    # the source (a path) is not content: same numbers, same fingerprint
    assert (
        AggregationWeights(base.alpha, source="elsewhere.json").fingerprint() == base.fingerprint()
    )
    assert len(base.fingerprint()) == 16


def test_alpha_is_read_only_copy():
    a = np.zeros((2, 2), np.float32)
    w = AggregationWeights(a)
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
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": NaN}}', "delta"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": "high"}}', "delta"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "n_heads": 3}}', "n_heads"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "margin": -0.1}}', "margin"),
        (f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "margin": "wide"}}', "margin"),
    ],
)
def test_bad_files_raise_weights_file_error(tmp_path, content, problem):
    path = tmp_path / "w.json"
    path.write_text(content)
    with pytest.raises(WeightsFileError, match=problem) as err:
        AggregationWeights.load(path)
    assert str(path) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_missing_file(tmp_path):
    with pytest.raises(WeightsFileError, match="no such"):
        AggregationWeights.load(tmp_path / "absent.json")


def test_constructor_rejects_bad_values():
    with pytest.raises(ValueError):
        AggregationWeights(np.zeros(3))
    with pytest.raises(ValueError):
        AggregationWeights(np.array([[np.nan]]))
    with pytest.raises(ValueError):
        AggregationWeights(np.zeros((1, 1)), delta=float("inf"))


def test_margin_round_trips_and_old_files_have_none(tmp_path):
    w = AggregationWeights(np.ones((2, 3)), delta=0.4, margin=0.03)
    back = AggregationWeights.load(w.save(tmp_path / "w.json"))
    assert back.margin == 0.03 and back == w
    old = tmp_path / "old.json"  # written before margins existed: no key
    old.write_text(f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": 0.2}}')
    assert AggregationWeights.load(old).margin is None
    with pytest.raises(ValueError, match="margin"):
        AggregationWeights(np.zeros((1, 1)), margin=-1.0)


def test_search_parameters_round_trip_and_old_files_are_untrained(tmp_path):
    w = AggregationWeights(np.ones((2, 3)), delta=0.1, lexical_weight=0.75, size_penalty=2.0,
                           seed_leaves=True)
    back = AggregationWeights.load(w.save(tmp_path / "w.json"))
    assert (back.lexical_weight, back.size_penalty, back.seed_leaves) == (0.75, 2.0, True)
    assert back == w and back.fingerprint() == w.fingerprint()
    old = tmp_path / "old.json"  # written before the search parameters existed
    old.write_text(f'{{"format": "{FORMAT}", "alpha": [[0, 1]], "delta": 0.2}}')
    o = AggregationWeights.load(old)
    assert (o.lexical_weight, o.size_penalty, o.seed_leaves) == (0.0, 0.0, False)
    for key, bad in (("lexical_weight", -1), ("size_penalty", "big"), ("seed_leaves", 1)):
        path = tmp_path / f"bad-{key}.json"
        path.write_text(json.dumps({"format": FORMAT, "alpha": [[0, 1]], key: bad}))
        with pytest.raises(WeightsFileError, match=key):
            AggregationWeights.load(path)


def test_only_alpha_changes_the_tree_fingerprint():
    base = AggregationWeights(np.zeros((2, 2)))
    query_time = [
        AggregationWeights(base.alpha, delta=0.4),
        AggregationWeights(base.alpha, margin=0.1),
        AggregationWeights(base.alpha, lexical_weight=0.5),
        AggregationWeights(base.alpha, size_penalty=1.0),
        AggregationWeights(base.alpha, seed_leaves=True),
    ]
    assert {w.tree_fingerprint() for w in query_time} == {base.tree_fingerprint()}
    assert len({w.fingerprint() for w in [base, *query_time]}) == 6  # the file differs
    assert AggregationWeights(np.ones((2, 2))).tree_fingerprint() != base.tree_fingerprint()
