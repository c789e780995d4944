"""Probe (issue 29, not a rule): would the question's words that the leading document
does not write find a bridge question's missing paragraph?

    PYTHONPATH=. .venv/bin/python bench/research/residual_fetch.py train paragraphs

A bridge question's second paragraph is often not searched (it ranks 10-36 in the first
stage on the paragraph pool's train split). Per question of a pool, through the shipped
Retriever: the leading document (the first hit of its k = 5 answer), the question's words
none of whose terms that document writes (the "residual"), and the first document of the
full-text index's ranking for the residual (`FirstStage.ranked_by_text`, 64 leaves) that
is not searched already. Counts how often that document is gold, and how often it is
gold for a question whose gold documents are not all searched.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

from sproutrag.search.lexical import tokenize, words  # noqa: E402

LIMIT = 64  # leaves of the full-text ranking read


def residual(query: str, written: set[str]) -> list[str]:
    """QUERY's words none of whose terms are in WRITTEN (a document's terms)."""
    return [w for w in words(query) if tokenize(w) and not set(tokenize(w)) & written]


def probe(name: str, split: str, settings, encoder) -> dict:
    r, questions = H.found_questions(name, split, settings, encoder)
    stats = dict(questions=0, gold_missing=0, fetched_gold=0, fetched_gold_missing=0,
                 fetched_other=0, nothing=0)
    for q, v, _, found in questions:
        stats["questions"] += 1
        gold, searched = set(q["doc_ids"]), set(found.docs)
        missing = bool(gold - searched)
        stats["gold_missing"] += missing
        hits = r.search_vector(q["query"], v, k=5)  # in the view each_found holds
        if not hits:
            stats["nothing"] += 1
            continue
        lead = hits[0].doc_id
        rest = residual(q["query"], set(tokenize(r.document_text(lead, found.loaded[lead][0]))))
        new = ([d for d in r.first.ranked_by_text(" ".join(rest), LIMIT) if d not in searched]
               if rest else [])
        if not new:
            stats["nothing"] += 1
        elif new[0] in gold:
            stats["fetched_gold"] += 1
            stats["fetched_gold_missing"] += missing
        else:
            stats["fetched_other"] += 1
    return stats


if __name__ == "__main__":
    raise SystemExit(H.probe_main(probe))
