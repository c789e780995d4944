"""Incremental re-indexing cost: full index, unchanged re-run, 1% changed re-run.

    .venv/bin/python bench/incremental.py [--docs 300] [--changed 0.01] [--nightly 30]

A corpus of N documents (default 300) is generated from the sample corpus's paragraphs
(shuffled, deterministic), then indexed three times by the `index-corpus` flow in this
process, against one Prefect server and one loaded encoder (a small warm-up run first,
so neither the model load nor the server start is charged to the reference run):

1. full index of a new database (the reference);
2. re-run with nothing changed;
3. re-run after changing 1% of the documents (a sentence appended to each).

Targets: run 2 under 3% of run 1, run 3 under 5%. Prints wall time per run, the ratio to
the full index and the stage timings of each run's `runs` row.

Then `--nightly` more runs with nothing changed (default 30, "a month of nightly runs"),
twice, printing before and after each phase the LanceDB versions of each table and the
bytes of the database folder, with the settings that govern retention. Back to back no
version ages past the 7-day retention (`keep_versions_days`), so the first phase shows
what every unchanged run adds; the second phase compresses time (one run stands for a
night: the retention becomes 7 runs' worth of seconds) and shows the steady state.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

for key, value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "true", "SPROUTRAG_PIPELINE__PROGRESS": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
}.items():
    os.environ.setdefault(key, value)


def paragraphs() -> list[str]:
    """Paragraphs of the sample corpus (blank-line separated, at least 80 characters)."""
    out = []
    for path in sorted((ROOT / "data" / "sample").rglob("*")):
        if path.suffix in (".txt", ".md"):
            text = path.read_text(encoding="utf-8")
            out += [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= 80]
    return out


def make_corpus(folder: Path, n_docs: int, seed: int = 0) -> list[Path]:
    """N documents of 8-16 shuffled sample paragraphs each, written as .txt files."""
    paras, rng = paragraphs(), random.Random(seed)
    folder.mkdir(parents=True)
    files = []
    for k in range(n_docs):
        body = "\n\n".join(rng.sample(paras, rng.randint(8, 16)))
        path = folder / f"doc-{k:04d}.txt"
        path.write_text(f"Document {k}\n\n{body}\n", encoding="utf-8")
        files.append(path)
    return files


def timed_run(index_corpus, corpus: Path, db: str) -> tuple[float, dict]:
    t0 = time.perf_counter()
    row = index_corpus(corpus=str(corpus), db=db)
    return time.perf_counter() - t0, row


def db_footprint(db: str) -> tuple[dict[str, int], int]:
    """(versions per table, bytes of the database folder without the work dir)."""
    import lancedb

    conn = lancedb.connect(db)
    versions = {name: len(conn.open_table(name).list_versions())
                for name in sorted(conn.list_tables().tables)}
    size = sum(p.stat().st_size for p in Path(db).rglob("*")
               if p.is_file() and "_work" not in p.relative_to(db).parts)
    return versions, size


def nightly(index_corpus, corpus: Path, db: str, runs: int, title: str) -> float:
    """RUNS unchanged re-runs; prints versions per table and database bytes before and
    after, with the settings used. Returns the seconds per run."""
    from sproutrag.schemas.settings import load_settings

    before = db_footprint(db)
    t0 = time.perf_counter()
    for _ in range(runs):
        row = index_corpus(corpus=str(corpus), db=db)
        assert row["n_new"] == row["n_changed"] == row["n_deleted"] == 0, row
    seconds = (time.perf_counter() - t0) / runs
    after = db_footprint(db)
    pipeline = load_settings().pipeline
    print()
    print(f"{runs} nightly runs, nothing changed, {title} ({seconds:.2f} s each); settings: "
          + ", ".join(f"{k}={v:g}" for k, v in pipeline.model_dump().items()
                      if "version" in k or "optimize" in k))
    print()
    print("| | " + " | ".join(f"{t} versions" for t in after[0]) + " | database bytes |")
    print("|---|" + "---|" * (len(after[0]) + 1))
    for label, (versions, size) in (("before", before), (f"after {runs} runs", after)):
        print(f"| {label} | " + " | ".join(str(versions.get(t, 0)) for t in after[0])
              + f" | {size:,} |")
    print(f"\nper unchanged run: {(after[1] - before[1]) / runs:,.0f} bytes, "
          + ", ".join(f"{t} +{(after[0][t] - before[0].get(t, 0)) / runs:.1f} versions"
                      for t in after[0]))
    return seconds


def nightly_phases(index_corpus, corpus: Path, db: str, runs: int) -> None:
    """Back to back, no version is older than the 7-day retention: the first phase shows
    what each unchanged run adds. The second compresses time, one run standing for one
    night: the retention becomes 7 runs' worth of seconds, so versions do age past it
    and the figures show the steady state of a year of nightly runs."""
    seconds = nightly(index_corpus, corpus, db, runs, "default settings")
    key = "SPROUTRAG_PIPELINE__KEEP_VERSIONS_DAYS"
    os.environ[key] = repr(7 * seconds / 86400)
    try:
        nightly(index_corpus, corpus, db, runs, "time compressed (1 run = 1 night)")
    finally:
        del os.environ[key]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=300, help="corpus size (default 300)")
    ap.add_argument("--changed", type=float, default=0.01, help="share changed (0.01)")
    ap.add_argument("--nightly", type=int, default=30,
                    help="unchanged nightly runs to simulate afterwards (30; 0: none)")
    args = ap.parse_args()
    from sproutrag.flows.index_corpus import index_corpus

    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm"
        make_corpus(warm, 2, seed=99)
        timed_run(index_corpus, warm, f"{tmp}/warm-db")  # model load + Prefect server start

        corpus = Path(tmp) / "corpus"
        files = make_corpus(corpus, args.docs)
        n_chars = sum(len(p.read_text(encoding="utf-8")) for p in files)
        db = f"{tmp}/db"
        results = [("full index", *timed_run(index_corpus, corpus, db))]
        results.append(("re-run, nothing changed", *timed_run(index_corpus, corpus, db)))
        n_change = max(1, round(args.changed * args.docs))
        for path in random.Random(1).sample(files, n_change):
            with path.open("a", encoding="utf-8") as fh:
                fh.write("\nThis paragraph was added after the first index run.\n")
        label = f"re-run, {n_change} changed ({n_change / args.docs:.0%})"
        results.append((label, *timed_run(index_corpus, corpus, db)))
        if args.nightly:
            report = io.StringIO()
            with contextlib.redirect_stdout(report):
                nightly_phases(index_corpus, corpus, db, args.nightly)

    full = results[0][1]
    print(f"corpus: {args.docs} documents, {n_chars:,} characters, "
          f"{results[0][2]['n_chunks']} chunks")
    print()
    print("| run | new | changed | unchanged | seconds | / full index | stages (s) |")
    print("|---|---|---|---|---|---|---|")
    for label, seconds, row in results:
        stages = json.loads(row["timings_json"])
        stage_text = ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
        print(f"| {label} | {row['n_new']} | {row['n_changed']} | {row['n_unchanged']} | "
              f"{seconds:.2f} | {seconds / full:.2%} | {stage_text} |")
    print()
    print(f"targets: unchanged < 3% -> {results[1][1] / full:.2%} "
          f"({'OK' if results[1][1] / full < 0.03 else 'MISSED'}); "
          f"1% changed < 5% -> {results[2][1] / full:.2%} "
          f"({'OK' if results[2][1] / full < 0.05 else 'MISSED'})")
    if args.nightly:
        print(report.getvalue(), end="")


if __name__ == "__main__":
    main()
