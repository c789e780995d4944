"""Another model than the packaged all-MiniLM-L6-v2 (`encoding.model`): its attention is
read whatever its architecture returns to a hook, the packaged weights give way to
uniform ones when the model's shape differs, and a weights file of another shape is
refused naming both. The models here are small random networks saved as real model
folders (the packaged tokenizer, safetensors weights)."""

from __future__ import annotations

import logging
import os
import shutil

import numpy as np
import pytest
import torch

from sproutrag.encoder import attention
from sproutrag.encoder.encoder import DEFAULT_MODEL, Encoder
from sproutrag.encoder.weights import (
    PACKAGED_WEIGHTS,
    TrainedWeights,
    WeightsMismatchError,
    for_model,
    load_default_weights,
)
from sproutrag.encoder.windows import segment_matrix
from tests.helpers import run_cli


def _save(net, folder):
    net.save_pretrained(folder, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                 "special_tokens_map.json"):
        if os.path.exists(os.path.join(DEFAULT_MODEL, name)):
            shutil.copy(os.path.join(DEFAULT_MODEL, name), folder / name)
    return folder


@pytest.fixture(scope="module")
def small_bert(tmp_path_factory):
    """A 2-layer, 2-head BERT with the packaged tokenizer's vocabulary."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=512)
    return _save(BertModel(config).eval(), tmp_path_factory.mktemp("bert"))


def _small_mpnet():
    from transformers import MPNetConfig, MPNetModel

    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=30527, hidden_size=32, num_hidden_layers=3,
                         num_attention_heads=4, intermediate_size=64)
    return MPNetModel(config, add_pooling_layer=False).eval()


def _expected_blocks(net, ids, valid, seg, mix):
    """The token attention mixed by MIX and reduced to chunk blocks, from the model's
    own `output_attentions` (every layer held at once)."""
    with torch.no_grad():
        out = net(input_ids=ids, attention_mask=valid.long(), output_attentions=True)
    tok = sum(torch.einsum("bhst,h->bst", a.float(), mix[li])
              for li, a in enumerate(out.attentions))
    return attention.block_attention(tok.unsqueeze(1), seg)[:, 0]


@pytest.mark.parametrize("architecture", ["mpnet", "bert"])
def test_the_reference_forward_reads_attention_of_any_architecture(architecture, small_bert):
    # MPNet's attention modules return their probabilities only when asked: the hook finds
    # none, and the forward is run again asking for them (remembered for the class).
    if architecture == "mpnet":
        net = _small_mpnet()
    else:
        from transformers import AutoModel

        net = AutoModel.from_pretrained(small_bert, attn_implementation="eager").eval()
    n_layers, n_heads = net.config.num_hidden_layers, net.config.num_attention_heads
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 1012, 2009, 2573, 1012, 102],
                        [101, 7592, 2088, 1012, 2307, 102, 0, 0, 0, 0]])
    valid = ids != 0
    lens = [np.array([5, 3]), np.array([3, 1])]
    seg = torch.from_numpy(segment_matrix(lens, ids.shape[1], 2))
    mix = torch.softmax(torch.randn(n_layers * n_heads), 0).reshape(n_layers, n_heads)
    want = _expected_blocks(net, ids, valid, seg, mix)
    for _ in range(2):  # the first call learns whether hooks see the probabilities
        with torch.no_grad():
            got = attention.reference_forward(net, ids, valid, seg, mix, states=True)
        torch.testing.assert_close(got["blocks"], want, rtol=1e-5, atol=1e-6)
        assert got["states"].shape == (2, 2, 32)
    assert attention._HOOKS[type(net).__name__] is (architecture == "bert")


def test_the_packaged_weights_give_way_to_uniform_ones_for_another_shape(small_bert, caplog):
    packaged = load_default_weights(None)
    with caplog.at_level(logging.WARNING, logger="sproutrag.encoder.weights"):
        enc = Encoder(str(small_bert), weights=packaged)
        weights = enc.weights
    assert weights.alpha.shape == (2, 2) and np.all(weights.alpha == 0)
    assert weights.search == packaged.search  # the learned search parameters stay
    assert weights.layers == packaged.layers == 1  # the same first layer
    assert str(small_bert) in weights.source
    assert "sproutrag train" in caplog.text and "2 layers x 2 heads" in caplog.text
    # the index of another model is real: chunks are embedded and related
    text = "The river rose overnight. The bridge was closed. Crews opened it at noon."
    (doc,) = enc.encode_documents([(text, [(0, 25), (26, 48), (49, len(text))])])
    assert doc.embeddings.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(doc.embeddings, axis=1), 1, rtol=1e-5)
    assert len(doc.rel_m) and np.all(np.isfinite(doc.rel_m))


def test_a_weights_file_of_another_shape_is_refused_naming_both(small_bert, tmp_path):
    path = TrainedWeights.uniform(6, 12).save(tmp_path / "weights.json")
    enc = Encoder(str(small_bert), weights=TrainedWeights.load(path))
    with pytest.raises(WeightsMismatchError) as err:
        enc.weights  # noqa: B018 - the property checks the shape
    message = str(err.value)
    assert str(path) in message and str(small_bert) in message
    assert "6 layers x 12 heads" in message and "2 layers x 2 heads" in message
    assert "encoding.weights" in message
    # the same shape passes through untouched; the packaged file is the one exception
    same = TrainedWeights.uniform(2, 2)
    assert for_model(same, "m", 2, 2) is same
    assert PACKAGED_WEIGHTS.is_file()


def test_the_cli_indexes_with_another_model_and_refuses_a_mismatched_weights_file(
        small_bert, tmp_path, prefect_harness):
    path = TrainedWeights.uniform(6, 12).save(tmp_path / "weights.json")
    config = tmp_path / "settings.yaml"
    config.write_text(f"encoding:\n  model: {small_bert}\n  weights: {path}\n",
                      encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("One sentence here. Another one there.", encoding="utf-8")
    done = run_cli("index", str(corpus), "--db", str(tmp_path / "db"), "--config", str(config))
    assert done.returncode == 2, done.stderr
    assert "encoding.weights" in done.stderr and "2 layers x 2 heads" in done.stderr
    assert not (tmp_path / "db").exists()
    # without the file: indexed with uniform weights, a warning saying how to train some
    config.write_text(f"encoding:\n  model: {small_bert}\n", encoding="utf-8")
    done = run_cli("index", str(corpus), "--db", str(tmp_path / "db"), "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "uniform attention weights" in done.stderr and "1 new" in done.stdout
    done = run_cli("query", "--db", str(tmp_path / "db"), "--config", str(config),
                   "where is another one?")
    assert done.returncode == 0, done.stderr
    assert "a.txt" in done.stdout


def test_evaluate_scores_another_model_with_its_own_tree_weights(small_bert, tmp_path,
                                                                  prefect_harness):
    # the variants took the packaged alpha (72 heads) to the model's features (4 heads)
    from tests.helpers import write_jsonl

    text = ("The river rose overnight. The bridge was closed at dawn. Crews opened it at "
            "noon. The mayor thanked them.")
    start = text.index("Crews")
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"doc_id": "r", "text": text}])
    queries = write_jsonl(tmp_path / "queries.jsonl", [
        {"qid": "q1", "query": "When was the bridge opened?", "doc_ids": ["r"],
         "gold": [{"doc_id": "r", "start": start, "end": start + 27}]}])
    config = tmp_path / "settings.yaml"
    config.write_text(f"encoding:\n  model: {small_bert}\n", encoding="utf-8")
    done = run_cli("evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                   "tree", "leaves", "--config", str(config), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
    assert "| tree (trained) |" in report and "| leaves" in report
    # weights of another shape given by --weights: refused before work, naming the flag
    wrong = TrainedWeights.uniform(6, 12).save(tmp_path / "minilm-shaped.json")
    done = run_cli("evaluate", "--docs", str(docs), "--queries", str(queries), "--modes",
                   "tree", "--config", str(config), "--weights", str(wrong), "--out",
                   str(tmp_path / "out2"))
    assert done.returncode == 2, done.stderr
    assert "--weights" in done.stderr and "6 layers x 12 heads" in done.stderr
    assert not (tmp_path / "out2").exists()


def test_windows_longer_than_the_model_holds_are_refused_before_work(tmp_path, prefect_harness):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=128)
    model = _save(BertModel(config).eval(), tmp_path / "short")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("One sentence here. Another one there.", encoding="utf-8")
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"encoding:\n  model: {model}\n", encoding="utf-8")
    done = run_cli("index", str(corpus), "--db", str(tmp_path / "db"), "--config",
                   str(settings))
    assert done.returncode == 2, done.stderr
    assert "encoding.window_tokens 512" in done.stderr and "128 positions" in done.stderr
    assert not (tmp_path / "db").exists()
    settings.write_text(f"encoding:\n  model: {model}\n  window_tokens: 128\n"
                        "  chunk_max_tokens: 64\n", encoding="utf-8")
    done = run_cli("index", str(corpus), "--db", str(tmp_path / "db"), "--config",
                   str(settings))
    assert done.returncode == 0, done.stderr
    assert "1 new" in done.stdout
