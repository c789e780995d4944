"""How often does an entity of the question that two or more searched documents write
name one of them anyway (issue 29; exploration before a rule)?

    PYTHONPATH=. .venv/bin/python bench/research/dominant_holders.py --split train

Rule 23 names a document only when it is the only searched one that writes an entity of
the question. A report that cites a competitor, a case that cites another party, a
paragraph that names the next hop's title all write an entity that another document is
about. Per pool and split, corpus-wide through the pool database's Retriever (the
searched documents after the fetch): the questions with such an entity and no named
document, and how often the document that writes it most often (by at least R times the
next) is one of the question's gold documents, against any other holder.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402
import mentions as M  # noqa: E402

from sproutrag.search.entities import question_entities  # noqa: E402

RATIOS = (1.0, 2.0, 3.0, 5.0)


def survey(name: str, split: str, settings, encoder) -> None:
    r, queries, qvecs = H.open_pool(name, split, settings, encoder)
    r.mention_alone = False  # else a search alone re-reads the named ones, unranked
    params, _ = r._resolve()
    stats: Counter = Counter()
    for q, v in zip(queries, qvecs, strict=True):
        gold = set(q["doc_ids"])
        with r._one_view():
            docs = r.choose_documents(v, None, k=5, query=q["query"])
            found = r.searching.find(q["query"], v, docs, params, True)
            texts = r.searching._word_texts(found.loaded)
        stats["queries"] += 1
        stats["named"] += bool(found.named)
        stats["named gold"] += bool(set(found.named) & gold)
        shared = []
        for e in question_entities(q["query"]):
            counts = sorted(((t.count(f" {e} "), d) for d, t in texts.items()
                             if f" {e} " in t), reverse=True)
            if len(counts) >= 2:
                shared.append(counts)
        if not shared:
            continue
        stats["shared"] += 1
        if found.named:
            continue
        stats["shared, none named"] += 1
        stats["shared, none named, a holder gold"] += any(
            d in gold for c in shared for _, d in c)
        for ratio in RATIOS:
            picks = {c[0][1] for c in shared if c[0][0] >= ratio * c[1][0]
                     and c[0][0] > c[1][0]}
            if picks:
                stats[f"dominant x{ratio:g}"] += 1
                stats[f"dominant x{ratio:g} gold"] += bool(picks & gold)
                stats[f"dominant x{ratio:g} all gold"] += picks <= gold
    print(f"{name} {split}: " + ", ".join(f"{k} {v}" for k, v in stats.items()), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="train")
    ap.add_argument("--pools", nargs="+", default=M.POOLS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    for name in args.pools:
        survey(name, args.split, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
