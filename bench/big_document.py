"""Index one 1,000,000-character document through the real CLI and report peak memory.

    .venv/bin/python bench/big_document.py [--chars 1000000]

The document is generated from the sample corpus's sentences, shuffled, so it reads like
a long contract. The index runs as a child process (`sproutrag index`), and its peak
resident memory is read with getrusage(RUSAGE_CHILDREN). Targets (issue 12): < 90 s, < 3 GB.
"""

from __future__ import annotations

import argparse
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


def make_document(n_chars: int, seed: int = 0) -> str:
    files = (ROOT / "data" / "sample").rglob("*.txt")
    text = " ".join(p.read_text(encoding="utf-8") for p in files)
    sentences = [s.strip() for s in re.split(r"(?<=[.;:])\s+", text) if len(s.strip()) > 20]
    rng = random.Random(seed)
    parts, size, k = [], 0, 0
    while size < n_chars:
        para = " ".join(rng.choice(sentences) for _ in range(rng.randint(2, 6)))
        k += 1
        block = f"{k}. {para}\n\n"
        parts.append(block)
        size += len(block)
    return "".join(parts)[:n_chars]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chars", type=int, default=1_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        (corpus / "big.txt").write_text(make_document(args.chars), encoding="utf-8")
        env = {**os.environ, "SPROUTRAG_PIPELINE__PROGRESS": "false"}
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "flows.cli", "index", str(corpus), "--db", f"{tmp}/db"],
            env=env, capture_output=True, text=True,
        )
        seconds = time.perf_counter() - t0
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("indexed")]
        stages = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines()
                  if ln.strip().startswith("stages:")]
        print(f"document: {args.chars:,} characters; exit code {proc.returncode}")
        print(summary[0] if summary else proc.stderr[-3000:])
        if stages:
            print(stages[-1])
        print(f"wall time {seconds:.1f} s; peak RSS of the indexing process {peak_kb / 1e6:.2f} GB"
              f" (target < 3 GB): {'OK' if peak_kb < 3e6 else 'OVER'}")


if __name__ == "__main__":
    main()
