"""Index one large document through the real CLI: wall time, peak memory, and the memory
one document can take (the bound behind `pipeline.max_doc_chars`).

    .venv/bin/python bench/big_document.py [--chars 250000 1000000]

The document is generated from the sample corpus's sentences, shuffled, so it reads like
a long contract. Each index runs as a child process (`sproutrag index`) under a small
wrapper that reports the peak resident memory of the indexing process
(getrusage(RUSAGE_CHILDREN) in the wrapper). The reference, in the same run, is the same
command on a one-sentence document: the fixed memory of the process (torch, the model,
spaCy, Prefect). The figure that bounds a document is the slope between the sizes,
bytes of peak memory per character; times `pipeline.max_doc_chars` (the largest document
a run accepts) plus the reference it gives the worst peak one document can cause.
Targets (issues 12 and 23): < 90 s and < 3 GB at 1,000,000 characters; the projected
peak at the default max_doc_chars within a 24 GB machine.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Runs its arguments as a child and prints the child's peak RSS (kB) on stderr.
PEAK_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


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


def index_one(text: str, tmp: Path, name: str) -> dict:
    """`sproutrag index` of a corpus holding TEXT alone: seconds, peak kB, output."""
    corpus = tmp / f"corpus-{name}"
    corpus.mkdir()
    (corpus / "big.txt").write_text(text, encoding="utf-8")
    env = {**os.environ, "SPROUTRAG_PIPELINE__PROGRESS": "false"}
    cmd = [sys.executable, "-c", PEAK_WRAPPER, sys.executable, "-m", "sproutrag.flows.cli", "index",
           str(corpus), "--db", str(tmp / f"db-{name}")]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    peak = [ln for ln in proc.stderr.splitlines() if ln.startswith("PEAK_KB")]
    out = proc.stdout + proc.stderr
    return {
        "code": proc.returncode, "seconds": seconds,
        "peak_kb": int(peak[-1].split()[1]) if peak else 0,
        "summary": next((ln for ln in proc.stdout.splitlines() if ln.startswith("indexed")),
                        out[-3000:]),
        "stages": next((ln.strip() for ln in reversed(out.splitlines())
                        if ln.strip().startswith("stages:")), ""),
    }


def main() -> None:
    from sproutrag.schemas.settings import PipelineSettings

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chars", type=int, nargs="+", default=[250_000, 1_000_000],
                    help="document sizes to index, smallest first (default 250000 1000000)")
    args = ap.parse_args()
    sizes = sorted(args.chars)
    limit = PipelineSettings.model_fields.get("max_doc_chars")
    max_chars = limit.default if limit is not None else None
    with tempfile.TemporaryDirectory() as tmp:
        ref = index_one("One short sentence to index.", Path(tmp), "reference")
        print(f"reference (one sentence): exit {ref['code']}, {ref['seconds']:.1f} s, "
              f"peak {ref['peak_kb'] / 1e6:.2f} GB")
        runs = []
        for n in sizes:
            r = index_one(make_document(n), Path(tmp), str(n))
            runs.append((n, r))
            print(f"\ndocument: {n:,} characters; exit code {r['code']}")
            print(r["summary"])
            if r["stages"]:
                print(r["stages"])
            extra = (r["peak_kb"] - ref["peak_kb"]) * 1e3
            print(f"wall time {r['seconds']:.1f} s ({r['seconds'] / ref['seconds']:.1f}x the "
                  f"reference); peak RSS {r['peak_kb'] / 1e6:.2f} GB, "
                  f"{extra / 1e6:+.0f} MB over the reference = {extra / n:.0f} bytes/char")
            if n >= 1_000_000:
                ok = r["seconds"] < 90 and r["peak_kb"] < 3e6
                print(f"targets at 1M characters (< 90 s, < 3 GB): {'OK' if ok else 'MISSED'}")
    if len(runs) >= 2:
        (n0, r0), (n1, r1) = runs[0], runs[-1]
        slope = (r1["peak_kb"] - r0["peak_kb"]) * 1e3 / (n1 - n0)
        print(f"\nmemory per character of one document (slope {n0:,} -> {n1:,}): "
              f"{slope:.0f} bytes/char")
        if max_chars:
            worst = ref["peak_kb"] * 1e3 + max(slope, 0) * max_chars
            print(f"projected peak at pipeline.max_doc_chars = {max_chars:,}: "
                  f"{worst / 1e9:.1f} GB (a 24 GB machine: "
                  f"{'fits' if worst < 24e9 else 'does NOT fit: lower max_doc_chars'})")


if __name__ == "__main__":
    main()
