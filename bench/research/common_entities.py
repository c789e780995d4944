"""Probe (issue 29, rule 37): do the question's entities that name a searched document
also have many writers in the whole corpus (a term, not a name)?

    PYTHONPATH=. .venv/bin/python bench/research/common_entities.py dev paragraphs named-contracts

A generic capitalised word ("USD", "GAAP", "MRI") that one searched document alone writes
names it by chance (rule 23), and a long named document is then searched alone (rule 31).
A name identifies few documents of the corpus; a term is written by many. Per pool,
through the shipped Retriever (alone off, so that every named document is seen): the
entities that have one holder among the searched documents, how many of them more than
`n_docs` documents of the corpus write (`FirstStage.writing`: the full-text index's 64
best leaves holding the words), and whether their holder is a gold document.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402


def probe(name: str, split: str, settings, encoder) -> dict:
    r, qs, qv, _ = H.open_probed_pool(name, split, settings, encoder)
    stats = dict(questions=0, naming=0, naming_gold=0, common=0, common_gold=0,
                 questions_changed=0)
    examples = []
    for q, v in zip(qs, qv, strict=True):
        stats["questions"] += 1
        with r._one_view():
            docs = r.choose_documents(v, None, k=5, query=q["query"])
            holders, _ = r.searching.holders(q["query"], r.documents.read(docs)[0], True)
            changed = False
            for entity, held in holders.items():
                if len(held) != 1:
                    continue
                gold = held[0] in q["doc_ids"]
                stats["naming"] += 1
                stats["naming_gold"] += gold
                if len(r.first.writing(entity)) > r.n_docs:
                    stats["common"] += 1
                    stats["common_gold"] += gold
                    changed = True
                    examples.append(entity)
            stats["questions_changed"] += changed
    stats["examples"] = sorted(set(examples))[:12]
    return stats


if __name__ == "__main__":
    raise SystemExit(H.probe_main(probe))
