"""Reading a JSONL corpus's documents again at their offsets, at 10^4-10^6 documents.

    PYTHONPATH=. .venv/bin/python bench/jsonl_read.py [--sizes 10000 100000 1000000]

An index run lists a JSONL corpus in one pass (`list_jsonl`: offsets and hashes) and
then reads the documents it needs one at a time (`read_jsonl`, seeking to each). For
each size, N generated documents of 300-500 characters (`bench/scale.py`'s) are written
to one file; the listing pass is the reference, and reading every document again should
cost about as much per document at every size. `--sample` documents spread over the
file are read (all of them when N is smaller), so that the reading side stays quick
where it is slow. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import fsspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from scale import make_docs, write_jsonl  # noqa: E402

from sproutrag.ingest.jsonl import list_jsonl, read_jsonl  # noqa: E402
from sproutrag.ingest.sources import DocLimits  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--sample", type=int, default=10_000, help="documents read again")
    args = ap.parse_args()
    fs, limits = fsspec.filesystem("file"), DocLimits()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = str(Path(tmp) / f"corpus-{n}.jsonl")
            write_jsonl(make_docs(n), Path(path))
            t0 = time.perf_counter()
            listed = list(list_jsonl(fs, path, path, limits))
            listing = time.perf_counter() - t0
            step = max(1, len(listed) // args.sample)
            todo = listed[::step]
            t0 = time.perf_counter()
            read = sum(1 for _ in read_jsonl(fs, path, path, todo, limits))
            reading = time.perf_counter() - t0
            per_list, per_read = listing / len(listed) * 1e6, reading / read * 1e6
            print(f"{n:>9,} documents ({Path(path).stat().st_size / 1e6:6.1f} MB): listed "
                  f"{per_list:6.1f} us/doc, read again {per_read:8.1f} us/doc ({read:,} read); "
                  f"read / list {per_read / per_list:6.2f}")


if __name__ == "__main__":
    main()
