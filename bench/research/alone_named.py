"""Probe (issue 29, not a rule): when rule 31 searches the named documents alone, are they
the question's, and is one of them the first stage's first choice?

    PYTHONPATH=. .venv/bin/python bench/research/alone_named.py dev named-contracts long-pooled

A generic capitalised word ("MRI", "USD") that one searched document alone writes names
it by chance, and a long named document is searched alone: the question then gets no
other document's units. Per pool, through the shipped Retriever (alone off, so that the
named documents are seen): the questions searched alone, whether a named document is the
first stage's first choice, and whether every named document is gold. Also (stop 52) the
questions that name two or more searched documents holding fewer leaves than the floor
together (`short_pairs`: what "two named documents searched alone, whatever their size"
would change), and how many of them name only gold documents.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402


def probe(name: str, split: str, settings, encoder) -> dict:
    r, qs, qv, params = H.open_probed_pool(name, split, settings, encoder)
    stats = dict(questions=0, alone=0, first_named=0, first_named_gold=0, not_first=0,
                 not_first_gold=0, short_pairs=0, short_pairs_gold=0)
    for q, _, docs, found in H.each_found(r, qs, qv, params):
        stats["questions"] += 1
        if not found.long:
            if len(found.named) >= 2:
                stats["short_pairs"] += 1
                stats["short_pairs_gold"] += set(found.named) <= set(q["doc_ids"])
            continue
        stats["alone"] += 1
        gold = set(found.named) <= set(q["doc_ids"])
        key = "first_named" if docs[0] in found.named else "not_first"
        stats[key] += 1
        stats[f"{key}_gold"] += gold
    return stats


if __name__ == "__main__":
    raise SystemExit(H.probe_main(probe))
