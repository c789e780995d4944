"""Issue 29 at a larger corpus: does corpus-wide search keep its quality when the
paragraph pool is one document in many?

    PYTHONPATH=. .venv/bin/python bench/research/pool_growth.py dev --generated 10000

Writes `out/data/paragraphs-grown-<split>-<n>/` (docs and queries, as `sproutrag evaluate`
reads them): the paragraph pool's split (HotpotQA's paragraphs with the 8 look-alikes
chosen for each question), the other split's paragraphs (500 more real Wikipedia
paragraphs of other questions, ids prefixed "other-"), and N generated documents of
300-500 characters (`bench/scale.py`'s: the sample contracts' sentences with varying
parties and figures, ids "doc-..."). The questions and their gold are the split's own;
nothing added is labelled, so anything the added documents win counts as lost. Then
prints the command that indexes it and evaluates corpus-wide; pair its results.json with
the pool's own (`paired_results.py GROWN BASE`): the within-document rows do not change
(their doc_ids are the same), the corpus-wide ones say what a corpus 20x or 200x the pool
costs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from scale import make_docs, write_jsonl  # noqa: E402

from sproutrag.learn.datasets import read_jsonl as read  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "hotpotqa-paragraphs"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("split", choices=("train", "dev"))
    ap.add_argument("--generated", type=int, default=10_000, help="generated documents added")
    ap.add_argument("--no-other", action="store_true", help="leave the other split out")
    args = ap.parse_args(argv)
    other = "train" if args.split == "dev" else "dev"
    docs = read(SHARED / f"{args.split}.docs.jsonl")
    if not args.no_other:
        docs += [{**d, "doc_id": f"other-{d['doc_id']}"}
                 for d in read(SHARED / f"{other}.docs.jsonl")]
    docs += make_docs(args.generated, seed=29)
    tag = f"{args.split}-{args.generated}" + ("" if args.no_other else "-other")
    out = ROOT / "out" / "data" / f"paragraphs-grown-{tag}"
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(docs, out / f"{args.split}.docs.jsonl")
    (out / f"{args.split}.queries.jsonl").write_bytes(
        (SHARED / f"{args.split}.queries.jsonl").read_bytes())
    print(f"{len(docs):,} documents -> {out}")
    print(f"HF_HUB_OFFLINE=1 .venv/bin/sproutrag evaluate --docs {out}/{args.split}.docs.jsonl"
          f" --queries {out}/{args.split}.queries.jsonl --k 1 3 5 --modes tree"
          f" --db out/db-grown-{tag} --corpus-wide --cache .eval-cache"
          f" --out out/grown-{tag} --budgets 500 1000 2000")


if __name__ == "__main__":
    main()
