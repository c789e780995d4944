"""Rule 62 of docs/whole-corpus.md: rule 61's name-free blend only in long documents that
open with the question's name (stop 77).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/opening_gate.py \
        --counts train|dev
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/opening_gate.py \
        --label gated [--sets named-contracts ...]
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/opening_gate.py --compare

A document is gated in for a question when it holds at least `ANCHOR_LEAVES` leaves and
one of the question's entities is written in its opening (the first `OPENING_CHARS` characters
of its leaves in order). `--counts` chunks each set's documents as the index does and
counts, among the question-document pairs whose question has entities, those gated in,
for floors of 16, 24 and 32 leaves and openings of 300, 600 and 1,000 characters (the
train split chose the rule's); on a dev split, per set of `name_free_runs` and for the
rule's gate, the pairs of a question's own documents and, an upper bound of what a
corpus-wide search can meet, of every document of the set. `--label gated` runs
`sproutrag evaluate --db DB --corpus-wide --modes tree` (`name_free_runs.run`) with the
tree search scoring a gated document's nodes by rule 61's blend (the other documents, the
first stage and BM25 keep the question's vector); `--compare` pairs those runs with rule
61's `before` runs. Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import name_free_runs as R  # noqa: E402

from sproutrag.search.entities import question_entities  # noqa: E402
from sproutrag.search.name_free import name_free, opens_with  # noqa: E402
from sproutrag.search.node_scores import ANCHOR_LEAVES  # noqa: E402

COUNT_SETS = {"paragraphs": "paragraphs", "hotpotqa": "hotpotqa", "contractnli": "contractnli",
              "named": "named-contracts"}


def _chunked(docs_file: Path) -> dict[str, list[str]]:
    from sproutrag.schemas.settings import ChunkingSettings

    from sproutrag.ingest.chunking import chunk_text

    cfg = ChunkingSettings().model_dump()
    out = {}
    for d in map(json.loads, open(docs_file, encoding="utf-8")):
        out[d["doc_id"]] = [d["text"][s:e] for s, e in chunk_text(d["text"], **cfg)]
    return out


def counts(split: str) -> None:
    if split == "train":
        import hierarchy as H

        for label, name in COUNT_SETS.items():
            docs_file, queries = ((H.SHARED / name / f"train.{x}.jsonl" for x in
                                   ("docs", "queries")) if name in R.BASES
                                  else H.pool_files(name, "train"))
            leaves = _chunked(docs_file)
            pairs, cells = 0, {}
            for q in map(json.loads, open(queries, encoding="utf-8")):
                ents = question_entities(q["query"])
                if not ents:
                    continue
                for d in q.get("doc_ids") or sorted({g["doc_id"] for g in q["gold"]}):
                    pairs += 1
                    for floor in (16, 24, 32):
                        for chars in (300, 600, 1000):
                            cells[floor, chars] = cells.get((floor, chars), 0) + opens_with(
                                leaves[d], len(leaves[d]), ents, floor, chars)
            print(f"{label} train: {pairs} pairs with entities; gated (leaves, characters): "
                  + ", ".join(f"{k}: {v}" for k, v in sorted(cells.items())))
        return
    for name in (*R.POOLS, *R.BASES):
        docs_file, queries, _ = R._files(name)
        leaves = _chunked(docs_file)
        long_open = {d: t for d, t in leaves.items() if len(t) >= ANCHOR_LEAVES}
        own = anywhere = n = 0
        for q in map(json.loads, open(queries, encoding="utf-8")):
            n += 1
            ents = question_entities(q["query"])
            mine = q.get("doc_ids") or sorted({g["doc_id"] for g in q["gold"]})
            own += sum(opens_with(leaves[d], len(leaves[d]), ents) for d in mine)
            anywhere += any(opens_with(t, len(t), ents) for t in long_open.values())
        print(f"{name} dev: {n} questions; gated pairs of their own documents {own}; "
              f"questions with a gated document anywhere in the set {anywhere}")


def _patch() -> None:
    from sproutrag.search.hits import hit_of, node_text
    from sproutrag.search.node_scores import node_scores
    from sproutrag.search.retriever import Retriever
    from sproutrag.search.tree_search import search_trees

    def vectors(self, query: str, qvec: np.ndarray, stored) -> dict[str, np.ndarray]:
        ents = question_entities(query)
        docs = [d for d, st in stored.items() if opens_with(st.texts, st.tree.n, ents)]
        free = name_free(query, ents) if docs else ""
        if not free or free == query:
            return {}
        f = np.asarray(self._embed([free])[0], dtype=np.float32)
        v = qvec / max(np.linalg.norm(qvec), 1e-12) + f / max(np.linalg.norm(f), 1e-12)
        v = (v / max(np.linalg.norm(v), 1e-12)).astype(np.float32)
        return {d: v for d in docs}

    def _tree(self, query, qvec, k, docs, params, ranked=False, allowed=None):
        found = self.searching.find(query, qvec, docs, params, ranked, allowed)
        stored = found.stored
        trees = {d: s.tree for d, s in stored.items()}
        own = vectors(self, query, qvec, stored)
        scores = node_scores(trees, qvec, query=query, lexical=found.lexical,
                             lexical_weight=params.lexical_weight, anchor=found.anchor,
                             doc_vectors=own) if own else found.scores
        chosen = search_trees(
            trees, qvec, k=k, params=params, query=query, lexical=found.lexical,
            reranker=self.reranker, scores=scores,
            node_text=lambda d, n: node_text(stored[d], n), fill=self.fills_k,
            anchor=found.anchor, links=found.links)
        return [hit_of(stored[c.doc_id], c) for c in chosen]

    Retriever._tree = _tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", choices=("train", "dev"))
    ap.add_argument("--label", choices=("gated",))
    ap.add_argument("--sets", nargs="+", default=[*R.POOLS, *R.BASES])
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.counts:
        counts(args.counts)
    if args.label:
        _patch()
        for name in args.sets:
            print(name, R.run(name, args.label), flush=True)
    if args.compare:
        R.compare("gated")


if __name__ == "__main__":
    main()
