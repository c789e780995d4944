"""Probe (issue 29, not a rule): would the documents that write the leading document's
name bring the gold documents a corpus-wide search still misses?

    PYTHONPATH=. .venv/bin/python bench/research/back_links.py train paragraphs hotpot-pooled

Per pool, through the shipped Retriever: the questions with a gold document missing from
the searched documents (after today's fetches), and how many of those missing documents
write the name of the best unit's document (the full-text index's `FirstStage.writing`),
first in that list or anywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

from sproutrag.search.links import best_leaf  # noqa: E402
from sproutrag.search.node_scores import node_scores  # noqa: E402


def probe(name: str, split: str, settings, encoder) -> dict:
    r, qs, qv = H.open_pool(name, split, settings, encoder)
    params = r._resolve()[0]
    stats = dict(questions=0, missing=0, written=0, first=0, fires=0)
    for q, v in zip(qs, qv, strict=True):
        stats["questions"] += 1
        with r._one_view():
            docs = r.choose_documents(v, None, k=5, query=q["query"])
            f = r.searching.find(q["query"], v, docs, params, True)
            stored = f.stored
            scores = node_scores({d: st.tree for d, st in stored.items()}, v,
                                 query=q["query"], lexical=f.lexical,
                                 lexical_weight=params.lexical_weight, anchor=f.anchor)
            best = best_leaf({d: s.rank[: stored[d].tree.n] for d, s in scores.items()})
            leader = r.documents.name(best[0], f.loaded[best[0]][0]) if best else None
            writers = ([d for d in r.first.writing(leader) if d not in stored]
                       if leader else [])
        missing = [g for g in q["doc_ids"] if g not in stored]
        stats["fires"] += bool(writers)
        if missing:
            stats["missing"] += 1
            stats["written"] += any(g in writers for g in missing)
            stats["first"] += bool(writers) and writers[0] in missing
    return stats


if __name__ == "__main__":
    raise SystemExit(H.probe_main(probe))
