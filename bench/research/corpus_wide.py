"""How well does the search do over the whole corpus, without the query's doc_ids?

    PYTHONPATH=. .venv/bin/python bench/research/corpus_wide.py [--sets ...] [--splits dev]

The Retriever's two stages, in memory: the first stage takes the documents of the
max(50, 10 n_docs) nodes nearest the query (cosine over every node of every tree), the
first `n_docs` of them in that order; the shipped search (the packaged weights' mix and
search parameters) then runs over those documents. Flat: cosine over every leaf of the
set. Prints IE for n_docs 8 (the default) and 20, with the paired difference to flat
and how often every gold document was chosen. docs/results.md, "Searching the whole
corpus".
"""

from __future__ import annotations

import argparse

import numpy as np
from labelled_sets import KS, Split, each_split, parse_args, report, score

from sproutrag.encoder.weights import load_default_weights
from sproutrag.learn.variants import Variant, retrieve_flat, retrieve_tree, variant_trees


def options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n-docs", type=int, nargs="+", default=[8, 20],
                   help="documents the first stage passes on (8 20)")
    p.set_defaults(splits=["dev"])


def first_stage(trees: dict, qvec: np.ndarray, n_docs: int) -> list[str]:
    """The documents of the nodes nearest `qvec`, nearest first, at most n_docs."""
    ids = list(trees)
    vectors = np.concatenate([trees[d].vectors for d in ids])
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    owner = np.concatenate([[d] * len(trees[d].vectors) for d in ids])
    sims = vectors.astype(np.float32) @ (qvec / np.linalg.norm(qvec))
    top = np.argsort(-sims)[: max(50, 10 * n_docs)]
    return list(dict.fromkeys(owner[top].tolist()))[:n_docs]


def compare(s: Split, variant: Variant, n_docs_list: list[int]) -> None:
    trees = variant_trees(s.feats, variant)
    every = list(trees)
    flat_runs = {k: [retrieve_flat(s.feats, v, every, k=k) for v in s.qvecs] for k in KS}
    flat = score(f"{s.name} corpus-wide flat", flat_runs, s)
    report(flat)
    for n_docs in n_docs_list:
        runs: dict[int, list] = {k: [] for k in KS}
        chosen = 0
        for q, v in zip(s.queries, s.qvecs, strict=True):
            docs = first_stage(trees, v, n_docs)
            chosen += all(d in docs for d in q["doc_ids"])
            for k in KS:
                runs[k].append(retrieve_tree(trees, s.feats, v, docs, k=k,
                                             params=variant.search, query=q["query"]))
        name = (f"{s.name} corpus-wide tree n_docs={n_docs} "
                f"(gold documents chosen {chosen}/{len(s.queries)})")
        report(score(name, runs, s), flat)


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    args = parse_args(__doc__, argv, options)
    settings = load_settings(args.config)
    w = load_default_weights(settings.encoding.weights)
    variant = Variant("tree", mix=w.mix(), parent_embedding=settings.tree.parent_embedding,
                      search=w.search)
    for s in each_split(args):
        compare(s, variant, args.n_docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
