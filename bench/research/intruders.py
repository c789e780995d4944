"""Where the paragraph pool's corpus-wide results that are not gold come from (stop 65).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/intruders.py [--splits train dev]

Searches each question of hotpotqa-paragraphs over the whole pool (the shipped Retriever,
tree mode, k = 5, no doc_ids) and sorts every hit whose paragraph is not one of the
question's two gold paragraphs into one of three kinds:

- `named by the question`: the paragraph's name (its title without a "(film)"-style
  qualifier, `sproutrag.names.document_name`) is written in the question ("James
  Hetfield", "Dilys Laye", "Diamond Cut"): HotpotQA's question names an entity whose own
  paragraph is not the labelled one;
- `writes a gold title`: the paragraph's text writes a gold paragraph's title ("Walking on
  Glass ... by Scottish writer Iain Banks"): a satellite of the gold entity;
- `other`: a look-alike by description ("a Jamaican reggae singer born in 1942 in
  Kingston").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools' files and databases

KINDS = ("gold", "named by the question", "writes a gold title", "other")


def kinds(split: str) -> Counter:
    from sproutrag.names import document_name, written_in

    def named_in(text: str, lowered: str) -> bool:  # TEXT's title written in LOWERED
        name = document_name(text)
        return name is not None and written_in(name, lowered)

    settings, encoder = H.default_encoder()
    retriever, queries, vectors = H.open_pool("paragraphs", split, settings, encoder)
    docs_path, _ = H.pool_files("paragraphs", split)
    texts = {}
    with open(docs_path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts[str(row["doc_id"])] = row["text"]
    count: Counter = Counter()
    for q, v in zip(queries, vectors, strict=True):
        gold = set(q["doc_ids"])
        question = q["query"].lower()
        for hit in retriever.search_vector(q["query"], v, k=5, doc_ids=None, mode="tree",
                                           allowed=None):
            if hit.doc_id in gold:
                count["gold"] += 1
            elif named_in(texts[hit.doc_id], question):
                count["named by the question"] += 1
            elif any(named_in(texts[g], texts[hit.doc_id].lower()) for g in gold):
                count["writes a gold title"] += 1
            else:
                count["other"] += 1
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", nargs="+", choices=("train", "dev"), default=["train", "dev"])
    args = ap.parse_args(argv)
    for split in args.splits:
        count = kinds(split)
        total = sum(count.values())
        print(f"paragraphs {split}: {total} hits; "
              + ", ".join(f"{k} {count[k]} ({100 * count[k] / total:.0f}%)" for k in KINDS),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
