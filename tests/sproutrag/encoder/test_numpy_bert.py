"""Questions embedded without torch (`sproutrag.encoder.numpy_bert`): the same vectors as
the torch forward, chosen for a few questions only, and a query process that never
imports torch or transformers."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from sproutrag.encoder import encoder as encoder_module
from sproutrag.encoder import numpy_bert
from sproutrag.encoder.encoder import NUMPY_QUERIES, Encoder
from sproutrag.encoder.loading import DEFAULT_MODEL, load_config, model_loaded

TEXTS = [
    "When is payment due?",
    "How often is security training required for contractors and their employees?",
    "Café naïve résumé: ÜBER-große Straße, 東京 and an emoji 🙂",
    "",
    "   ",
    "word " * 400,  # past chunk_max_tokens: cut as encode_texts cuts it
    "The Receiving Party shall not disclose Confidential Information to any third party.",
]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(device="cpu")


def test_the_packaged_model_is_supported_and_other_folders_are_not(tmp_path):
    assert numpy_bert.supported(DEFAULT_MODEL)
    assert not numpy_bert.supported(str(tmp_path))  # no config.json
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta"}))
    assert not numpy_bert.supported(str(tmp_path))
    assert not numpy_bert.supported("sentence-transformers/all-MiniLM-L6-v2")  # a hub name


def test_numpy_vectors_equal_the_torch_forward(encoder):
    torch_vecs = encoder.encode_texts(TEXTS)
    numpy_vecs = numpy_bert.load(DEFAULT_MODEL).encode(TEXTS, encoder.chunk_max_tokens - 2)
    assert numpy_vecs.dtype == np.float32 and numpy_vecs.shape == torch_vecs.shape
    assert np.abs(numpy_vecs - torch_vecs).max() < 2e-6
    assert np.allclose(np.linalg.norm(numpy_vecs, axis=1), 1.0, atol=1e-6)
    one = numpy_bert.load(DEFAULT_MODEL).encode(TEXTS[:1], encoder.chunk_max_tokens - 2)
    assert np.abs(one[0] - numpy_vecs[0]).max() < 2e-6  # batched or alone: the same


def test_encode_queries_uses_numpy_for_a_few_questions_until_torch_holds_the_model(
        encoder, monkeypatch):
    calls = []
    real = numpy_bert.NumpyBert.encode

    def spy(self, texts, max_tokens):
        calls.append(len(texts))
        return real(self, texts, max_tokens)

    monkeypatch.setattr(numpy_bert.NumpyBert, "encode", spy)
    # a query process that has not loaded the model into torch
    monkeypatch.setattr(encoder_module, "model_loaded", lambda model: False)
    few = encoder.encode_queries(TEXTS[:NUMPY_QUERIES])
    assert calls == [min(len(TEXTS), NUMPY_QUERIES)]
    many = encoder.encode_queries(TEXTS * 2)  # more than NUMPY_QUERIES: torch
    assert calls == [min(len(TEXTS), NUMPY_QUERIES)]
    assert np.abs(few - many[: len(few)]).max() < 2e-6
    assert encoder.encode_queries([]).shape == (0, encoder.dim)
    # once torch holds the model (the batch above loaded it), torch encodes every question
    monkeypatch.setattr(encoder_module, "model_loaded", model_loaded)
    assert model_loaded(encoder.model_path)
    one = encoder.encode_queries(TEXTS[:1])
    assert calls == [min(len(TEXTS), NUMPY_QUERIES)]
    assert np.abs(one[0] - few[0]).max() < 2e-6


def test_the_config_is_read_without_transformers():
    code = ("import sys; from sproutrag.encoder.loading import DEFAULT_MODEL, load_config; "
            "c = load_config(DEFAULT_MODEL); "
            "print(c.hidden_size, c.num_hidden_layers, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["384", "6", "False"]
    assert load_config(DEFAULT_MODEL).num_attention_heads == 12


def test_a_query_process_never_imports_torch(sample_index):
    """`sproutrag query` answers one question on the database without importing torch
    or transformers (about 3 of a first query's seconds)."""
    db, _ = sample_index
    code = ("import sys, io, contextlib; from sproutrag.flows.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    code = main(['query', 'When is payment due?', '--db', {db!r}, '--k', '3'])\n"
            "print(code, 'torch' in sys.modules, 'transformers' in sys.modules, "
            "'Payment' in out.getvalue())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert out.stdout.split()[-4:] == ["0", "False", "False", "True"], out.stderr[-2000:]


def test_a_model_on_the_cpu_leaves_numpy_one_blas_thread(encoder):
    """Two thread pools on the same cores slow each other (torch's after numpy's
    products): once torch holds the model on the CPU, numpy's BLAS runs on one thread."""
    from threadpoolctl import threadpool_info

    encoder.encode_texts(TEXTS[:1])
    assert model_loaded(encoder.model_path)
    blas = [x for x in threadpool_info() if x["user_api"] == "blas"]
    assert blas and all(x["num_threads"] == 1 for x in blas)


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {x["num_threads"] for x in threadpool_info() if x["user_api"] == "blas"}


def test_a_question_is_embedded_on_one_blas_thread_and_the_limit_comes_back(monkeypatch):
    """The numpy forward runs BLAS on one thread (spinning threads on busy cores took a
    question 3x as long at the median, 50x at p95); the process's own limit comes back
    after it, also when several threads embed at once (the last one restores it), when
    another thread set a limit first (threadpoolctl would drop theirs) and for every BLAS
    loaded (scipy's beside numpy's)."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    pytest.importorskip("scipy.linalg")  # a second OpenBLAS, loaded after numpy's
    seen = []
    real = numpy_bert.NumpyBert.hidden

    def spy(self, ids, valid):
        seen.append(_blas_threads())
        return real(self, ids, valid)

    monkeypatch.setattr(numpy_bert.NumpyBert, "hidden", spy)
    model = numpy_bert.load(DEFAULT_MODEL)
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        model.encode(TEXTS[:2], 256)
        assert _blas_threads() == before
        with ThreadPoolExecutor(4) as pool:
            vectors = list(pool.map(lambda t: model.encode([t], 256), TEXTS[:4] * 3))
        assert _blas_threads() == before
    assert len(seen) == 13 and all(s == {1} for s in seen)
    assert np.abs(vectors[0] - vectors[4]).max() < 1e-6
