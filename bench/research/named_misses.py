"""Probe (issue 29, not a rule): the named-agreement questions that are not searched
alone (rule 31) - why?

    PYTHONPATH=. .venv/bin/python bench/research/named_misses.py train named-contracts

Every named-contracts question names the party of each agreement it asks about, and a
named agreement is searched alone, exactly as within it, when the named documents hold
32 leaves together (rule 31's floor). Per question, through the shipped Retriever:
whether it was searched alone; if not, whether it named only gold agreements (then
under the floor: fewer than 16 leaves, or 16-31), else its entities, which searched
documents write each (`SearchedDocuments.holders`), whether each gold agreement was
searched and whether it writes an entity of the question. Counts by cause, and prints
the questions with `-v`.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

VERBOSE = "-v" in sys.argv
if VERBOSE:
    sys.argv.remove("-v")


def probe(name: str, split: str, settings, encoder) -> dict:
    r, qs, qv, params = H.open_probed_pool(name, split, settings, encoder)  # "alone" off
    causes: Counter = Counter()
    for q, _, _, found in H.each_found(r, qs, qv, params):
        gold = set(q["doc_ids"])
        if found.long:  # the shipped search (rule 31 on) searches the named alone
            causes["alone" if set(found.named) <= gold else "alone, not gold"] += 1
            continue
        holders, _ = r.searching.holders(q["query"], found.loaded, True)
        if found.named and set(found.named) <= gold:
            leaves = sum(found.stored[d].tree.n for d in found.named)
            cause = f"named only gold, under the floor ({'<16' if leaves < 16 else '16-31'})"
        elif not holders:
            cause = "no entity"
        elif not gold <= set(found.docs):
            cause = "a gold agreement not searched"
        elif not gold & {d for ds in holders.values() for d in ds}:
            cause = "gold writes no entity"
        elif any(len(ds) > 1 and gold & set(ds) for ds in holders.values()):
            cause = "entity shared with another agreement"
        else:
            cause = "other"
        causes[cause] += 1
        if VERBOSE:
            print(f"  [{cause}] {q['query'][:90]!r} gold={sorted(gold)} "
                  f"holders={ {e: ds for e, ds in holders.items()} } named={found.named}",
                  flush=True)
    return dict(causes)


if __name__ == "__main__":
    raise SystemExit(H.probe_main(probe))
