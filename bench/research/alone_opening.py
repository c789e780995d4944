"""Rule 65 of docs/whole-corpus.md: rule 31's "alone" past a shorter floor, where each
named document opens with the question's name (stop 78).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_opening.py \
        --counts train|dev
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_opening.py \
        --label today|rule65 --split train|dev [--pools named-contracts ...]
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_opening.py \
        --compare --split train|dev
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/alone_opening.py --timing

Per pool (paragraphs, hotpot-pooled, long-pooled, named-contracts) of the split, through
the shipped Retriever with "alone" off (`hierarchy.open_probed_pool`): the questions
whose named documents (`Searched.named`) hold fewer than `ANCHOR_LEAVES` leaves together
but at least FLOOR (16, 8), each of them writing an entity of the question in its opening
(`name_free.opens_with`, its first 300 characters), and how many of those name only gold
documents. `--label` runs `sproutrag evaluate --db --corpus-wide --modes tree` on each
pool's split (its `hierarchy.open_pool` database), `rule65` with the Retriever's `alone`
patched in this process to search the gated questions' named documents alone (floor
16), `today` with the shipped search; `--compare` pairs them per question. Train runs
under out/alone-opening/; dev runs (`rule65` only) through `name_free_runs.run`, on rule
62's databases, paired with its `gated` runs (the paragraph pool: rule 61's `before`),
today's search. `--timing`: the shipped search of the named agreements' dev questions
(corpus-wide, tree mode, k = 5, encoded beforehand) with `alone_opening_leaves` 16 and
0, alternating per question in one process, three passes: p50 and p95 milliseconds
each. Not a test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402

from sproutrag.search.entities import question_entities  # noqa: E402
from sproutrag.search.name_free import all_open_with  # noqa: E402
from sproutrag.search.node_scores import ANCHOR_LEAVES  # noqa: E402

POOLS = ("paragraphs", "hotpot-pooled", "long-pooled", "named-contracts")
FLOORS = (16, 8)
#: The rule's floor.
FLOOR = 16
OUT = H.OUT / "alone-opening"


def opening_named(found, query: str, floor: int) -> bool:
    """Whether FOUND's named documents hold FLOOR leaves or more together but fewer than
    `ANCHOR_LEAVES` (not `Searched.long`), and each opens with an entity of QUERY (the
    shipped test, `name_free.all_open_with`)."""
    return all_open_with(found.stored, found.named, question_entities(query), floor,
                         ANCHOR_LEAVES)


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


def _patch() -> None:
    from sproutrag.search.searched import SearchedDocuments

    find, alone = SearchedDocuments.find, SearchedDocuments.alone

    def patched_find(self, query, *args, **kwargs):
        self.rule65_query = query
        return find(self, query, *args, **kwargs)

    def patched_alone(self, found):
        got = alone(self, found)
        if (got is None and self.settings.mention_alone
                and opening_named(found, self.rule65_query, FLOOR)):
            return [d for d in found.docs if d in found.named]
        return got

    SearchedDocuments.find, SearchedDocuments.alone = patched_find, patched_alone


def run(name: str, split: str, label: str) -> Path:
    import name_free_runs as R

    if split == "dev":  # rule 62's databases and runs: its `gated` runs are today's search
        return R.run(name, label)
    docs, queries = H.pool_files(name, split)
    db = H.OUT / f"db-hierarchy-{name}-{split}"
    if not (db / ".complete").is_file():
        H.open_pool(name, split, *H.default_encoder())  # indexes it
    return R.evaluate(docs, queries, db, OUT / f"cache-{name}-{split}",
                      OUT / f"{name}-{split}-{label}")


def compare(split: str) -> None:
    from paired_results import database_rows, per_query

    for name in POOLS:
        paths = ([OUT / f"{name}-{split}-{x}" / "results.json" for x in ("today", "rule65")]
                 if split == "train" else
                 [H.ROOT / "out" / "name-free" / f"{name}-{x}" / "results.json"
                  for x in ("before" if name == "paragraphs" else "gated", "rule65")])
        if not all(p.is_file() for p in paths):
            print(f"{name} {split}: not run")
            continue
        b, a = (database_rows(str(p))["tree corpus-wide"] for p in paths)
        cells = []
        for metric in ("ie", "char_ie"):
            x, y = per_query(a, metric), per_query(b, metric)
            d = 100 * np.array([x[q] - y[q] for q in sorted(x)])
            se = d.std(ddof=1) / np.sqrt(len(d))
            cells.append(f"{metric} {100 * np.mean(list(y.values())):.2f} -> "
                         f"{100 * np.mean(list(x.values())):.2f} ({d.mean():+.2f} +/- {se:.2f},"
                         f" {d.mean() / se if se else 0:+.1f} SE; {int((d != 0).sum())} changed)")
        print(f"{name} {split} corpus-wide: " + "; ".join(cells))


def timing(passes: int = 3) -> None:
    import time

    import name_free_runs as R

    from sproutrag import Retriever
    from sproutrag.learn.datasets import read_jsonl

    _, queries, db = R._files("named-contracts")
    qs = [q["query"] for q in read_jsonl(queries)]
    on, off = (Retriever(str(db), alone_opening_leaves=n) for n in (16, 0))
    vecs = on._embed(qs)
    ms: dict[int, list[float]] = {16: [], 0: []}
    for _ in range(passes):
        for q, v in zip(qs, vecs, strict=True):
            for n, r in ((16, on), (0, off)):
                t0 = time.perf_counter()
                r.search_vector(q, v, k=5)
                ms[n].append(1000 * (time.perf_counter() - t0))
    warm = {n: xs[len(qs):] for n, xs in ms.items()}  # the first pass warms the caches
    for n, xs in warm.items():
        print(f"alone_opening_leaves {n}: p50 {np.percentile(xs, 50):.1f} ms, "
              f"p95 {np.percentile(xs, 95):.1f} ms ({len(xs)} searches after a first pass)")
    print(f"p50 16 / 0: {np.percentile(warm[16], 50) / np.percentile(warm[0], 50):.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", choices=("train", "dev"))
    ap.add_argument("--label", choices=("today", "rule65"))
    ap.add_argument("--split", choices=("train", "dev"), default="train")
    ap.add_argument("--pools", nargs="+", default=list(POOLS))
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--timing", action="store_true")
    args = ap.parse_args()
    if args.timing:
        timing()
    if args.counts:
        counts(args.counts)
    if args.label == "rule65":
        _patch()
    if args.label:
        for name in args.pools:
            print(name, args.split, run(name, args.split, args.label), flush=True)
    if args.compare:
        compare(args.split)


if __name__ == "__main__":
    main()
