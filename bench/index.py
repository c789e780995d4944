"""Indexing throughput: `sproutrag index` vs a plain sentence-transformers + LanceDB index.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/index.py [--max-docs N] [--threads T]

One run indexes the same corpus up to four ways, each in its own process:

  (a) e2e:     `python -m sproutrag.flows.cli index CORPUS --db DB` (Prefect flow, chunking,
               encoding with relations, trees, LanceDB), the whole command timed;
  (b) plain:   the same chunks (sproutrag.ingest.chunking with the default settings) embedded by
               sentence-transformers' `encode` (the packaged model, no hub) and written to
               a LanceDB table (doc_id, idx, start, end, text, vector);
  (c) encoder: our `Encoder.encode_documents` on the same chunks (embeddings +
               relations), no Prefect, no storage;
  (d) embed:   our encoder, embeddings only, end to end: per batch of documents (the
               index's batch_docs) the same chunks embedded by `Encoder.encode_texts` (the
               chunk-alone pass the index uses, the same encoding settings), then the leaves
               written to LanceDB as in (b); no relations, no trees, no Prefect.

The corpus is ContractNLI dev (../shared/data/contractnli/dev.docs.jsonl relative to
the repo, read at run time) where present, else a generated corpus of >= 1,000,000
characters. For every way it prints chars/s over the process's wall time (start-up,
imports and model load included, as a user sees it), chars/s of the compute alone
(encode for (b), (c) and (d)) and the process's peak RSS (getrusage of the child; (a)'s
includes the CLI's temporary Prefect server child only if larger). Ratios: e2e / plain
(wall), encoder / sentence-transformers embedding-only (compute), and, when (a) and (d)
ran, the tree's share of end-to-end time, 1 - wall(embed) / wall(e2e) (relations, trees,
their storage and the orchestration), with (a)'s stages from its `runs` row and, when (c)
ran, the relations' share of the encoder's compute. With --weights FILE the e2e and
encoder ways run again with that weights file (say one trained with `sproutrag train
--layers 1`), and its tree share is printed against the same embeddings-only run. Not
a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "contractnli" / "dev.docs.jsonl"
WAYS = ("e2e", "plain", "encoder", "embed")


def generated_corpus(n_docs: int, doc_chars: int, seed: int = 0) -> list[dict]:
    """n_docs documents of doc_chars characters of shuffled sample-corpus sentences."""
    files = (ROOT / "data" / "sample").rglob("*.txt")
    text = " ".join(p.read_text(encoding="utf-8") for p in files)
    sentences = [s.strip() for s in re.split(r"(?<=[.;:])\s+", text) if len(s.strip()) > 20]
    rng, docs = random.Random(seed), []
    for d in range(n_docs):
        paras, size = [], 0
        while size < doc_chars:
            para = " ".join(rng.choice(sentences) for _ in range(rng.randint(2, 6)))
            paras.append(f"{len(paras) + 1}. {para}")
            size += len(paras[-1]) + 2
        docs.append({"doc_id": f"gen-{d:03d}", "text": "\n\n".join(paras)[:doc_chars]})
    return docs


def load_corpus(args: argparse.Namespace) -> tuple[list[dict], str]:
    if args.generate or not SHARED.is_file():
        n = args.generate or max(1, -(-1_000_000 // args.doc_chars))
        return generated_corpus(n, args.doc_chars), f"generated ({n} x {args.doc_chars:,} chars)"
    docs = [json.loads(x) for x in SHARED.open(encoding="utf-8") if x.strip()]
    docs = [{"doc_id": d["doc_id"], "text": d["text"]} for d in docs]
    return docs[: args.max_docs] if args.max_docs else docs, "ContractNLI dev"


def chunked(docs: list[dict]) -> list[tuple[str, list[tuple[int, int]]]]:
    from sproutrag.schemas.settings import ChunkingSettings

    from sproutrag.ingest.chunking import chunk_text

    cfg = ChunkingSettings()
    return [(d["text"], chunk_text(d["text"], **cfg.model_dump())) for d in docs]


# -- workers (one per process) ---------------------------------------------------------


def leaf_rows(docs: list[dict]) -> dict[str, list]:
    """The leaves of every document's chunks (`chunked`): doc_id, idx, start, end, text."""
    rows = {"doc_id": [], "idx": [], "start": [], "end": [], "text": []}
    for d, (text, spans) in zip(docs, chunked(docs), strict=True):
        for k, (s, e) in enumerate(spans):
            for col, v in zip(rows, (d["doc_id"], k, s, e, text[s:e]), strict=True):
                rows[col].append(v)
    return rows


def write_leaves(rows: dict[str, list], vecs, path: Path) -> None:
    """ROWS plus their vectors as one LanceDB table `chunks` at PATH."""
    import lancedb
    import pyarrow as pa

    table = pa.table({**rows, "vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vecs.ravel(), pa.float32()), vecs.shape[1])})
    lancedb.connect(str(path)).create_table("chunks", table)


def run_plain(docs: list[dict], work: Path) -> dict:
    from sentence_transformers import SentenceTransformer

    from sproutrag.encoder.encoder import DEFAULT_MODEL

    st = SentenceTransformer(DEFAULT_MODEL, device="cpu")
    st.encode(["warm up"])
    t0 = time.perf_counter()
    rows = leaf_rows(docs)
    t1 = time.perf_counter()
    vecs = st.encode(rows["text"], batch_size=64, normalize_embeddings=True)
    t2 = time.perf_counter()
    write_leaves(rows, vecs, work / "plain.lancedb")
    t3 = time.perf_counter()
    return {"chunk_s": t1 - t0, "compute_s": t2 - t1, "store_s": t3 - t2,
            "n_chunks": len(rows["text"])}


def run_embed(docs: list[dict], work: Path) -> dict:
    """An embeddings-only index: per batch of documents (as the index batches them) chunks
    and our chunk-alone pass (`encode_texts`, the index's embeddings); then LanceDB."""
    import numpy as np
    from sproutrag.schemas.settings import Settings

    from sproutrag.encoder.encoder import Encoder

    cfg = Settings()  # SPROUTRAG_ENCODING__* apply here as in the e2e way
    enc = Encoder(cfg.encoding.model, device="cpu", tokens_per_batch=cfg.encoding.tokens_per_batch,
                  chunk_max_tokens=cfg.encoding.chunk_max_tokens)
    enc.encode_texts(["Warm up. The model loads."])
    rows, vecs, chunk_s, compute_s = {}, [], 0.0, 0.0
    for k in range(0, len(docs), cfg.pipeline.batch_docs):
        t0 = time.perf_counter()
        part = leaf_rows(docs[k : k + cfg.pipeline.batch_docs])
        t1 = time.perf_counter()
        vecs.append(enc.encode_texts(part["text"]))
        chunk_s, compute_s = chunk_s + t1 - t0, compute_s + time.perf_counter() - t1
        for col, vals in part.items():
            rows.setdefault(col, []).extend(vals)
    t2 = time.perf_counter()
    write_leaves(rows, np.concatenate(vecs), work / "embed.lancedb")
    return {"chunk_s": chunk_s, "compute_s": compute_s, "store_s": time.perf_counter() - t2,
            "n_chunks": len(rows["text"])}


def run_encoder(docs: list[dict], work: Path) -> dict:
    from sproutrag.schemas.settings import Settings

    from sproutrag.encoder.encoder import Encoder
    from sproutrag.encoder.weights import load_default_weights

    cfg = Settings()  # SPROUTRAG_ENCODING__* apply here as in the e2e way
    e = cfg.encoding
    enc = Encoder(e.model, device="cpu", tokens_per_batch=e.tokens_per_batch,
                  window_tokens=e.window_tokens, window_stride=e.window_stride,
                  chunk_max_tokens=e.chunk_max_tokens, embedding_mode=e.embedding_mode,
                  weights=load_default_weights(e.weights))
    enc.encode_documents([("Warm up. The model loads.", [(0, 8), (9, 25)])])
    pieces = chunked(docs)
    embed = {"s": 0.0}
    encode_texts = enc.encode_texts

    def timed_texts(texts, **kw):  # the chunk-alone embedding pass, timed apart
        t = time.perf_counter()
        out = encode_texts(texts, **kw)
        embed["s"] += time.perf_counter() - t
        return out

    enc.encode_texts = timed_texts
    t0 = time.perf_counter()
    n_pairs, step = 0, cfg.pipeline.batch_docs
    for k in range(0, len(pieces), step):
        n_pairs += sum(len(r.rel_m) for r in enc.encode_documents(pieces[k : k + step]))
    total = time.perf_counter() - t0
    return {"compute_s": total, "embed_s": embed["s"], "relations_s": total - embed["s"],
            "n_chunks": sum(len(s) for _, s in pieces), "n_pairs": n_pairs}


def run_e2e(docs: list[dict], work: Path) -> dict:
    corpus = work / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sproutrag.flows.cli", "index", str(corpus),
                           "--db", str(work / "e2e.lancedb")], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"sproutrag index failed ({proc.returncode}): {proc.stderr[-2000:]}")
    total = time.perf_counter() - t0
    import lancedb

    runs = lancedb.connect(str(work / "e2e.lancedb")).open_table("runs").to_arrow()
    stages = json.loads(runs.column("timings_json")[-1].as_py())  # {"stage": seconds}
    return {"compute_s": total, **{f"{k}_s": v for k, v in stages.items()}}


def worker(way: str, args: argparse.Namespace) -> None:
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    docs, _ = load_corpus(args)
    with tempfile.TemporaryDirectory(prefix=f"bench-index-{way}-") as tmp:
        ways = {"e2e": run_e2e, "plain": run_plain, "encoder": run_encoder, "embed": run_embed}
        out = ways[way](docs, Path(tmp))
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out["peak_rss_mb"] = max(self_kb, child_kb) / 1024
    print("RESULT " + json.dumps(out))


# -- driver ----------------------------------------------------------------------------


def measure(way: str, args: argparse.Namespace, weights: str | None = None) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1",
               TOKENIZERS_PARALLELISM="true", SPROUTRAG_PIPELINE__PROGRESS="false",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    if weights:  # the e2e and encoder ways read it through Settings
        env["SPROUTRAG_ENCODING__WEIGHTS"] = str(Path(weights).resolve())
    cmd = [sys.executable, __file__, "--worker", way, "--threads", str(args.threads or 0),
           "--max-docs", str(args.max_docs or 0), "--generate", str(args.generate or 0),
           "--doc-chars", str(args.doc_chars)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{way} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return {**json.loads(lines[-1][7:]), "wall_s": wall}


def _row(way: str, r: dict, n_chars: int) -> str:
    compute = f"{n_chars / r['compute_s']:8.0f}" if not way.startswith("e2e") else f"{'':>8}"
    extra = {k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()
             if k not in ("wall_s", "compute_s", "peak_rss_mb")}
    return (f"{way:14s} wall {r['wall_s']:7.1f} s {n_chars / r['wall_s']:8.0f} chars/s | "
            f"compute {r['compute_s']:7.1f} s {compute} chars/s | peak RSS "
            f"{r['peak_rss_mb']:6.0f} MB | {json.dumps(extra) if extra else ''}")


def tree_share(res: dict, suffix: str = "") -> None:
    """The tree's share of end-to-end time, `1 - wall(embed) / wall(e2e)`, and what explains it:
    the e2e stages (from its `runs` row) and the relations' share of the encoder's compute."""
    e2e = res["e2e" + suffix]
    label = f"tree share of end-to-end time{suffix} = 1 - wall(embed) / wall(e2e{suffix}):"
    print(f"{label:62s} {1 - res['embed']['wall_s'] / e2e['wall_s']:.1%}")
    stages = {k[:-2]: v for k, v in e2e.items()
              if k.endswith("_s") and k not in ("compute_s", "wall_s")}
    print("  e2e stages (encode includes relations): "
          + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items()))
    if "encoder" + suffix in res:
        enc = res["encoder" + suffix]
        print(f"  relations share of encoder compute (relations_s / compute_s): "
              f"{enc['relations_s'] / enc['compute_s']:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-docs", type=int, default=None, help="first N documents only")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads in every way (default: torch's own)")
    ap.add_argument("--generate", type=int, default=None, metavar="N",
                    help="N generated documents instead of ContractNLI dev")
    ap.add_argument("--doc-chars", type=int, default=50_000, help="characters per generated doc")
    ap.add_argument("--ways", default=",".join(WAYS))
    ap.add_argument("--weights", metavar="FILE",
                    help="also run the e2e and encoder ways with this weights file (for "
                    "example one trained with `sproutrag train --layers K`) and print its "
                    "tree share next to the packaged weights'")
    ap.add_argument("--worker", choices=WAYS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args)
    docs, name = load_corpus(args)
    n_chars = sum(len(d["text"]) for d in docs)
    print(f"corpus: {name}, {len(docs)} documents, {n_chars:,} chars; threads: "
          f"{args.threads or 'torch default'}; cpus: {os.cpu_count()}", flush=True)
    res = {}
    for way in args.ways.split(","):
        res[way] = r = measure(way, args)
        print(_row(way, r, n_chars), flush=True)
    tag = f"[{Path(args.weights).parent.name or args.weights}]" if args.weights else ""
    for way in [w for w in args.ways.split(",") if w in ("e2e", "encoder")] if tag else []:
        res[way + tag] = r = measure(way, args, args.weights)
        print(_row(way + tag, r, n_chars), flush=True)
    if {"e2e", "plain"} <= res.keys():
        print("ratio e2e / plain index (wall, chars/s):              "
              f"{res['plain']['wall_s'] / res['e2e']['wall_s']:.2f}x  (target >= 0.5)")
    if {"e2e", "embed"} <= res.keys():
        tree_share(res)
    if tag and {"e2e" + tag, "embed"} <= res.keys():
        tree_share(res, tag)
    if {"encoder", "plain"} <= res.keys():
        print("ratio encoder / sentence-transformers encode (compute): "
              f"{res['plain']['compute_s'] / res['encoder']['compute_s']:.2f}x  (target >= 0.8)")


if __name__ == "__main__":
    main()
