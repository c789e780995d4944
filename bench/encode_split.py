"""Where the CPU encoder's time goes on many small documents, against sentence-transformers.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/encode_split.py [--docs 2000]

The corpus is `bench/scale.py`'s: N generated documents of 300-500 characters, chunked
by the index's chunker. In one process, alternating, --repeat times:

1. sentence-transformers' `encode` of the chunks (batch 64): the plain index's encoder,
   run on the model thread too (a process whose torch runs on two threads holds two
   OpenMP teams, and on a small machine both then run slower: the module's docstring);
2. `Encoder.encode_documents` of the documents, called directly (what the flow's encode
   task calls), and its two passes timed apart: the relations pass over each document's
   windows (only the layers the trained mix weighs) and the chunks embedded alone;
3. the same call made from a new thread each time, as the thread runner's encode tasks
   make it (the forward passes run on the process's model thread either way:
   `sproutrag.encoder.model_thread`; before it, this row was 1.2-1.3x the direct one).

Prints seconds and the ratios. The flow's own encode stage (the same call inside a
Prefect task, beside the other stages) is `bench/scale.py --docs N`'s "encode" timing.
Not a test.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from scale import make_docs  # noqa: E402


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    from sentence_transformers import SentenceTransformer
    from sproutrag.schemas.settings import ChunkingSettings, load_settings

    from sproutrag.encoder.encoder import DEFAULT_MODEL
    from sproutrag.encoder.factory import shared_encoder
    from sproutrag.encoder.model_thread import on_model_thread
    from sproutrag.encoder.windows import cut_windows
    from sproutrag.ingest.chunking import chunk_text

    cfg = ChunkingSettings().model_dump()
    pairs = [(d["text"], chunk_text(d["text"], **cfg)) for d in make_docs(args.docs)]
    texts = [text[s:e] for text, spans in pairs for s, e in spans]
    shape = collections.Counter(len(spans) for _, spans in pairs)
    print(f"{len(pairs):,} documents, {len(texts):,} chunks; chunks per document "
          f"{dict(sorted(shape.items()))}")
    enc = shared_encoder(load_settings())
    enc.encode_texts(["warm up"])
    st = on_model_thread(SentenceTransformer, DEFAULT_MODEL, device="cpu")
    on_model_thread(st.encode, ["warm up"])

    def passes() -> tuple[float, float]:
        plans = enc._plans(pairs)
        windows = timed(lambda: list(enc._run_windows(cut_windows(plans))))
        none = [None] * len(plans)
        alone = timed(lambda: enc._embeddings(pairs, plans, none, none))
        return windows, alone

    rows = collections.defaultdict(list)
    for _ in range(args.repeat):
        rows["plain"].append(timed(lambda: on_model_thread(
            st.encode, texts, batch_size=64, normalize_embeddings=True)))
        rows["ours"].append(timed(lambda: enc.encode_documents(pairs)))
        with ThreadPoolExecutor(1) as task_thread:
            rows["ours, from a task thread"].append(
                timed(lambda: task_thread.submit(enc.encode_documents, pairs).result()))
        windows, alone = passes()
        rows["relations pass"].append(windows)
        rows["chunks alone"].append(alone)
    plain = statistics.median(rows["plain"])
    for name, seconds in rows.items():
        med = statistics.median(seconds)
        print(f"{name:>16}: median {med:7.2f} s of {', '.join(f'{s:.2f}' for s in seconds)}; "
              f"plain / this {plain / med:5.2f}")


if __name__ == "__main__":
    main()
