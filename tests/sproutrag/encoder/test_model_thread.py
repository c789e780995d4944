"""Every forward pass runs on the process's one model thread (sproutrag.encoder.model_thread)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sproutrag.encoder import attention
from sproutrag.encoder.encoder import Encoder
from sproutrag.encoder.model_thread import THREAD_NAME, on_model_thread, on_model_thread_now

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _where() -> tuple[str, int]:
    return threading.current_thread().name, threading.get_ident()


def test_calls_from_many_threads_run_on_one_thread():
    with ThreadPoolExecutor(4) as pool:
        seen = set(pool.map(lambda _: on_model_thread(_where), range(16)))
    seen.add(on_model_thread(_where))  # and from the main thread
    assert len(seen) == 1
    name, ident = seen.pop()
    assert name.startswith(THREAD_NAME) and ident != threading.get_ident()
    assert not on_model_thread_now()


def test_a_call_on_the_model_thread_runs_there_directly():
    # a nested call must not wait for the thread it runs on (it would wait forever)
    inner = on_model_thread(lambda: (on_model_thread_now(), on_model_thread(_where)))
    assert inner[0] is True and inner[1] == on_model_thread(_where)


def test_the_exception_reaches_the_caller_and_the_thread_goes_on():
    def fail():
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        on_model_thread(fail)
    assert on_model_thread(lambda: 2 + 3) == 5


def _child(queue) -> None:
    queue.put(on_model_thread(lambda: (os.getpid(), threading.current_thread().name)))
    queue.close()
    queue.join_thread()
    # a forked copy of this process (LanceDB's and Prefect's threads gone) must not run
    # their exit handlers: leave as soon as the answer is sent
    os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_starts_its_own_model_thread():
    on_model_thread(_where)  # the parent's thread exists before the fork
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    pid, name = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert pid == child.pid and name.startswith(THREAD_NAME)


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return Encoder(device="cpu")


def test_the_encoders_forward_passes_run_on_the_model_thread(encoder, monkeypatch):
    """Called from a task thread or the main thread, the kernels run on one thread and the
    results are the same."""
    threads: list[tuple[str, str]] = []

    def recorded(fn):
        def run(*args, **kwargs):
            threads.append((fn.__name__, threading.current_thread().name))
            return fn(*args, **kwargs)

        return run

    monkeypatch.setattr(attention, "embed_forward", recorded(attention.embed_forward))
    monkeypatch.setattr(attention, "window_forward", recorded(attention.window_forward))
    text = ("The Receiving Party shall keep it secret. It shall not disclose it. "
            "This Agreement is governed by New York law. Either party may end it.")
    spans = [(0, 68), (69, len(text))]
    here = encoder.encode_documents([(text, spans)])[0]
    texts = encoder.encode_texts(["a question about notice periods"])
    with ThreadPoolExecutor(2) as pool:
        there = pool.submit(encoder.encode_documents, [(text, spans)]).result()[0]
        texts_there = pool.submit(encoder.encode_texts, ["a question about notice periods"])
        texts_there = texts_there.result()
    assert {fn for fn, _ in threads} == {"embed_forward", "window_forward"}
    assert all(name.startswith(THREAD_NAME) for _, name in threads)
    np.testing.assert_allclose(here.embeddings, there.embeddings, atol=1e-6)
    np.testing.assert_array_equal(here.rel_i, there.rel_i)
    np.testing.assert_allclose(here.rel_m, there.rel_m, atol=1e-6)
    assert len(here.rel_m) == 1  # the two chunks share a window
    np.testing.assert_allclose(texts, texts_there, atol=1e-6)
