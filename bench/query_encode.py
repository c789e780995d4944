"""A question's embedding in numpy: on one BLAS thread (shipped) against numpy's default.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/query_encode.py [--rounds 3]
        [--load 0]

`sproutrag query` and a Retriever embed up to 8 questions with
`sproutrag.encoder.numpy_bert` (no torch import). Its products are small, and OpenBLAS's
threads spin while they wait for each other, so on a busy machine (an index run beside a
query service) a question could take 10x as long as on one thread. This script embeds
the sample corpus's questions one at a time, and in batches of 8, both ways in the same
process, alternating rounds: `NumpyBert.encode` (one BLAS thread) and the same forward
with numpy's default threads (`encode` with the limit's context made a no-op). `--load N`
starts N busy processes (pure-Python loops) beside it for the run, as an index run
would load the cores. Prints p50 and p95 per question and per batch, and the ratios
shipped / default. Not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "data" / "sample" / "queries.jsonl"


def _busy() -> None:
    while True:
        sum(i * i for i in range(10_000))


def _default_threads(model, texts: list[str], max_tokens: int) -> np.ndarray:
    """`NumpyBert.encode` without its one-thread limit (the reference): the same call
    with the limit's context replaced by one that does nothing."""
    from sproutrag.encoder import numpy_bert

    limit = numpy_bert.blas_on_one_thread
    numpy_bert.blas_on_one_thread = contextlib.nullcontext
    try:
        return model.encode(texts, max_tokens)
    finally:
        numpy_bert.blas_on_one_thread = limit


def _times(fn, groups: list[list[str]]) -> list[float]:
    out = []
    for g in groups:
        t = time.perf_counter()
        fn(g)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the run")
    args = ap.parse_args()

    from sproutrag.schemas.settings import Settings

    from sproutrag.encoder import numpy_bert
    from sproutrag.encoder.factory import shared_encoder

    encoder = shared_encoder(Settings())
    model = numpy_bert.load(encoder._path, encoder.model_sha256)
    max_tokens = encoder.chunk_max_tokens - 2
    questions = [json.loads(line)["query"] for line in QUESTIONS.read_text().splitlines()
                 if line.strip()]
    ones = [[q] for q in questions] * 3
    eights = [(questions * 8)[i: i + 8] for i in range(0, 8 * len(questions), 8)]
    shipped = np.asarray(model.encode(questions, max_tokens))
    reference = _default_threads(model, questions, max_tokens)
    assert np.allclose(shipped, reference, atol=1e-6), "the two ways disagree"
    workers = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for w in workers:
        w.start()
    got: dict[str, list[float]] = {}
    try:
        for _ in range(args.rounds):
            for name, fn in (("default threads", lambda g: _default_threads(model, g,
                                                                             max_tokens)),
                             ("one thread (shipped)", lambda g: model.encode(g, max_tokens))):
                got.setdefault(f"{name}, 1 question", []).extend(_times(fn, ones))
                got.setdefault(f"{name}, 8 questions", []).extend(_times(fn, eights))
    finally:
        for w in workers:
            w.terminate()
    print(f"{len(questions)} questions, {args.rounds} rounds, {args.load} busy processes")
    p50 = {}
    for name, t in got.items():
        p50[name] = statistics.median(t)
        print(f"  {name:34} p50 {p50[name] * 1e3:7.1f} ms  p95 "
              f"{np.percentile(t, 95) * 1e3:7.1f} ms")
    for size in ("1 question", "8 questions"):
        ratio = p50[f"one thread (shipped), {size}"] / p50[f"default threads, {size}"]
        print(f"  shipped / default, {size}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
