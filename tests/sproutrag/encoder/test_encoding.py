from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from sproutrag.encoder.encoder import (
    DEFAULT_MODEL,
    PACKAGED_MODEL_ID,
    Encoder,
    block_attention,
    load_model,
    plan_windows,
    segment_matrix,
)
from sproutrag.encoder.weights import TrainedWeights

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SENTENCES = [
    "The Receiving Party shall hold the Confidential Information in strict confidence.",
    "It shall not disclose it to any third party without prior written consent.",
    "This Agreement is governed by the laws of the State of New York.",
    "Either party may terminate this Agreement upon thirty days' written notice.",
    "Obligations of confidentiality survive termination for five years.",
    "Nothing herein grants a licence under any patent, trademark or copyright.",
    "The Disclosing Party makes no warranty as to the accuracy of the information.",
    "All notices must be in writing and delivered by hand or registered mail.",
    "Upon request, the Recipient shall return or destroy all copies.",
    "No failure to exercise any right operates as a waiver of it.",
]


def make_doc(n_chunks: int, *, gap: str = " ", seed: int = 0) -> tuple[str, list[tuple[int, int]]]:
    """A document of 2-sentence chunks separated by `gap` (text outside every chunk)."""
    rng = np.random.default_rng(seed)
    text, spans = "", []
    for k in range(n_chunks):
        a, b = rng.choice(len(SENTENCES), 2, replace=False)
        chunk = f"{SENTENCES[a]} {SENTENCES[b]}"
        if k:
            text += gap
        spans.append((len(text), len(text) + len(chunk)))
        text += chunk
    return text, spans


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(device="cpu")


# -- pure functions: no model --------------------------------------------------------


def test_import_is_light():
    code = "import sys, sproutrag.encoder.encoder; assert 'torch' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("seed", range(30))
def test_plan_windows_cover_adjacent_pairs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    lengths = rng.integers(0, 200, n)
    lengths[rng.random(n) < 0.1] = 510  # some chunks fill a window alone
    budget, stride = 510, int(rng.integers(1, 510))
    windows = plan_windows(lengths.tolist(), budget, stride)
    assert windows[0][0] == 0 and windows[-1][1] == n
    starts = [a for a, _ in windows]
    assert starts == sorted(set(starts))  # strictly increasing: progress
    for a, b in windows:
        assert b > a and (b - a == 1 or lengths[a:b].sum() <= budget)
    covered = {(k, k + 1) for a, b in windows for k in range(a, b - 1)}
    for k in range(n - 1):
        if lengths[k] + lengths[k + 1] <= budget:
            assert (k, k + 1) in covered
    assert plan_windows([], budget, stride) == []


def test_block_attention_matches_loops():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    lens = [np.array([3, 0, 2]), np.array([1, 4])]
    seg = torch.from_numpy(segment_matrix(lens, 9, 3))
    attn = torch.from_numpy(rng.random((2, 4, 9, 9)).astype(np.float32))
    got = block_attention(attn, seg).numpy()
    for b, ln in enumerate(lens):
        bounds = np.concatenate([[1], 1 + np.cumsum(ln)])
        for h in range(4):
            for i in range(len(ln)):
                for j in range(len(ln)):
                    if ln[i] and ln[j]:
                        rows = slice(bounds[i], bounds[i + 1])
                        cols = slice(bounds[j], bounds[j + 1])
                        want = attn[b, h, rows, cols].mean().item()
                        assert got[b, h, i, j] == pytest.approx(want, rel=1e-5)


def test_encoder_rejects_bad_settings():
    with pytest.raises(ValueError, match="embedding_mode"):
        Encoder(embedding_mode="both")
    with pytest.raises(ValueError, match="window_stride"):
        Encoder(window_tokens=128, window_stride=200)


def test_packaged_model_id_is_stable():
    assert Encoder().model_id == PACKAGED_MODEL_ID
    assert Encoder(DEFAULT_MODEL).model_id == PACKAGED_MODEL_ID
    assert Encoder(PACKAGED_MODEL_ID).model_id == PACKAGED_MODEL_ID


# -- the real model --------------------------------------------------------------------


def reference_vectors(texts: list[str]) -> np.ndarray:
    """Unbatched transformers forward + masked mean pool + L2 norm."""
    import torch

    tok, net = load_model(DEFAULT_MODEL, "cpu")
    out = []
    with torch.inference_mode():
        for t in texts:
            enc = tok(t, return_tensors="pt", truncation=True, max_length=256)
            h = net(**enc).last_hidden_state[0]
            v = h.mean(0)
            out.append((v / v.norm()).numpy())
    return np.stack(out)


@pytest.mark.model
def test_encode_texts_batching_is_invariant(encoder):
    texts = [" ".join(SENTENCES[: k % 7 + 1]) for k in range(23)] + ["short", ""]
    full = encoder.encode_texts(texts)
    assert full.shape == (25, 384) and full.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(full, axis=1), 1, atol=1e-5)
    for bs in (1, 5, 17):
        np.testing.assert_allclose(encoder.encode_texts(texts, batch_size=bs), full, atol=1e-5)
    assert encoder.encode_texts([]).shape == (0, 384)


@pytest.mark.model
def test_encode_texts_matches_direct_forward(encoder):
    texts = SENTENCES[:3] + [" ".join(SENTENCES * 5)]  # the last one is truncated at 256
    np.testing.assert_allclose(encoder.encode_texts(texts), reference_vectors(texts), atol=1e-5)


@pytest.mark.model
def test_known_cosine(encoder):
    a, b = encoder.encode_texts(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(a @ b) == pytest.approx(0.755, abs=0.002)
    assert encoder.dim == 384 and (encoder.n_layers, encoder.n_heads) == (6, 12)


def oracle(text: str, spans: list[tuple[int, int]], mix: np.ndarray):
    """One forward over the whole (short) document; pool attention with loops."""
    import torch

    tok, net = load_model(DEFAULT_MODEL, "cpu")
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, owner = [tok.cls_token_id], [None]
    for t, (s, _) in zip(enc["input_ids"], enc["offset_mapping"], strict=True):
        k = next((c for c, (a, b) in enumerate(spans) if a <= s < b), None)
        if k is not None:
            ids.append(t)
            owner.append(k)
    ids.append(tok.sep_token_id)
    owner.append(None)
    with torch.inference_mode():
        out = net(input_ids=torch.tensor([ids]), output_attentions=True)
    att = sum(
        mix[layer, h] * out.attentions[layer][0, h].numpy() for layer in range(6) for h in range(12)
    )
    pos = [[p for p, k in enumerate(owner) if k == c] for c in range(len(spans))]
    rel = {}
    for i in range(len(spans)):
        for j in range(i + 1, len(spans)):
            aij = att[np.ix_(pos[i], pos[j])].mean()
            aji = att[np.ix_(pos[j], pos[i])].mean()
            rel[(i, j)] = (aij + aji) / 2
    states = out.last_hidden_state[0].numpy()
    ctx = np.stack([states[p].mean(0) for p in pos])
    return rel, ctx / np.linalg.norm(ctx, axis=1, keepdims=True)


@pytest.mark.model
@pytest.mark.parametrize("mode", ["alone", "context"])
def test_short_document_equals_unwindowed_oracle(mode):
    text, spans = make_doc(5, gap="\n### note ###\n", seed=3)  # gaps: tokens outside chunks
    rng = np.random.default_rng(0)
    weights = TrainedWeights(rng.normal(size=(6, 12)).astype(np.float32))
    enc = Encoder(device="cpu", embedding_mode=mode, weights=weights)
    got = enc.encode_document(text, spans)
    rel, ctx = oracle(text, spans, weights.mix())
    assert got.n_windows == 1
    assert list(zip(got.rel_i.tolist(), got.rel_j.tolist(), strict=True)) == sorted(rel)
    np.testing.assert_allclose(got.rel_m, [rel[k] for k in sorted(rel)], rtol=1e-4, atol=1e-7)
    if mode == "context":
        np.testing.assert_allclose(got.embeddings, ctx, atol=1e-5)
    else:
        texts = [text[s:e] for s, e in spans]
        np.testing.assert_allclose(got.embeddings, reference_vectors(texts), atol=1e-5)
    # the per-(layer, head) blocks aggregate to the same relations
    (wb,) = enc.window_blocks(text, spans)
    assert wb.blocks.shape == (72, 5, 5)
    agg = np.tensordot(weights.mix().reshape(-1), wb.blocks, axes=1)
    sym = (agg + agg.T) / 2
    np.testing.assert_allclose(sym[got.rel_i, got.rel_j], got.rel_m, rtol=1e-4)


@pytest.mark.model
def test_long_document_relations_are_local():
    enc = Encoder(device="cpu", window_tokens=128, window_stride=64)
    text, spans = make_doc(24, seed=5)
    got = enc.encode_document(text, spans)
    tok, _ = load_model(DEFAULT_MODEL, "cpu")
    lens = np.array([len(tok(text[s:e], add_special_tokens=False)["input_ids"]) for s, e in spans])
    assert got.n_windows >= 4 and got.n_tokens == lens.sum()
    i, j, m = got.rel_i, got.rel_j, got.rel_m
    assert i.dtype == j.dtype == np.int32 and m.dtype == np.float32
    assert np.all(i < j) and np.all(np.isfinite(m)) and np.all(m > 0)
    keys = i.astype(np.int64) * len(spans) + j
    assert np.all(np.diff(keys) > 0)  # sorted by (i, j), no duplicates
    for a, b in zip(i, j, strict=True):  # a pair shares a window: chunks a..b fit in it
        assert lens[a : b + 1].sum() <= 126
    pairs = set(zip(i.tolist(), j.tolist(), strict=True))
    assert all((k, k + 1) in pairs for k in range(len(spans) - 1))
    assert len(pairs) < len(spans) * (len(spans) - 1) // 2  # sparse: far pairs absent
    np.testing.assert_allclose(np.linalg.norm(got.embeddings, axis=1), 1, atol=1e-5)


@pytest.mark.model
@pytest.mark.parametrize("mode", ["alone", "context"])
def test_encode_documents_equals_one_by_one(mode):
    enc = Encoder(device="cpu", window_tokens=128, window_stride=64, embedding_mode=mode)
    docs = [make_doc(n, seed=n) for n in (7, 1, 12)]
    docs.insert(1, ("no chunks here", []))  # between documents that have chunks
    batched = enc.encode_documents(docs)
    assert len(batched) == len(docs)
    for (text, spans), got in zip(docs, batched, strict=True):
        want = enc.encode_document(text, spans)
        assert got.embeddings.shape == (len(spans), 384)
        np.testing.assert_allclose(got.embeddings, want.embeddings, atol=1e-5)
        np.testing.assert_array_equal(got.rel_i, want.rel_i)
        np.testing.assert_array_equal(got.rel_j, want.rel_j)
        np.testing.assert_allclose(got.rel_m, want.rel_m, rtol=1e-4, atol=1e-7)
        assert (got.n_windows, got.n_tokens) == (want.n_windows, want.n_tokens)
    one, empty = batched[2], batched[1]
    assert one.embeddings.shape == (1, 384) and len(one.rel_i) == 0
    assert empty.embeddings.shape == (0, 384) and empty.rel_m.shape == (0,)
    assert empty.n_windows == 0


@pytest.mark.model
def test_encode_documents_reads_the_model_once_not_per_document(monkeypatch):
    """The model folder's content hash (stat, list and hash of its files) is taken per call,
    not per document: per document it was a third of a GPU's time on short documents."""
    import sproutrag.encoder.identity as identity

    enc = Encoder(device="cpu")
    enc.encode_documents([make_doc(2, seed=1)])  # loaded
    real, calls = identity.model_sha256, []
    monkeypatch.setattr(identity, "model_sha256", lambda m: calls.append(m) or real(m))
    enc.encode_documents([make_doc(2, seed=1)])
    one = len(calls)
    calls.clear()
    enc.encode_documents([make_doc(3, seed=n) for n in range(40)])
    assert 1 <= len(calls) == one


def _edge_cases(seed: int) -> tuple[str, list[tuple[int, int]]]:
    """A document of awkward words (accents, CJK, a zero-width space inside a word, a
    word over WordPiece's 100 characters, a control character) cut at random places,
    mid-word included, into trimmed spans."""
    rng = np.random.default_rng(seed)
    words = ["naïve", "café", "Ünïcödé\u0301", "北京是中国的首都。", "abc\u200bdef", "x" * 120,
             "bell\x07", "e.g.the", "don't", "(a)", "antidisestablishment", "agreement."]
    text = " ".join(rng.choice(words + SENTENCES, size=40))
    cuts = np.sort(rng.choice(np.arange(1, len(text)), size=12, replace=False)).tolist()
    spans, a = [], 0
    for c in [*cuts, len(text)]:
        s, e = a, c
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
        a = c
    return text, spans


@pytest.mark.model
def test_chunks_own_tokens_are_their_texts_tokens(encoder):
    """A chunk whose tokens in its document are taken for its text's own (not tokenized
    again) has exactly the tokens of its text alone, and the embeddings are the same
    as with every chunk tokenized alone."""
    import sproutrag.encoder.encoder as encoder_module

    docs = [_edge_cases(seed) for seed in range(12)] + [make_doc(6, seed=3)]
    tok, _ = encoder._load()
    limit = encoder.chunk_max_tokens - 2
    own = 0
    for (text, spans), plan in zip(docs, encoder._plans(docs), strict=True):
        for k, (s, e) in enumerate(spans):
            if plan.own_tokens[k]:
                own += 1
                alone = tok([text[s:e]], add_special_tokens=False, truncation=True,
                            max_length=limit)["input_ids"][0]
                assert plan.chunk_ids[k][:limit].tolist() == alone, text[s:e]
    assert 0 < own < sum(len(sp) for _, sp in docs)  # mid-word cuts are tokenized alone
    reused = encoder.encode_documents(docs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoder_module, "continuation_ids", lambda tok: None)
        alone = encoder.encode_documents(docs)
    for a, b in zip(reused, alone, strict=True):
        np.testing.assert_array_equal(a.embeddings, b.embeddings)
        np.testing.assert_array_equal(a.rel_m, b.rel_m)


@pytest.mark.model
def test_modes_and_weights_change_results():
    text, spans = make_doc(4, seed=9)
    alone = Encoder(device="cpu").encode_document(text, spans)
    context = Encoder(device="cpu", embedding_mode="context").encode_document(text, spans)
    assert not np.allclose(alone.embeddings, context.embeddings, atol=1e-3)
    np.testing.assert_allclose(alone.rel_m, context.rel_m, rtol=1e-5)  # same attention
    alpha = np.zeros((6, 12), np.float32)
    alpha[5] = 5.0  # the last layer dominates
    skewed = Encoder(device="cpu", weights=TrainedWeights(alpha)).encode_document(text, spans)
    np.testing.assert_array_equal(skewed.rel_i, alone.rel_i)
    assert not np.allclose(skewed.rel_m, alone.rel_m, rtol=1e-2)


@pytest.mark.model
@pytest.mark.parametrize("mode", ["alone", "context"])
def test_chunk_of_2000_tokens(mode):
    big = " ".join(["confidentiality"] * 2000)
    text = f"{SENTENCES[0]} {big} {SENTENCES[1]}"
    spans = [(0, len(SENTENCES[0])), (len(SENTENCES[0]) + 1, len(SENTENCES[0]) + 1 + len(big))]
    spans.append((spans[1][1] + 1, len(text)))
    got = Encoder(device="cpu", embedding_mode=mode).encode_document(text, spans)
    assert got.embeddings.shape == (3, 384) and np.all(np.isfinite(got.embeddings))
    assert got.n_windows == 3  # the long chunk fills a window alone: no relation to it
    assert len(got.rel_i) == 0 or 1 not in set(got.rel_i.tolist() + got.rel_j.tolist())


@pytest.mark.model
def test_bad_spans_raise(encoder):
    with pytest.raises(ValueError, match="sorted"):
        encoder.encode_document("abc def", [(4, 7), (0, 3)])


def test_float32_unless_mixed_precision_on_cuda():
    """float32 everywhere by default (cuda included: the same trees as a CPU's); mixed
    precision only on cuda and only when asked for (no torch needed to say so)."""
    import contextlib

    from sproutrag.encoder.loading import autocast, precision

    for device in ("cpu", "mps", "cuda", "cuda:1"):
        assert precision(device) == "float32"
        assert isinstance(autocast(device), contextlib.nullcontext)
    assert precision("cpu", mixed=True) == "float32"
    assert isinstance(autocast("mps", mixed=True), contextlib.nullcontext)
    assert Encoder(device="cpu", mixed_precision=True).precision == "float32"
    assert Encoder(device="cuda").precision == "float32"  # no model or GPU is touched
