"""Probe (issue 29, not a rule): does the pair of searched documents that together write
the most of the question's words find a question's two gold documents more often than
the shipped search's first two documents?

    PYTHONPATH=. .venv/bin/python bench/research/pair_coverage.py train paragraphs

A bridge or comparison question is answered by two documents, and each look-alike
HotpotQA chose for it shares some of its words; the gold pair together may write more
of them than any look-alike with either. Per question of a pool, through the shipped
Retriever: the documents it searches (after the fetch), the first two distinct documents
of its k = 5 answer ("today's pair"), and the pair of searched documents whose words
cover the most of the question's BM25 terms, each weighted by its IDF among the searched
documents (ties: the pair today's order ranks first). Counts how often each pair is the
gold pair, for questions with two gold documents both searched; `-v` prints each
question's case by qid.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

VERBOSE = "-v" in sys.argv  # print each question's qid and case
if VERBOSE:
    sys.argv.remove("-v")

from sproutrag.search.lexical import tokenize  # noqa: E402


def coverage_pair(terms: set[str], doc_terms: dict[str, set[str]], order: list[str]
                  ) -> tuple[str, ...]:
    """The pair of ORDER's documents whose terms cover the most IDF-weighted TERMS."""
    n = len(order)
    idf = {t: math.log((n + 1) / (0.5 + sum(t in doc_terms[d] for d in order)))
           for t in terms}
    best, best_score = (), -1.0
    for a, b in itertools.combinations(order, 2):  # order's first pair wins ties
        score = sum(idf[t] for t in terms if t in doc_terms[a] or t in doc_terms[b])
        if score > best_score + 1e-9:
            best, best_score = (a, b), score
    return best


def probe(name: str, split: str, settings, encoder) -> dict:
    r, questions = H.found_questions(name, split, settings, encoder)
    stats = dict(questions=0, both_searched=0, today_pair_gold=0, coverage_pair_gold=0,
                 coverage_only=0, today_only=0)
    for q, v, _, found in questions:
        gold = set(q["doc_ids"])
        if len(gold) != 2:
            continue
        stats["questions"] += 1
        if not gold <= set(found.docs):
            if VERBOSE:
                print(f"  {q['qid']} not-both-searched", flush=True)
            continue
        stats["both_searched"] += 1
        hits = r.search_vector(q["query"], v, k=5)  # in the view each_found holds
        texts = {d: r.document_text(d, tid) for d, (tid, _) in found.loaded.items()}
        ranked = list(dict.fromkeys(h.doc_id for h in hits))
        order = ranked + [d for d in found.docs if d not in ranked]
        today = set(ranked[:2])
        cover = set(coverage_pair(set(tokenize(q["query"])),
                                  {d: set(tokenize(texts[d])) for d in order}, order))
        stats["today_pair_gold"] += today == gold
        stats["coverage_pair_gold"] += cover == gold
        stats["coverage_only"] += cover == gold and today != gold
        stats["today_only"] += today == gold and cover != gold
        if VERBOSE:
            print(f"  {q['qid']} {'pair-gold' if today == gold else 'pair-wrong'}", flush=True)
    return stats


if __name__ == "__main__":
    raise SystemExit(H.probe_main(probe))
