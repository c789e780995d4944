"""The `results` table after many query runs: what reading it costs before and after an
index run's maintenance compacts it.

    .venv/bin/python bench/results_table.py [--runs 30 365 1000] [--queries 100]

Each query run of the `query-corpus` flow appends one commit to `results` (one fragment,
one version). For each number of runs R, a fresh toy database (no model) receives R
query runs of Q queries x 5 hits (`storage.rows.result_rows`, `Store.add_results`, as
the flow writes them); then it prints the fragments, versions and folder bytes, and the
time to read the whole table and one run's rows (`run_id = ...`), before and after
`Store.maintain` (the end of an index run, default thresholds and a retention of 0 days
as if the runs were old), with the ratio after / before. Reads are the median of 5.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sproutrag.schemas.sections import PipelineSettings  # noqa: E402

from bench.scale import disk_bytes  # noqa: E402
from sproutrag.storage.rows import result_rows  # noqa: E402
from sproutrag.storage.store import Store  # noqa: E402
from tests.helpers import toy_document, toy_store  # noqa: E402


def _lines(run: int, queries: int) -> list[dict]:
    return [{"qid": f"{run}-{q}", "results": [
        {"doc_id": "a", "node_id": f"a:{h}", "score": 1.0 - h / 10, "spans": [[h, h + 3]],
         "text": "evidence text of a hit " * 4} for h in range(5)]}
        for q in range(queries)]


def _read_ms(db: str, run_id: str) -> tuple[float, float]:
    whole, one = [], []
    for _ in range(5):
        tbl = Store.open_existing(db).table("results")
        t0 = time.perf_counter()
        tbl.to_arrow()
        whole.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        tbl.search().where(f"run_id = '{run_id}'").limit(None).to_arrow()
        one.append(time.perf_counter() - t0)
    return statistics.median(whole) * 1e3, statistics.median(one) * 1e3


def _shape(db: str) -> tuple[int, int, int]:
    tbl = Store.open_existing(db).table("results")
    size = disk_bytes(db, names=("results",))
    return tbl.stats()["fragment_stats"]["num_fragments"], len(tbl.list_versions()), size


def measure(runs: int, queries: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = toy_store(Path(tmp) / "db")
        store.write([toy_document("a", "one two three four five six seven")], "fp")
        for r in range(runs):
            store.add_results(result_rows(_lines(r, queries), run_id=f"run{r}", k=None,
                                          mode="tree"))
        before = _shape(store.uri), _read_ms(store.uri, f"run{runs // 2}")
        pipeline = PipelineSettings()
        t0 = time.perf_counter()
        store.maintain(run_id="index", keep_versions_days=0,
                       min_fragments=pipeline.optimize_fragments,
                       min_old_versions=pipeline.prune_versions)
        seconds = time.perf_counter() - t0
        after = _shape(store.uri), _read_ms(store.uri, f"run{runs // 2}")
    for label, ((frags, versions, size), (whole, one)) in (("before", before),
                                                         ("after", after)):
        print(f"{runs:>5} runs {label:>6}: {frags:>5} fragments, {versions:>5} versions, "
              f"{size / 1e6:7.2f} MB; read all {whole:8.1f} ms, one run {one:7.1f} ms")
    print(f"{runs:>5} runs  ratio: read all {after[1][0] / before[1][0]:.2f}x, one run "
          f"{after[1][1] / before[1][1]:.2f}x, bytes {after[0][2] / before[0][2]:.2f}x; "
          f"maintenance {seconds:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[30, 365, 1000])
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    for runs in args.runs:
        measure(runs, args.queries)


if __name__ == "__main__":
    main()
