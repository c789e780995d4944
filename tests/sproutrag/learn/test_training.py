from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sproutrag.encoder.weights import TrainedWeights
from sproutrag.errors import TrainingDataError
from sproutrag.learn.features import DocFeatures
from sproutrag.learn.losses import GoldPairs, attn_loss, collect_gold_pairs, gold_leaves, info_nce
from sproutrag.learn.training import train_alpha


def test_attn_loss_paper_on_hand_made_tensors():
    # Two heads, uniform alpha: w = (1/2, 1/2); pair relations per head.
    heads = torch.tensor([[0.2, 0.6], [0.1, 0.1]])
    alpha = torch.zeros(2)
    # M = (0.4, 0.1): loss = mean(-log 0.4, -log 0.1)
    want = (-math.log(0.4) - math.log(0.1)) / 2
    assert float(attn_loss(alpha, heads)) == pytest.approx(want, rel=1e-6)
    # All weight on head 1: M = (0.6, 0.1)
    alpha = torch.tensor([-50.0, 50.0])
    assert float(attn_loss(alpha, heads)) == pytest.approx(
        (-math.log(0.6) - math.log(0.1)) / 2, rel=1e-5
    )


def test_attn_loss_row_normalised():
    heads = torch.tensor([[0.2, 0.6]])
    rows = torch.tensor([[0.4, 2.4]])
    alpha = torch.zeros(2)
    # M = 0.4, row mass = 1.4
    assert float(attn_loss(alpha, heads, rows, "row")) == pytest.approx(-math.log(0.4 / 1.4))
    with pytest.raises(ValueError, match="attn loss"):
        attn_loss(alpha, heads, rows, "nope")


def test_info_nce_on_hand_made_tensors():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    hard = [torch.tensor([[0.6, 0.8]]), torch.zeros((0, 2))]
    tau = 0.5
    # query 0 logits: [1, 0, 0.6] / tau; query 1: [0, 1] / tau
    l0 = math.log(math.exp(2) + math.exp(0) + math.exp(1.2)) - 2
    l1 = math.log(math.exp(0) + math.exp(2)) - 2
    assert float(info_nce(q, pos, hard, tau)) == pytest.approx((l0 + l1) / 2, rel=1e-6)


def _features() -> dict[str, DocFeatures]:
    # 4 chunks of 10 chars; pairs (0,1) (1,2) (2,3) (0,2); two heads.
    spans = np.array([[0, 10], [10, 20], [20, 30], [30, 40]])
    i = np.array([0, 0, 1, 2], np.int32)
    j = np.array([1, 2, 2, 3], np.int32)
    heads = np.array([[0.30, 0.01], [0.02, 0.40], [0.30, 0.02], [0.30, 0.01]], np.float32)
    return {"d": DocFeatures("d", spans, np.eye(4, dtype=np.float32), i, j, heads)}


def test_gold_pairs_only_between_gold_chunks_sharing_a_window():
    feats = _features()
    assert list(gold_leaves(feats["d"], [(5, 8), (25, 26)])) == [0, 2]
    queries = [
        {"doc_ids": ["d"], "gold": [{"doc_id": "d", "start": 5, "end": 8},
                                    {"doc_id": "d", "start": 25, "end": 26}]},
        {"doc_ids": ["d"], "gold": [{"doc_id": "d", "start": 0, "end": 40}]},
    ]
    pairs = collect_gold_pairs(feats, queries)
    # query 0: pair (0, 2); query 1: all 4 stored pairs
    assert list(pairs.query) == [0, 1, 1, 1, 1]
    np.testing.assert_allclose(pairs.heads[0], [0.02, 0.40])
    # bad input, not a bug: the command line prints it as one line (exit 1)
    with pytest.raises(TrainingDataError, match="no gold pairs.*none of the 1 training"):
        collect_gold_pairs(feats, [{"doc_ids": ["d"], "gold": [
            {"doc_id": "d", "start": 0, "end": 5}]}])


def test_tiny_training_run_lowers_the_loss_and_moves_weight_to_the_gold_head():
    feats = _features()
    q = [{"doc_ids": ["d"], "gold": [{"doc_id": "d", "start": 5, "end": 8},
                                     {"doc_id": "d", "start": 25, "end": 26}]}]
    pairs = collect_gold_pairs(feats, q)
    alpha, hist = train_alpha(pairs, n_layers=1, n_heads=2, epochs=50, lr=0.05)
    assert hist[-1]["l_attn"] < hist[0]["l_attn"]
    w = TrainedWeights(alpha).mix().ravel()
    assert w[1] > w[0]  # head 1 relates the gold pair (0, 2)


def test_trained_weights_round_trip_and_change_the_index_fingerprint(tmp_path):
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.encoder import Encoder
    from sproutrag.ingest.index_identity import index_fingerprint
    from sproutrag.params import SearchParams

    alpha = np.random.default_rng(0).normal(size=(6, 12)).astype(np.float32)
    trained = TrainedWeights(alpha, SearchParams(threshold=0.35), trained_on="train.docs.jsonl")
    path = trained.save(tmp_path / "weights.json")
    back = TrainedWeights.load(path)
    assert back == trained and back.search.threshold == 0.35
    np.testing.assert_array_equal(back.alpha, trained.alpha)

    def index_fp(weights: TrainedWeights) -> str:
        settings = load_settings(None)
        return index_fingerprint(Encoder(weights=weights), chunking=settings.chunking,
                                 tree=settings.tree)

    assert index_fp(back) == index_fp(trained)
    assert index_fp(back) != index_fp(TrainedWeights.uniform())
    # the same alpha over fewer layers builds other trees: the index re-indexes once
    assert index_fp(TrainedWeights(alpha, trained.search, layers=1)) != index_fp(trained)
    # Through the settings path used by the index flow (encoding.weights = file).
    from sproutrag.tasks.database import index_fingerprint as settings_fp

    fp_file = settings_fp(load_settings(None, encoding={"weights": str(path)}))
    uniform = TrainedWeights.uniform().save(tmp_path / "uniform.json")
    fp_uniform = settings_fp(load_settings(None, encoding={"weights": str(uniform)}))
    assert fp_file != fp_uniform
    # A query-time parameter (delta, the search) never changes the index fingerprint.
    searched = TrainedWeights(alpha, SearchParams(lexical_weight=0.5, size_penalty=1.0,
                                                  seed_leaves=True))
    searched = searched.save(tmp_path / "searched.json")
    assert settings_fp(load_settings(None, encoding={"weights": str(searched)})) == fp_file


def test_training_with_layers_weighs_only_the_first_layers():
    """alpha over the heads of the first `layers` layers: the deeper rows come back 0 and
    weigh nothing, even where a deeper head relates the gold pair best."""
    rng = np.random.default_rng(0)
    heads = rng.uniform(0.01, 0.1, size=(40, 2 * 3)).astype(np.float32)
    heads[:, 4] = 0.9  # layer 1, head 1: the best head, out of reach with layers=1
    heads[:, 1] = 0.5  # layer 0, head 1: the best one within layer 0
    pairs = GoldPairs(heads, np.repeat(np.arange(8), 5), heads * 4)
    alpha, hist = train_alpha(pairs, n_layers=2, n_heads=3, layers=1, epochs=30, lr=0.05)
    assert alpha.shape == (2, 3) and not alpha[1].any()
    assert hist[-1]["l_attn"] < hist[0]["l_attn"]
    w = TrainedWeights(alpha, layers=1).mix()
    assert not w[1].any() and w[0].argmax() == 1
    full, _ = train_alpha(pairs, n_layers=2, n_heads=3, epochs=30, lr=0.05)
    assert TrainedWeights(full).mix().ravel().argmax() == 4
