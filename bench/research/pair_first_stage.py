"""How often the first stage ranks a two-document question's two documents first and
second, by question type, on the look-alike reports' splits (stop 84; a diagnostic for
the described pairs, docs/whole-corpus.md). Not a test.

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/pair_first_stage.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

SPLITS = ("train", "dev", "test", "holdout3", "holdout4", "holdout5")


def split_counts(split: str, settings, encoder) -> dict[str, list[int]]:
    """type -> [questions, first two are its documents, both among the first stage's]."""
    r, queries, vectors = H.open_pool("lookalike", split, settings, encoder)
    path = H.ROOT / "data" / "lookalike-reports" / f"{split}.queries.jsonl"
    types = {q["qid"]: q.get("type") for q in map(json.loads, open(path, encoding="utf-8"))}
    counts: dict[str, list[int]] = {}
    for q, v in zip(queries, vectors, strict=True):
        if len(q["doc_ids"]) != 2:
            continue
        with r._one_view():
            first = r.choose_documents(v, None, k=5, query=q["query"])
        c = counts.setdefault(types[q["qid"]], [0, 0, 0])
        c[0] += 1
        c[1] += set(first[:2]) == set(q["doc_ids"])
        c[2] += set(q["doc_ids"]) <= set(first)
    return counts


def main() -> None:
    settings, encoder = H.default_encoder()
    for split in SPLITS:
        counts = split_counts(split, settings, encoder)
        print(split, "; ".join(f"{t}: {n} questions, first two {a}, both chosen {b}"
                               for t, (n, a, b) in counts.items()), flush=True)


if __name__ == "__main__":
    main()
