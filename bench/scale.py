"""Indexing at scale: many small documents, the store's cost per batch, the database's
size, nightly re-runs and `sproutrag check`, against a plain sentence-transformers +
LanceDB index of the same corpus.

    .venv/bin/python bench/scale.py --docs 10000          # the whole pipeline
    .venv/bin/python bench/scale.py --store-only 1000000  # the store alone

`--docs N`: N generated documents of 300-500 characters (sample-corpus sentences in a
random order, with varying names and figures) in one JSONL file. Each phase runs in its
own process (its peak RSS is its own), the model loaded and the temporary Prefect server
started before the clock starts:

1. plain: the same chunks (the index's chunker) embedded by sentence-transformers'
   `encode` (batch 64) and written to one LanceDB table: the reference;
2. index: the `index-corpus` flow (chunk, encode with relations, trees, store, maintain);
   the store's seconds per batch are timed (`Store.write` + `Store.tidy`), first 10% of
   batches against the last 10%;
3. unchanged re-run, a re-run after a line inserted at the top (every other document's
   line number, its `source`, changes), and a re-run after changing 1% of the documents;
4. `sproutrag check` (`check_database`).

Prints chars/s of both indexes and their ratio (target >= 0.9), store seconds per batch
(last 10% / first 10%, target <= 1.3), peak RSS, database bytes / live bytes (the Arrow
bytes of the live rows of `documents` + `nodes`, target <= 1.5), versions per table.

`--store-only N`: N documents through `Store.write` alone (trees of 2-4 leaves built from
a pool of real chunk vectors computed once and reused), in batches as the flow cuts them,
tidied as the flow does; then an unchanged re-run of the flow over the matching JSONL
corpus (its plan compares hashes: no document is read twice), the same after a line
inserted at the top, and `sproutrag check`.
Targets at 10^6: re-run <= 60 s of flow and <= 2 GB, check <= 5 minutes, database <= 1.5x
live bytes, store seconds per batch flat. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
       "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "true",
       "SPROUTRAG_PIPELINE__PROGRESS": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
for _k, _v in ENV.items():
    os.environ.setdefault(_k, _v)

NAMES = ["Acme", "Borealis", "Cobalt", "Delta", "Everest", "Fjord", "Granite", "Harbor",
         "Iris", "Juniper", "Kestrel", "Lumen", "Meridian", "Nimbus", "Orchid", "Pioneer"]


def sentences() -> list[str]:
    text = " ".join(p.read_text(encoding="utf-8")
                    for p in sorted((ROOT / "data" / "sample").rglob("*.txt")))
    return [s.strip() for s in re.split(r"(?<=[.;:])\s+", text) if 40 < len(s.strip()) < 220]


def make_docs(n: int, seed: int = 0) -> list[dict]:
    """N documents of 300-500 characters: sentences with a varying party and figures."""
    pool, rng, docs = sentences(), random.Random(seed), []
    for k in range(n):
        want, parts = rng.randint(300, 500), []
        while sum(len(p) + 1 for p in parts) < want:
            s = rng.choice(pool).replace("Provider", rng.choice(NAMES))
            parts.append(re.sub(r"\d+", lambda _: str(rng.randint(2, 90)), s))
        docs.append({"doc_id": f"doc-{k:07d}", "text": " ".join(parts)[:want]})
    return docs


def write_jsonl(docs: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def live_bytes(db: str, names=("documents", "nodes")) -> int:
    """Arrow bytes of the live rows of the tables NAMES (read in batches)."""
    import lancedb

    conn, total = lancedb.connect(db), 0
    for name in names:
        for batch in conn.open_table(name).search().limit(None).to_batches():
            total += batch.nbytes
    return total


def disk_bytes(db: str, names=("documents", "nodes")) -> int:
    return sum(p.stat().st_size for name in names
               for p in (Path(db) / f"{name}.lance").rglob("*") if p.is_file())


def versions(db: str) -> dict[str, int]:
    import lancedb

    conn = lancedb.connect(db)
    return {n: len(conn.open_table(n).list_versions()) for n in ("documents", "nodes")}


# -- phases (each in its own process) --------------------------------------------------


def timed_store():
    """Wrap Store.write and Store.tidy: (seconds of each batch's store) list."""
    from sproutrag.storage.store import Store

    seconds: list[float] = []
    write, tidy = Store.write, Store.tidy

    def timed_write(self, *a, **kw):
        t0 = time.perf_counter()
        out = write(self, *a, **kw)
        seconds.append(time.perf_counter() - t0)
        return out

    def timed_tidy(self, *a, **kw):
        t0 = time.perf_counter()
        out = tidy(self, *a, **kw)
        seconds[-1] += time.perf_counter() - t0
        return out

    Store.write, Store.tidy = timed_write, timed_tidy
    return seconds


def _warm_chunker() -> None:
    """Load the sentence splitter before the clock starts (both indexes use it)."""
    from sproutrag.ingest.chunking import chunk_text

    chunk_text("Warm up. The splitter loads.", sentences_per_chunk=2, max_chunk_chars=1000)


def phase_index(corpus: str, db: str) -> dict:
    """One index-corpus flow run in this process (model and server started first)."""
    from sproutrag.flows.index_corpus import index_corpus
    from sproutrag.flows.server import temporary_server
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import shared_encoder

    shared_encoder(load_settings()).encode_texts(["warm up"])
    _warm_chunker()
    seconds = timed_store()
    with temporary_server():
        t0 = time.perf_counter()
        row = index_corpus(corpus=corpus, db=db)
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "store_batch_s": seconds, "row": {
        k: row[k] for k in ("n_new", "n_changed", "n_unchanged", "n_deleted", "n_failed",
                            "n_chunks", "n_nodes", "n_chars", "timings_json", "status")}}


def phase_plain(corpus: str, db: str) -> dict:
    """The reference: the index's chunks, sentence-transformers `encode`, one LanceDB table."""
    import lancedb
    import pyarrow as pa
    from sentence_transformers import SentenceTransformer
    from sproutrag.schemas.settings import ChunkingSettings

    from sproutrag.encoder.encoder import DEFAULT_MODEL
    from sproutrag.ingest.chunking import chunk_text

    st = SentenceTransformer(DEFAULT_MODEL, device="cpu")
    st.encode(["warm up"])
    _warm_chunker()
    t0 = time.perf_counter()
    cfg, rows = ChunkingSettings().model_dump(), {"doc_id": [], "start": [], "end": [],
                                                    "text": []}
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            for s, e in chunk_text(d["text"], **cfg):
                for col, v in zip(rows, (d["doc_id"], s, e, d["text"][s:e])):
                    rows[col].append(v)
    vecs = st.encode(rows["text"], batch_size=64, normalize_embeddings=True)
    table = pa.table({**rows, "vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vecs.ravel(), pa.float32()), vecs.shape[1])})
    lancedb.connect(db).create_table("chunks", table)
    return {"wall_s": time.perf_counter() - t0, "n_chunks": len(rows["text"])}


def phase_check(db: str) -> dict:
    from sproutrag.storage.check import check_database

    t0 = time.perf_counter()
    report = check_database(db)
    return {"wall_s": time.perf_counter() - t0, "healthy": report.healthy,
            "lines": report.lines()[-1:]}


def phase_store(corpus: str, db: str, n: int) -> dict:
    """N documents through the store alone, cut and tidied as the flow does."""
    from bench.scale_store import store_only

    seconds = timed_store()
    out = store_only(corpus, db, n)
    return {**out, "store_batch_s": seconds}


def worker(args: argparse.Namespace) -> None:
    phase, corpus, db = args.worker, args.corpus, args.db
    out = {"index": lambda: phase_index(corpus, db), "plain": lambda: phase_plain(corpus, db),
           "check": lambda: phase_check(db),
           "store": lambda: phase_store(corpus, db, args.store_only)}[phase]()
    out["peak_rss_mb"] = peak_rss_mb()
    print("RESULT " + json.dumps(out))


#: The settings of each task runner compared (`--runners`): the default thread runner, and
#: a local Dask cluster of 2 worker processes, one torch thread each.
RUNNERS = {"threads": {},
           "dask": {"SPROUTRAG_PIPELINE__TASK_RUNNER": "dask",
                    "SPROUTRAG_PIPELINE__DASK_WORKERS": "2",
                    "SPROUTRAG_ENCODING__THREADS": "1"}}


def run_phase(phase: str, corpus: Path, db: Path, runner: str = "threads", **extra) -> dict:
    cmd = [sys.executable, __file__, "--worker", phase, "--corpus", str(corpus),
           "--db", str(db)] + [x for k, v in extra.items() for x in (f"--{k}", str(v))]
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT), **RUNNERS[runner]}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{phase} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(lines[-1][7:])


# -- reports ---------------------------------------------------------------------------


def store_growth(seconds: list[float], save: Path | None = None) -> str:
    """Store seconds per batch, first 10% of the batches against the last 10%: means, and
    medians (the steady cost of a write: the run's tidy step compacts every
    `pipeline.compact_fragments` batches, a spike that lands in one window or the other
    when batches are few), and the spikes (batches over 3x the median: the tidy steps).
    SAVE: the seconds as JSON."""
    import statistics

    if save is not None:
        save.write_text(json.dumps(seconds), encoding="utf-8")
    k = max(1, len(seconds) // 10)
    first, last = sum(seconds[:k]) / k, sum(seconds[-k:]) / k
    mfirst, mlast = statistics.median(seconds[:k]), statistics.median(seconds[-k:])
    median = statistics.median(seconds)
    spikes = [x for x in seconds if x > 3 * median]
    return (f"store per batch: {len(seconds)} batches, first 10% {first * 1000:.1f} ms, last "
            f"10% {last * 1000:.1f} ms, ratio {last / max(first, 1e-9):.2f} (target <= 1.3); "
            f"medians {mfirst * 1000:.1f} -> {mlast * 1000:.1f} ms, ratio "
            f"{mlast / max(mfirst, 1e-9):.2f}; max {max(seconds) * 1000:.0f} ms; "
            f"{len(spikes)} batches over 3x the median (tidy), mean "
            f"{(sum(spikes) / max(len(spikes), 1)) * 1000:.0f} ms")


def report_db(db: Path) -> None:
    live, disk = live_bytes(str(db)), disk_bytes(str(db))
    print(f"database: documents + nodes {disk / 1e6:,.1f} MB on disk, live rows "
          f"{live / 1e6:,.1f} MB: {disk / live:.2f}x (target <= 1.5); versions "
          f"{versions(str(db))}")


def change_some(corpus: Path, share: float, seed: int = 1) -> int:
    lines = corpus.read_text(encoding="utf-8").splitlines()
    rng = random.Random(seed)
    picked = rng.sample(range(len(lines)), max(1, int(share * len(lines))))
    for i in picked:
        d = json.loads(lines[i])
        d["text"] += " This clause was amended."
        lines[i] = json.dumps(d)
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(picked)


def insert_at_top(corpus: Path) -> None:
    """A new document's line before the first: every other line moves down by one (an
    export that writes its newest document first)."""
    text = corpus.read_text(encoding="utf-8")
    new = {"doc_id": "inserted-at-top",
           "text": "A document exported first. Every other line moves down by one."}
    corpus.write_text(json.dumps(new) + "\n" + text, encoding="utf-8")


def rerun(label: str, corpus: Path, db: Path) -> None:
    r = run_phase("index", corpus, db)
    row = r["row"]
    print(f"{label}: flow {r['wall_s']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB; "
          f"{row['n_new']} new, {row['n_changed']} changed, {row['n_unchanged']} unchanged")


def per_batch(row: dict, n_batches: int) -> str:
    """Mean seconds per batch of each stage (from the run's timings) and how many
    encoding workers one writer can feed (encode / store per batch)."""
    t = json.loads(row["timings_json"])
    enc, store = t.get("encode", 0) / n_batches, t.get("store", 0) / n_batches
    return (f"per batch: chunk {t.get('chunk', 0) / n_batches:.2f} s, encode {enc:.2f} s, "
            f"build_trees {t.get('build_trees', 0) / n_batches:.2f} s, store {store:.3f} s: "
            f"one writer feeds about {enc / max(store, 1e-9):.0f} encoding workers")


def compare_runners(corpus: Path, work: Path, runners: list[str], n_chars: int) -> None:
    """The index phase on each task runner, each into its own new database."""
    walls = {}
    for runner in runners:
        r = run_phase("index", corpus, work / f"db-{runner}", runner)
        walls[runner] = r["wall_s"]
        print(f"{runner} runner: {r['wall_s']:.1f} s, {n_chars / r['wall_s']:,.0f} chars/s, "
              f"peak RSS (flow process) {r['peak_rss_mb']:.0f} MB; "
              + per_batch(r["row"], len(r["store_batch_s"])), flush=True)
        print("  " + store_growth(r["store_batch_s"], work / f"store-{runner}.json"),
              flush=True)
    if "threads" in walls:
        for runner, wall in walls.items():
            print(f"  {runner}: {walls['threads'] / wall:.2f}x the threads runner")


def main_docs(n: int, work: Path) -> None:
    corpus = work / "corpus.jsonl"
    docs = make_docs(n)
    write_jsonl(docs, corpus)
    n_chars = sum(len(d["text"]) for d in docs)
    print(f"corpus: {n:,} documents, {n_chars:,} chars ({n_chars / n:.0f} per document); "
          f"cpus {os.cpu_count()}", flush=True)
    plain = run_phase("plain", corpus, work / "plain.lancedb")
    print(f"plain index: {plain['wall_s']:.1f} s, {n_chars / plain['wall_s']:,.0f} chars/s, "
          f"{plain['n_chunks']:,} chunks, peak RSS {plain['peak_rss_mb']:.0f} MB", flush=True)
    db = work / "db"
    idx = run_phase("index", corpus, db)
    row = idx["row"]
    print(f"sproutrag index: {idx['wall_s']:.1f} s, {n_chars / idx['wall_s']:,.0f} chars/s "
          f"({plain['wall_s'] / idx['wall_s']:.2f}x the plain index, target >= 0.9); "
          f"{row['n_chunks']:,} chunks, {row['n_nodes']:,} nodes; peak RSS "
          f"{idx['peak_rss_mb']:.0f} MB; stages {row['timings_json']}", flush=True)
    print(store_growth(idx["store_batch_s"], work / "store-batches.json"))
    print(per_batch(row, len(idx["store_batch_s"])))
    report_db(db)
    rerun("unchanged re-run", corpus, db)
    insert_at_top(corpus)
    rerun("re-run after a line inserted at the top (every line moved: sources updated)",
          corpus, db)
    changed = change_some(corpus, 0.01)
    rerun(f"re-run with {changed} documents changed (1%)", corpus, db)
    report_db(db)
    chk = run_phase("check", corpus, db)
    print(f"sproutrag check: {chk['wall_s']:.1f} s ({n / chk['wall_s']:,.0f} documents/s), "
          f"peak RSS {chk['peak_rss_mb']:.0f} MB: {chk['lines']}")


def main_store(n: int, work: Path) -> None:
    corpus, db = work / "corpus.jsonl", work / "db"
    t0 = time.perf_counter()
    write_jsonl(make_docs(n), corpus)
    print(f"corpus: {n:,} documents written in {time.perf_counter() - t0:.0f} s", flush=True)
    st = run_phase("store", corpus, db, **{"store-only": n})
    print(f"store only: {st['wall_s']:.1f} s for {n:,} documents ({st['n_nodes']:,} nodes), "
          f"peak RSS {st['peak_rss_mb']:.0f} MB", flush=True)
    print(store_growth(st["store_batch_s"], work / "store-batches.json"), flush=True)
    report_db(db)
    rerun("unchanged re-run (JSONL: every line hashed)", corpus, db)
    insert_at_top(corpus)
    rerun("re-run after a line inserted at the top (every line moved: sources updated)",
          corpus, db)
    report_db(db)
    chk = run_phase("check", corpus, db)
    print(f"sproutrag check: {chk['wall_s']:.1f} s ({n / chk['wall_s']:,.0f} documents/s), "
          f"peak RSS {chk['peak_rss_mb']:.0f} MB: {chk['lines']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, help="N documents through the whole pipeline")
    ap.add_argument("--store-only", type=int, default=0, help="N documents, the store alone")
    ap.add_argument("--work", help="work folder (default: a temporary one, removed)")
    ap.add_argument("--runners", help="only compare the index phase on these task runners "
                    "(comma-separated: threads,dask) over --docs N documents")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.runners:
            docs = make_docs(args.docs or 10_000)
            write_jsonl(docs, work / "corpus.jsonl")
            compare_runners(work / "corpus.jsonl", work, args.runners.split(","),
                            sum(len(d["text"]) for d in docs))
        elif args.store_only:
            main_store(args.store_only, work)
        else:
            main_docs(args.docs or 10_000, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
