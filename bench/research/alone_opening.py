"""Rule 65 of docs/whole-corpus.md: rule 31's "alone" past a shorter floor, where each
named document opens with the question's name (stop 78).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_opening.py \
        --counts train|dev

Per pool (paragraphs, hotpot-pooled, long-pooled, named-contracts) of the split, through
the shipped Retriever with "alone" off (`hierarchy.open_probed_pool`): the questions
whose named documents (`Searched.named`) hold fewer than `ANCHOR_LEAVES` leaves together
but at least FLOOR (16, 8), each of them writing an entity of the question in its opening
(`name_free.opens_with`, its first 300 characters), and how many of those name only gold
documents. Not a test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

from sproutrag.search.entities import question_entities  # noqa: E402
from sproutrag.search.name_free import opens_with  # noqa: E402
from sproutrag.search.node_scores import ANCHOR_LEAVES  # noqa: E402

POOLS = ("paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
FLOORS = (16, 8)


def opening_named(found, query: str, floor: int) -> bool:
    """Whether FOUND's named documents hold FLOOR leaves or more together but fewer than
    `ANCHOR_LEAVES` (not `Searched.long`), and each opens with an entity of QUERY."""
    named, stored = found.named, found.stored
    held = sum(stored[d].tree.n for d in named)
    ents = question_entities(query)
    return (bool(named) and not found.long and floor <= held < ANCHOR_LEAVES
            and all(opens_with(stored[d].texts, stored[d].tree.n, ents, floor=1)
                    for d in named))


def counts(split: str) -> None:
    settings, encoder = H.default_encoder()
    for name in POOLS:
        r, qs, qv, params = H.open_probed_pool(name, split, settings, encoder)
        n, cells = 0, {f: [0, 0] for f in FLOORS}
        for q, _, _, found in H.each_found(r, qs, qv, params):
            n += 1
            for f in FLOORS:
                if opening_named(found, q["query"], f):
                    cells[f][0] += 1
                    cells[f][1] += set(found.named) <= set(q["doc_ids"])
        print(f"{name} {split}: {n} questions; gated in at floor "
              + ", ".join(f"{f}: {a} ({g} naming only gold documents)"
                          for f, (a, g) in cells.items()), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", choices=("train", "dev"), required=True)
    counts(ap.parse_args().counts)


if __name__ == "__main__":
    main()
