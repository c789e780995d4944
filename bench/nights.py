"""Nightly runs that change documents: the database's bytes against its live rows, as
the index run kept them before stop 76 (the vector index merged at every run) and as it
keeps them now, with a week of earlier runs' versions kept or one night's
(`pipeline.keep_versions_days`), and compacted once 8 of a table's fragments are small
or, `later16`, 16 (`pipeline.optimize_fragments`; stop 78).

    .venv/bin/python bench/nights.py [--docs 15000] [--nights 24] [--changed 0.01]
        [--setups before,default,every8,one-night,later16,plain]

A JSONL corpus of N generated documents (`bench/scale.py`'s, 300-500 characters) is stored
by the store alone (`bench/scale_store.py`: real chunk vectors, the flow's batches and
tidying) and copied for each setup of `SETUPS`. Then each night changes a share of the
documents (a sentence appended) and runs the `index-corpus` flow over every database, in
this process. Time is compressed from the second night: the first night's seconds stand
for a day, so a database kept for 7 days keeps the start versions of its last 7 nights, as
a nightly schedule does. The reference, `plain`, is what a sentence-transformers + LanceDB
user keeps under the same changes (`bench/plain_nights.py`: the same chunks in one table,
LanceDB's default vector index, `optimize` with the same 7-night retention). (The files of
versions a run removed wait 7 days of the clock, not of the bench, before they are
deleted: after its first week the bench overstates every setup's bytes; its first week is
what a week of nights leaves.) The vector index exists from 100,000 `nodes` rows (about
34,000 of these documents).

Prints, per night, each database's bytes on disk (`documents` + `nodes` folders; the plain
table's folder) over the Arrow bytes of its live rows, its fragments and the flow's
seconds; then the mean and the largest ratio over the first 7 nights, and the last
night's; then the median time of a vector search through each database's index and its
segments (after 7 nights an index merged every 4 holds 4, one merged every 8 holds 8: the
most either holds). Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import plain_nights  # noqa: E402
import scale  # noqa: E402 - sets the environment of a bench run
from scale_store import store_only  # noqa: E402

KEEP = "SPROUTRAG_PIPELINE__KEEP_VERSIONS_DAYS"
#: The databases compared: key -> (name, retention in nights, `indexes.MAX_VECTOR_DELTAS`).
#: `before` folds each run's new vectors by merging them into the vector index, a copy
#: of the whole index (stop 75 and earlier); the others add delta indexes, merged once
#: the index has 4 or 8 segments, and keep the start versions of a week of nights (the
#: default) or of one.
SETUPS = {"before": ("before (7 nights, index merged every run)", 7, 1),
          "default": ("7 nights, merged every 4 (default)", 7, 4),
          "every8": ("7 nights, merged every 8", 7, 8),
          "one-night": ("1 night, merged every 4", 1, 4),
          "later16": ("7 nights, merged every 4, compacted at 16 small fragments", 7, 4)}
#: `pipeline.optimize_fragments` of a setup, where not the default (stop 78's rule).
OPTIMIZE = {"later16": 16}
FRAGMENTS = "SPROUTRAG_PIPELINE__OPTIMIZE_FRAGMENTS"
#: The reference: a plain sentence-transformers + LanceDB table (`plain_nights.py`) under
#: the same changes, optimized by LanceDB with the default retention (7 nights).
PLAIN = "plain"
PLAIN_NAME = "plain LanceDB table, optimize() (7 nights)"


def _fragments(db: str, table: str = "nodes") -> int:
    import lancedb

    return len(lancedb.connect(db).open_table(table).to_lance().get_fragments())


def _segments(db: str, table: str = "nodes") -> int:
    """Segments of TABLE's vector index (the trained one and its deltas), 0 if none."""
    import lancedb

    tbl = lancedb.connect(db).open_table(table)
    name = next((i.name for i in tbl.list_indices() if i.columns == ["vector"]), None)
    return tbl.index_stats(name).num_indices if name else 0


def _search_ms(db: str, table: str = "nodes", n: int = 200) -> float:
    """Median milliseconds of N cosine searches (top 20) of TABLE by stored vectors,
    after 50 that are not counted."""
    import lancedb
    import numpy as np

    tbl = lancedb.connect(db).open_table(table)
    vectors = tbl.search().select(["vector"]).limit(n).to_arrow()["vector"].to_pylist()
    seconds = []
    for v in vectors[:50] + vectors:  # the first 50 warm the index's files up
        t0 = time.perf_counter()
        tbl.search(v).distance_type("cosine").limit(20).to_arrow()
        seconds.append(time.perf_counter() - t0)
    return 1000 * float(np.median(seconds[50:]))


def night(index_corpus, corpus: Path, dbs: dict[str, str], day: float | None,
          plain=None) -> dict:
    """One night over every database, DAY seconds standing for a day (None: no version
    expires yet): {setup: (disk / live, fragments, seconds)}."""
    from sproutrag.storage import indexes

    out = {}
    for key, db in dbs.items():
        if key == PLAIN:
            seconds = plain.night(corpus, timedelta(seconds=7 * (day or 86400)))
            out[key] = (plain_nights.disk_ratio(db), _fragments(db, plain_nights.TABLE),
                        seconds)
            continue
        _, nights, indexes.MAX_VECTOR_DELTAS = SETUPS[key]
        os.environ[KEEP] = repr(nights * (day or 86400) / 86400)
        if key in OPTIMIZE:
            os.environ[FRAGMENTS] = str(OPTIMIZE[key])
        else:
            os.environ.pop(FRAGMENTS, None)
        t0 = time.perf_counter()
        row = index_corpus(corpus=str(corpus), db=db)
        seconds = time.perf_counter() - t0
        assert isinstance(row, dict) and row["n_changed"], row  # a run that completed
        out[key] = (scale.disk_bytes(db) / scale.live_bytes(db), _fragments(db), seconds)
    return out


def _name(key: str) -> str:
    return PLAIN_NAME if key == PLAIN else SETUPS[key][0]


def _setup(keys: list[str], tmp: str, corpus: Path, n_docs: int) -> tuple[dict, object]:
    """The databases of KEYS, the first stored and the others copied from it (the plain
    reference built from its leaves); returns ({key: db}, the plain index or None)."""
    dbs = {key: f"{tmp}/db-{key}" for key in keys}
    db0 = next(dbs[k] for k in keys if k != PLAIN)
    first = store_only(str(corpus), db0, n_docs)
    for key, db in dbs.items():
        if db != db0 and key != PLAIN:
            shutil.copytree(db0, db)
    plain = (plain_nights.PlainIndex.from_leaves(db0, dbs[PLAIN], corpus)
             if PLAIN in dbs else None)
    print(f"{n_docs:,} documents, {first['n_nodes']:,} nodes; after the first index (the "
          f"store alone, {first['wall_s']:.0f} s): "
          f"{scale.disk_bytes(db0) / scale.live_bytes(db0):.2f}x live, {_fragments(db0)} "
          f"fragments of `nodes`" + (f"; plain table {plain_nights.disk_ratio(dbs[PLAIN]):.2f}x"
                                     if plain else "") + "\n")
    return dbs, plain


def _summary(rows: list[dict], dbs: dict[str, str]) -> None:
    week = rows[:7]
    print()
    for key in dbs:
        ratios = [r[key][0] for r in week]
        print(f"{_name(key)}: disk / live over the first {len(week)} nights: mean "
              f"{sum(ratios) / len(ratios):.2f}x, largest {max(ratios):.2f}x, last "
              f"{rows[-1][key][0]:.2f}x; flow {sum(r[key][2] for r in rows) / len(rows):.1f}"
              " s a night")
    print("vector search through the index (median of 200 questions, top 20; "
          "segments of the index): " + ", ".join(
              f"{_name(key)} {_search_ms(db, table):.1f} ms, {_segments(db, table)}"
              for key, db in dbs.items()
              for table in [plain_nights.TABLE if key == PLAIN else "nodes"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=15_000, help="corpus size (15,000)")
    ap.add_argument("--nights", type=int, default=24, help="nights (24)")
    ap.add_argument("--changed", type=float, default=0.01, help="share changed a night")
    ap.add_argument("--setups", default=",".join([*SETUPS, PLAIN]),
                    help=f"comma-separated, of {', '.join([*SETUPS, PLAIN])} (all)")
    ap.add_argument("--work", help="work folder (default: a temporary one, removed)")
    args = ap.parse_args()
    keys = args.setups.split(",")
    if not set(keys) <= {*SETUPS, PLAIN} or keys == [PLAIN]:
        ap.error(f"--setups: pick from {', '.join([*SETUPS, PLAIN])}, one besides {PLAIN}")
    from sproutrag.flows.index_corpus import index_corpus

    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        scale.write_jsonl(scale.make_docs(args.docs), corpus)
        dbs, plain = _setup(keys, tmp, corpus, args.docs)
        warm = Path(tmp) / "warm.jsonl"
        scale.write_jsonl(scale.make_docs(2, seed=99), warm)
        index_corpus(corpus=str(warm), db=f"{tmp}/warm")  # Prefect server, model load
        print(f"{args.changed:.0%} changed a night\n\n| night | " + " | ".join(
            f"{_name(k)}: disk / live, fragments, s" for k in dbs)
            + " |\n|---|" + "---|" * len(dbs))
        rows, day = [], None
        for k in range(1, args.nights + 1):
            t0 = time.perf_counter()
            scale.change_some(corpus, args.changed, seed=k)
            rows.append(night(index_corpus, corpus, dbs, day, plain))
            day = day or time.perf_counter() - t0  # from now on a night stands for a day
            print(f"| {k} | " + " | ".join(f"{r:.2f}x, {f}, {s:.1f}"
                                           for r, f, s in rows[-1].values()) + " |",
                  flush=True)
        _summary(rows, dbs)


if __name__ == "__main__":
    main()
