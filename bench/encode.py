"""Encoder throughput: sentence-transformers (embeddings only) vs ours (embeddings + attention).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/encode.py [--chunks 1000] [--docs PATH]

Takes about --chunks 2-sentence chunks from whole documents of ContractNLI dev
(../shared/data/contractnli/dev.docs.jsonl relative to the repository, read at run time,
never copied) or, when that file is absent, of the repo's data/ folder, and measures
chunks/s and tokens/s in one process. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "contractnli" / "dev.docs.jsonl"
REPO_DATA = ROOT / "data"


def regex_chunks(text: str) -> list[tuple[int, int]]:
    sents = [(m.start(), m.end()) for m in re.finditer(r"\S[^.!?\n]*(?:[.!?]+|$)", text, re.M)]
    return [(sents[k][0], sents[min(k + 1, len(sents) - 1)][1]) for k in range(0, len(sents), 2)]


def chunk(text: str) -> list[tuple[int, int]]:
    try:
        from sproutrag.ingest.chunking import chunk_text

        return [tuple(s) for s in chunk_text(text, sentences_per_chunk=2, max_chunk_chars=2000)]
    except Exception:  # noqa: BLE001 - the chunker is someone else's module: fall back
        return regex_chunks(text)


def read_docs(path: Path | None) -> list[str]:
    if path is None:
        path = SHARED if SHARED.is_file() else None
    if path is not None:
        return [json.loads(line)["text"] for line in path.open(encoding="utf-8") if line.strip()]
    files = sorted(p for p in REPO_DATA.rglob("*") if p.suffix in {".txt", ".md"})
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    for p in sorted(REPO_DATA.rglob("*.jsonl")):
        texts += [json.loads(x).get("text", "") for x in p.open(encoding="utf-8") if x.strip()]
    return [t for t in texts if t.strip()]


def load_corpus(n_chunks: int, path: Path | None) -> list[tuple[str, list[tuple[int, int]]]]:
    docs, total = [], 0
    for text in read_docs(path):
        spans = chunk(text)
        if spans:
            docs.append((text, spans))
            total += len(spans)
        if total >= n_chunks:
            break
    return docs


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--docs", type=Path, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=1, help="best of N timings")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from sproutrag.encoder.encoder import DEFAULT_MODEL, Encoder, load_model, resolve_device

    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    docs = load_corpus(args.chunks, args.docs)
    texts = [t[s:e] for t, spans in docs for s, e in spans]
    tok, _ = load_model(DEFAULT_MODEL, device)
    n_tok = sum(len(x) for x in tok(texts, add_special_tokens=False)["input_ids"])
    print(
        f"device={device} threads={torch.get_num_threads()} docs={len(docs)} "
        f"chunks={len(texts)} chunk_tokens={n_tok} (mean {n_tok / len(texts):.1f})"
    )

    st = SentenceTransformer(DEFAULT_MODEL, device=device)
    configs = {
        "reference: ST.encode(batch_size=64), embeddings only": lambda: st.encode(
            texts, batch_size=64
        ),
    }
    ours = {
        "ours encode_texts only (no attention)": (Encoder(device=device), "texts"),
        "ours alone, stride 510 (default: 1-chunk overlap)": (Encoder(device=device), "docs"),
        "ours context, stride 510": (Encoder(device=device, embedding_mode="context"), "docs"),
        "ours alone, stride 256 (half overlap)": (
            Encoder(device=device, window_stride=256),
            "docs",
        ),
        "ours context, stride 256": (
            Encoder(device=device, embedding_mode="context", window_stride=256),
            "docs",
        ),
    }
    for name, (enc, what) in ours.items():
        configs[name] = (
            (lambda e=enc: e.encode_texts(texts))
            if what == "texts"
            else (lambda e=enc: e.encode_documents(docs))
        )
    # warm-up: model loads, kernels, allocator
    st.encode(texts[:64], batch_size=64)
    Encoder(device=device).encode_documents(docs[:1])
    rows = []
    for name, fn in configs.items():
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        secs = timed(fn, args.repeat)
        rows.append((name, secs))
    ref = rows[0][1]
    print(f"{'configuration':<54} {'s':>7} {'chunks/s':>9} {'tokens/s':>9} {'ours/ref':>8}")
    for name, secs in rows:
        print(
            f"{name:<54} {secs:7.2f} {len(texts) / secs:9.1f} {n_tok / secs:9.0f} {ref / secs:8.2f}"
        )


if __name__ == "__main__":
    main()
