"""The cuda path against the CPU: encoding speed and whether the trees are the same.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python bench/gpu.py [--docs D.jsonl]   # ContractNLI dev
    HF_HUB_OFFLINE=1 PYTHONPATH=. python bench/gpu.py --spans corpus.json   # chunked elsewhere

Encodes the documents (trees and vectors, `Encoder.encode_documents`, the trained
weights) on cuda in float32 (the default), on cuda under mixed precision (bf16 or fp16
autocast, `encoding.mixed_precision`) and on the CPU (every core), and prints each way's
characters per second, its speed against the CPU and against float32 on cuda, and how many
documents keep the CPU's tree merges, relation pairs and top-5 leaves for three questions;
then float32 on cuda with every chunk tokenized twice, as before 0.11.2 (the reference of
its chunk-token reuse). `--spans` reads [[text, [[start, end], ...]], ...] instead of
chunking (a machine without spaCy). Needs a CUDA device; docs/results.md, "The cuda path
on a GPU".
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
BATCH_DOCS = 1000  # the flow's `pipeline.batch_docs`
QUESTIONS = ["confidential information disclosure", "termination notice period",
             "river survey field notes"]


def documents(args) -> list[tuple[str, list[tuple[int, int]]]]:
    if args.spans:
        return [(t, [tuple(s) for s in sp]) for t, sp in json.loads(Path(args.spans).read_text())]
    from sproutrag.ingest.chunking import chunk_text

    texts = [json.loads(line)["text"] for line in open(args.docs, encoding="utf-8")]
    return [(t, [tuple(s) for s in chunk_text(t, sentences_per_chunk=2)]) for t in texts]


def timed(encoder, docs, rounds: int) -> tuple[float, list]:
    """The best of ROUNDS passes over DOCS (after a warm-up), and the last output."""
    import torch

    encoder.encode_documents(docs[:2])
    best, out = float("inf"), None
    for _ in range(rounds):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = encoder.encode_documents(docs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default=str(ROOT.parent / "shared" / "data" / "contractnli" /
                                          "dev.docs.jsonl"), help="{doc_id, text} lines")
    ap.add_argument("--spans", help="JSON [[text, [[start, end], ...]], ...] (no chunking)")
    ap.add_argument("--repeat", type=int, default=10,
                    help="the documents this many times over for the cuda timings")
    ap.add_argument("--growth", type=int, nargs="+", metavar="R",
                    help="only: float32 on cuda at each of these repeats (e.g. 20 200: about "
                         "10^4 and 10^5 short documents), in the flow's batches of "
                         f"{BATCH_DOCS} documents, against its references")
    args = ap.parse_args(argv)
    import torch

    from sproutrag.encoder.encoder import Encoder
    from sproutrag.encoder.weights import load_default_weights
    from tests.sproutrag.encoder.test_attention import _merges, _top5_leaves

    if not torch.cuda.is_available():
        raise SystemExit("bench/gpu.py needs a CUDA device")
    docs = documents(args)
    if args.growth:
        return growth(docs, args.growth)
    chars = sum(len(t) for t, _ in docs)
    weights = load_default_weights(None)
    print(f"{torch.cuda.get_device_name(0)}; {len(docs)} documents, {chars:,} characters, "
          f"{sum(len(s) for _, s in docs):,} units", flush=True)
    cpu_s, cpu = timed(Encoder(device="cpu", weights=weights), docs, rounds=1)
    qv = Encoder(device="cpu").encode_texts(QUESTIONS)
    ways = {"cuda float32": Encoder(device="cuda", weights=weights),
            "cuda mixed precision": Encoder(device="cuda", weights=weights,
                                            mixed_precision=True)}
    seconds = {}
    for label, encoder in ways.items():
        _, out = timed(encoder, docs, rounds=1)
        seconds[label], _ = timed(encoder, docs * args.repeat, rounds=3)
        same = [sum(np.array_equal(f(a), f(b)) for a, b in zip(cpu, out, strict=True))
                for f in (_merges, lambda d: d.rel_i)]
        top5 = sum(_top5_leaves(a, q) == _top5_leaves(b, q)
                   for a, b in zip(cpu, out, strict=True) for q in qv)
        diff = max(float(np.abs(a.embeddings - b.embeddings).max()) for a, b in zip(cpu, out))
        rate = args.repeat * chars / seconds[label]
        print(f"{label} ({encoder.precision}): {rate / 1e6:.2f} M chars/s, "
              f"{cpu_s * args.repeat / seconds[label]:.1f}x the CPU, "
              f"{seconds['cuda float32'] / seconds[label]:.2f}x cuda float32; CPU's merges "
              f"{same[0]} of {len(docs)}, relation pairs {same[1]}, top-5 leaves {top5} of "
              f"{len(docs) * len(qv)}; max |vector difference| {diff:.5f}", flush=True)
    print(f"cpu ({torch.get_num_threads()} threads, float32): {chars / cpu_s / 1e6:.3f} M "
          "chars/s")
    twice(ways["cuda float32"], docs * args.repeat, seconds["cuda float32"], chars * args.repeat)
    return 0


def batch_seconds(encode, docs) -> list[float]:
    """Seconds of ENCODE over each of DOCS' batches of `BATCH_DOCS` documents."""
    import torch

    out = []
    for at in range(0, len(docs), BATCH_DOCS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        encode(docs[at : at + BATCH_DOCS])
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return out


def growth(docs, repeats: list[int]) -> int:
    """Float32 on cuda at each size: chunks tokenized once (now), twice (before 0.11.2)
    and a plain index's encoding (each chunk's text alone, no attention, no tree), in the
    same process; characters a second and the batches' median seconds, first 10% of the
    batches against the last 10%."""
    from sproutrag.encoder import encoder as module
    from sproutrag.encoder.encoder import Encoder
    from sproutrag.encoder.weights import load_default_weights

    encoder = Encoder(device="cuda", weights=load_default_weights(None))
    encoder.encode_documents(docs[:50])
    reuse = module.continuation_ids

    def tokenized_twice(part):
        module.continuation_ids = lambda tok: None
        try:
            return encoder.encode_documents(part)
        finally:
            module.continuation_ids = reuse

    ways = {"once (now)": encoder.encode_documents, "twice (before 0.11.2)": tokenized_twice,
            "plain (chunk texts alone)": lambda part: encoder.encode_texts(
                [t[a:b] for t, spans in part for a, b in spans])}
    for r in repeats:
        corpus = docs * r
        chars = sum(len(t) for t, _ in corpus)
        seconds = {label: batch_seconds(way, corpus) for label, way in ways.items()}
        tenth = max(1, len(seconds["once (now)"]) // 10)
        print(f"{len(corpus):,} documents, {chars:,} characters, "
              f"{len(seconds['once (now)'])} batches "
              f"(TOKENIZERS_PARALLELISM={os.environ.get('TOKENIZERS_PARALLELISM', 'unset')})")
        for label, secs in seconds.items():
            print(f"  {label}: {chars / sum(secs) / 1e6:.2f} M chars/s "
                  f"(once is {sum(secs) / sum(seconds['once (now)']):.2f}x as fast); batch median "
                  f"{np.median(secs[:tenth]):.3f} s first 10% -> "
                  f"{np.median(secs[-tenth:]):.3f} s last 10%", flush=True)
    return 0


def twice(encoder, docs, seconds: float, chars: int) -> None:
    """The reference before 0.11.2: every chunk tokenized again for its embedding (the
    reuse of its document's tokens off), on the same encoder and documents."""
    from sproutrag.encoder import encoder as module

    reuse = module.continuation_ids
    module.continuation_ids = lambda tok: None
    try:
        before, _ = timed(encoder, docs, rounds=3)
    finally:
        module.continuation_ids = reuse
    print(f"cuda float32, chunks tokenized twice (before 0.11.2): {chars / before / 1e6:.2f} M "
          f"chars/s; tokenized once: {before / seconds:.2f}x that "
          f"(TOKENIZERS_PARALLELISM={os.environ.get('TOKENIZERS_PARALLELISM', 'unset')})")


if __name__ == "__main__":
    raise SystemExit(main())
