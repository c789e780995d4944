"""Encoder fine-tuning with the joint loss: a tiny real run lowers L_ret, saves a model."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.encoder.encoder import Encoder
from sproutrag.encoder.weights import TrainedWeights
from sproutrag.ingest.chunking import chunk_text
from sproutrag.learn.features import DocFeatures
from sproutrag.learn.finetune import finetune_encoder

pytestmark = pytest.mark.model

TEXT = (
    "The Supplier shall deliver the goods within thirty days. Delivery is made to the "
    "Buyer's warehouse in Leeds. The Buyer shall pay each invoice within sixty days. Late "
    "payments bear interest at four percent a year. This Agreement is governed by the "
    "laws of England. The courts of London have exclusive jurisdiction. Either party may "
    "terminate on ninety days' written notice. Confidential information stays secret for "
    "five years after termination."
)


def _doc():
    spans = np.asarray(chunk_text(TEXT, sentences_per_chunk=2), np.int64).reshape(-1, 2)
    n = len(spans)
    feats = DocFeatures("d", spans, np.zeros((n, 384), np.float32), np.zeros(0, np.int32),
                        np.zeros(0, np.int32), np.zeros((0, 72), np.float32))
    return {"d": {"text": TEXT, "features": feats}}, spans


def _gold(spans, *chunks):
    return [{"doc_id": "d", "start": int(spans[c, 0]), "end": int(spans[c, 1])}
            for c in chunks]


def test_tiny_finetune_lowers_the_retrieval_loss_and_saves_a_loadable_model(tmp_path):
    docs, spans = _doc()
    assert len(spans) == 4
    queries = [
        {"query": "When must invoices be paid?", "doc_ids": ["d"], "gold": _gold(spans, 1)},
        {"query": "Which law and courts apply?", "doc_ids": ["d"], "gold": _gold(spans, 2)},
        {"query": "How long is the notice period and how long is information kept secret?",
         "doc_ids": ["d"], "gold": _gold(spans, 2, 3)},
    ]
    base = Encoder()
    out = tmp_path / "encoder"
    info = finetune_encoder(
        base.model_path, docs, queries, out, mix=TrainedWeights.uniform().mix(),
        epochs=4, lr=1e-4, warmup=0.0, log=lambda *_: None,
    )
    hist = info["history"]
    assert len(hist) == 4 and hist[-1]["l_ret"] < hist[0]["l_ret"]
    assert hist[0]["attn_pairs"] == 1  # chunks 2..3 of the third query, one window
    assert np.isfinite(hist[0]["l_attn"]) and hist[0]["l_attn"] > 0
    tuned = base.with_model(str(out))
    assert tuned.model_id == str(out.resolve()) and tuned.dim == base.dim
    a = base.encode_texts(["When must invoices be paid?"])
    b = tuned.encode_texts(["When must invoices be paid?"])
    assert not np.allclose(a, b) and np.isclose(np.linalg.norm(b), 1.0, atol=1e-5)
