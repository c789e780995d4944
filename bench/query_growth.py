"""How a corpus-wide query grows with the corpus: many small documents, 10^4 to 10^6.

    .venv/bin/python bench/query_growth.py --docs 10000 100000 [1000000] [--work DIR]

Per size N: N generated documents of 300-500 characters (`bench/scale.py`'s corpus)
stored as an index run stores them (`bench/scale.py --store-only`: the store, its tidy
and maintenance; trees of 2-4 leaves from real chunk vectors), reused from --work when
there. Then, in a fresh process per database, the same questions (`bench/query.py`'s,
some naming parties, one naming a party no document has) encoded once beforehand, each
searched three ways, alternating per question so that load on the machine hits all three:

* tree: the shipped corpus-wide search (`Retriever.search_vector`, tree mode, k = 5: the
  hybrid first stage, entity ranking, name and mention lookups, the trees);
* flat: the Retriever's flat mode (cosine over the leaves through LanceDB);
* plain (the reference): what a plain sentence-transformers + LanceDB index answers with,
  `table.search(vector).limit(5)` on the same `nodes` table, its vector index as the
  index run keeps it.

Prints the first query of the process (open, view, first stage, no encoding), p50 / p95
of the warm queries of each, their ratio to plain, the process's peak RSS, and how each
p50 grows from one size to the next. With --threads N: also the tree search's queries per
second from one thread and from N threads sharing the Retriever. Not a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WAYS = ("tree", "flat", "plain")


def build(n: int, work: Path) -> Path:
    """The database of N documents under WORK (built when absent)."""
    from bench.scale import make_docs, run_phase, write_jsonl

    folder = work / f"docs-{n}"
    db = folder / "db"
    if (folder / "built").is_file():
        return db
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    write_jsonl(make_docs(n), corpus)
    t0 = time.perf_counter()
    out = run_phase("store", corpus, db, **{"store-only": n})
    print(f"{n:,} documents stored in {time.perf_counter() - t0:.0f} s "
          f"({out['n_nodes']:,} nodes rows)", flush=True)
    (folder / "built").write_text("built\n")
    return db


def throughput(r, qs: list[str], qvecs: np.ndarray, threads: int) -> float:
    """Tree searches per second of QS from a pool of THREADS sharing R."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        t = time.perf_counter()
        list(pool.map(lambda qv: r.search_vector(qv[0], qv[1], k=5), zip(qs, qvecs)))
        return len(qs) / (time.perf_counter() - t)


def worker(db: str, n_queries: int, threads: int = 0) -> None:
    """In a fresh process: the first query, then the warm queries of each way."""
    from bench.query import first_query

    _, r, qs, qvecs, first = first_query(db, n_queries)
    nodes = r.store.table("nodes")
    nodes.search(qvecs[0]).limit(5).to_list()  # warm: the plain reader's index
    r.search_vector(qs[0], qvecs[0], k=5, mode="flat")
    calls = {
        "tree": lambda q, v: r.search_vector(q, v, k=5),
        "flat": lambda q, v: r.search_vector(q, v, k=5, mode="flat"),
        "plain": lambda q, v: nodes.search(v).limit(5).to_list(),
    }
    times: dict[str, list[float]] = {w: [] for w in WAYS}
    for q, v in zip(qs[1:], qvecs[1:], strict=True):
        for way in WAYS:
            t = time.perf_counter()
            calls[way](q, v)
            times[way].append(time.perf_counter() - t)
    rates = ({f"qps_{n}": throughput(r, qs[1:], qvecs[1:], n) for n in (1, threads)}
             if threads else {})
    print("RESULT " + json.dumps({**rates,
        "first_s": first, "documents": r.n_documents(), "rows": nodes.count_rows(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **{f"{w}_p50_ms": float(np.percentile(times[w], 50) * 1000) for w in WAYS},
        **{f"{w}_p95_ms": float(np.percentile(times[w], 95) * 1000) for w in WAYS},
    }))


def measure(db: Path, n_queries: int, threads: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", str(db), "--queries",
                           str(n_queries), "--threads", str(threads)],
                          capture_output=True, text=True, cwd=ROOT)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"query worker failed on {db}: {proc.stderr[-2000:]}")
    return json.loads(lines[-1][7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, nargs="+", default=[10_000, 100_000],
                    help="corpus sizes in documents (default: 10000 100000)")
    ap.add_argument("--work", help="keep (and reuse) the databases here")
    ap.add_argument("--queries", type=int, default=50, help="warm queries per database")
    ap.add_argument("--threads", type=int, default=0,
                    help="also tree searches per second from 1 and this many threads")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.queries, args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-query-growth-") as tmp:
        work = Path(args.work or tmp)
        rows = []
        for n in args.docs:
            res = measure(build(n, work), args.queries, args.threads)
            rows.append((n, res))
            print(f"{res['documents']:,} documents ({res['rows']:,} nodes rows): first query "
                  f"{res['first_s']:.2f} s, peak RSS {res['peak_rss_mb']:.0f} MB", flush=True)
            for w in WAYS:
                print(f"  {w:5s} p50 {res[f'{w}_p50_ms']:7.1f} ms  p95 "
                      f"{res[f'{w}_p95_ms']:7.1f} ms  p50 / plain "
                      f"{res[f'{w}_p50_ms'] / res['plain_p50_ms']:.2f}x", flush=True)
            if args.threads:
                print(f"  tree searches per second: 1 thread {res['qps_1']:.1f}, "
                      f"{args.threads} threads {res[f'qps_{args.threads}']:.1f}", flush=True)
        for (n0, a), (n1, b) in zip(rows, rows[1:]):
            print(f"growth {n0:,} -> {n1:,} documents ({n1 / n0:.0f}x): " + ", ".join(
                f"{w} p50 {b[f'{w}_p50_ms'] / a[f'{w}_p50_ms']:.2f}x" for w in WAYS))


if __name__ == "__main__":
    main()
