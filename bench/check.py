"""`sproutrag check` at scale: seconds, documents/s and peak memory of `check_database`.

    .venv/bin/python bench/check.py [--docs 1000000] [--db PATH] [--keep]
                                    [--old-docs 2000] [--old-seconds 120]

Builds a store-only database of N small documents (default a million) under /tmp:
300-500 characters of varied words each, 2-4 leaves (3-7 `nodes` rows), 384-d leaf
vectors drawn from a pool of random unit vectors (each parent the mean of its children's,
as the check requires), tree structures from a few `build_tree` templates; written with
LanceDB `add` in batches of 50,000 documents, then
`optimize()` once and the BTREE index on `nodes.doc_id` that `Store` creates on a large
table. (A folder given by --db that exists is checked as it is.)

Then, each in a fresh process: `check_database` (seconds, documents/s, peak RSS of that
process), and the per-document path it replaced, measured on a prefix: the start-of-run
reads of every column (`check_tables`, timed whole) plus one
`Store.load_tree` per document timed on the first --old-docs documents (or --old-seconds)
and extrapolated to N. The database is deleted afterwards unless --keep or --db.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIM = 384
ENCODER = "bench/check-encoder"
BATCH_DOCS = 50_000
POOL = 4096
TEMPLATES = 8  # tree structures per leaf count
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "an", "el", "or", "ur", "qu",
             "ph", "st", "tr", "ch", "th", "ing", "er", "al", "ex", "om", "iv")


def vocabulary(rng: np.random.Generator, size: int = 5000) -> list[str]:
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 5)))))
    return sorted(words)


def templates(rng: np.random.Generator) -> dict[int, list[dict[str, np.ndarray]]]:
    """n -> TEMPLATES tree structures of n leaves (the columns `node_rows` stores)."""
    from sproutrag.trees.tree import build_tree

    out: dict[int, list[dict[str, np.ndarray]]] = {}
    for n in (2, 3, 4):
        out[n] = []
        for _ in range(TEMPLATES):
            i, j = np.triu_indices(n, 1)
            tree = build_tree(rng.normal(size=(n, 4)).astype(np.float32), i, j,
                              rng.uniform(0.1, 1, len(i)).astype(np.float32))
            out[n].append({c: getattr(tree, c) for c in (
                "parent", "left", "right", "height", "n_leaves", "leaf_start", "leaf_end",
                "merge_sim")})
    return out


def documents_batch(first: int, count: int, rng, words: list[str]):
    """(doc ids, texts, leaf spans (list of (n, 2) arrays), tree ids) of COUNT documents."""
    doc_ids = [f"corpus/part-{k % 97:02d}/doc-{k:08d}.txt" for k in range(first, first + count)]
    texts, spans = [], []
    sizes = rng.integers(2, 5, size=count)
    targets = rng.integers(300, 501, size=count)
    for n, target in zip(sizes.tolist(), targets.tolist()):
        leaves, pos, bounds = [], 0, []
        for k in range(n):
            want = (target - pos) // (n - k)
            leaf, length = [], -1
            while length < want - 4:
                word = words[int(rng.integers(0, len(words)))]
                leaf.append(word)
                length += len(word) + 1
            text = " ".join(leaf).capitalize() + "."
            leaves.append(text)
            bounds.append((pos, pos + len(text)))
            pos += len(text) + 1
        texts.append(" ".join(leaves))
        spans.append(np.asarray(bounds, dtype=np.int64))
    tree_ids = [f"{v:016x}" for v in rng.integers(0, 2**63, size=count).tolist()]
    return doc_ids, texts, spans, tree_ids


def node_table(doc_ids, texts, spans, tree_ids, rng, shapes, pool, schema) -> pa.Table:
    """The `nodes` rows of a batch, column by column (what `storage.rows.node_rows` writes
    for each document)."""
    sizes = np.asarray([len(s) for s in spans])
    totals = 2 * sizes - 1
    owner = np.repeat(np.arange(len(doc_ids)), totals)
    idx = np.arange(totals.sum()) - np.repeat(np.cumsum(totals) - totals, totals)
    picks = rng.integers(0, TEMPLATES, size=len(doc_ids))
    cols: dict[str, list] = {c: [] for c in shapes[2][0]}
    for n, t in zip(sizes.tolist(), picks.tolist()):
        for c, v in shapes[n][t].items():
            cols[c].append(v)
    cols = {c: np.concatenate(v) for c, v in cols.items()}
    leaf = idx < sizes[owner]
    flat = np.concatenate(spans)
    start = np.zeros(len(idx), dtype=np.int64)
    end = np.zeros(len(idx), dtype=np.int64)
    start[leaf], end[leaf] = flat[:, 0], flat[:, 1]
    leaf_text: list[str | None] = [None] * len(idx)
    for r, o, s, e in zip(np.flatnonzero(leaf).tolist(), owner[leaf].tolist(),
                          flat[:, 0].tolist(), flat[:, 1].tolist()):
        leaf_text[r] = texts[o][s:e]
    vectors = pool[rng.integers(0, len(pool), size=len(idx))]
    base = np.arange(len(idx)) - idx  # each row's tree's first row
    for k in range(int(sizes.min()), int(idx.max()) + 1):  # parents: their children's mean
        rows = np.flatnonzero(~leaf & (idx == k))
        left, right = base[rows] + cols["left"][rows], base[rows] + cols["right"][rows]
        vectors[rows] = (vectors[left] + vectors[right]) * np.float32(0.5)
    ids = pa.array(doc_ids).take(pa.array(owner))
    data = {
        "node_id": [f"{d}:{i}" for d, i in zip(ids.to_pylist(), idx.tolist())],
        "doc_id": ids, "tree_id": pa.array(tree_ids).take(pa.array(owner)),
        "idx": idx.astype(np.int32),
        **{c: cols[c].astype(np.int32) for c in ("parent", "left", "right", "height",
                                                  "n_leaves", "leaf_start", "leaf_end")},
        "merge_sim": pa.array(cols["merge_sim"], mask=np.isnan(cols["merge_sim"])),
        "start": pa.array(start, mask=~leaf), "end": pa.array(end, mask=~leaf),
        "text": leaf_text,
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
    }
    return pa.table(data, schema=schema)


def document_table(doc_ids, texts, spans, tree_ids, schema) -> pa.Table:
    from sproutrag.doc_keys import doc_keys

    now = datetime.now(UTC)
    known = {
        "doc_id": doc_ids, "source": [f"file:///{d}" for d in doc_ids],
        "content_hash": [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts],
        "text": texts, "n_chars": [len(t) for t in texts],
        "n_chunks": [len(s) for s in spans], "index_fingerprint": ["bench"] * len(doc_ids),
        "indexed_at": [now] * len(doc_ids), "tree_id": tree_ids,
        "doc_key": doc_keys(doc_ids),
    }
    data = {f.name: known.get(f.name, pa.nulls(len(doc_ids), f.type)) for f in schema}
    return pa.table(data, schema=schema)


def build(db: str, n_docs: int, seed: int = 0) -> None:
    import lancedb
    from sproutrag.schemas import tables

    from sproutrag.documents import content_hash

    assert content_hash("x") == hashlib.sha256(b"x").hexdigest(), "content_hash changed"
    rng = np.random.default_rng(seed)
    words, shapes = vocabulary(rng), templates(rng)
    pool = rng.normal(size=(POOL, DIM)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    meta = {"encoder_id": ENCODER, "dim": DIM}
    node_schema = tables.with_metadata(tables.nodes_schema(DIM), **meta)
    doc_schema = tables.with_metadata(tables.DOCUMENTS, **meta)
    conn = lancedb.connect(db)
    nodes = conn.create_table("nodes", schema=node_schema)
    docs = conn.create_table("documents", schema=doc_schema)
    t0 = time.perf_counter()
    for first in range(0, n_docs, BATCH_DOCS):
        batch = documents_batch(first, min(BATCH_DOCS, n_docs - first), rng, words)
        nodes.add(node_table(*batch, rng, shapes, pool, node_schema))
        docs.add(document_table(*batch, doc_schema))
        print(f"  built {first + len(batch[0]):,} documents ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr, flush=True)
    for tbl in (nodes, docs):
        tbl.optimize()
    from lancedb.index import BTree

    nodes.create_index("doc_id", config=BTree(), replace=True)
    print(f"  built in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM (getrusage's ru_maxrss is kept across
    execve on Linux, so a child started after building would report the builder's)."""
    try:
        with open("/proc/self/status") as status:
            line = next(x for x in status if x.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_new(db: str) -> dict:
    from sproutrag.storage.check import check_database

    t0 = time.perf_counter()
    report = check_database(db)
    return {"seconds": time.perf_counter() - t0, "rss_mb": peak_rss_mb(),
            "lines": report.lines(), "unconfirmed": report.unconfirmed}


def measure_old(db: str, docs: int, seconds: float) -> dict:
    from sproutrag.storage.check_fallback import check_tables, tree_problem
    from sproutrag.storage.store import Store

    t0 = time.perf_counter()
    check_tables(db, None)
    health_s = time.perf_counter() - t0
    store = Store.open_existing(db)
    rows = (store.table("documents").search().select(["doc_id", "tree_id", "text"])
            .limit(docs).to_arrow().to_pylist())
    t0, done = time.perf_counter(), 0
    for row in rows:
        assert tree_problem(store, row["doc_id"], row["tree_id"], row["text"]) is None
        done += 1
        if time.perf_counter() - t0 > seconds:
            break
    return {"health_s": health_s, "docs": done, "trees_s": time.perf_counter() - t0}


def child(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--db", help="database folder (built when absent; kept)")
    parser.add_argument("--keep", action="store_true", help="keep the database built")
    parser.add_argument("--old-docs", type=int, default=2000)
    parser.add_argument("--old-seconds", type=float, default=120)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--measure-old", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_new(args.measure)))
        return
    if args.measure_old:
        print(json.dumps(measure_old(args.measure_old, args.old_docs, args.old_seconds)))
        return
    folder = None if args.db else tempfile.mkdtemp(prefix="sproutrag-bench-check-")
    db = args.db or os.path.join(folder, "db")
    try:
        if not os.path.isdir(db):
            print(f"building {args.docs:,} documents in {db}", file=sys.stderr)
            build(db, args.docs)
        report(db, args)
    finally:
        if folder and not args.keep:
            shutil.rmtree(folder)


def report(db: str, args: argparse.Namespace) -> None:
    new = child("--measure", db)
    old = child("--measure-old", db, "--old-docs", str(args.old_docs),
                "--old-seconds", str(args.old_seconds))
    n_docs = int(new["lines"][-1].split(": ")[1].split(" documents")[0])
    per_doc = old["trees_s"] / max(old["docs"], 1)
    old_total = old["health_s"] + per_doc * n_docs
    print(new["lines"][-1])
    print(f"check_database: {new['seconds']:.1f} s, {n_docs / new['seconds']:,.0f} documents/s, "
          f"peak RSS {new['rss_mb']:,.0f} MB, unconfirmed flags {new['unconfirmed']}")
    print(f"old path: start-of-run reads {old['health_s']:.1f} s + load_tree "
          f"{per_doc * 1000:.1f} ms/document (timed on {old['docs']:,} documents) x "
          f"{n_docs:,} = {old_total:,.0f} s extrapolated ({old_total / 3600:.2f} h); "
          f"ratio old/new {old_total / new['seconds']:,.0f}x")


if __name__ == "__main__":
    main()
