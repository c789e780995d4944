"""Statistics from the leading documents (issue 29, rule 11 of docs/whole-corpus.md).

    PYTHONPATH=. .venv/bin/python bench/research/anchored_stats.py --fit   # train, then dev

Today a query's rank scores (z(cosine) + w z(BM25)) take BM25's collection and the
z-scores' mean and SD from the leaves of every searched document. "Anchored": they come
from the leading documents only, those in the given order (the first stage's, or the
query's doc_ids) until they hold at least M leaves, and every searched node is scored with
them. The shipped tree search then runs on these scores over the same documents, on the
pools of `hierarchy.py` (their databases under out/).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

from sproutrag.search import lexical  # noqa: E402
from sproutrag.search.node_scores import NodeScores, cosine_scores  # noqa: E402

GRID = (16, 32, 64, 128)


def leading(p: H.Pool, docs: list[str], m: float) -> list[str]:
    """DOCS in order until they hold at least M leaves."""
    out, leaves = [], 0
    for d in docs:
        if leaves >= m:
            break
        out.append(d)
        leaves += p.trees[d].n
    return out


def _z(values: dict[str, np.ndarray], anchor: list[str], p: H.Pool) -> dict[str, np.ndarray]:
    """(x - mean) / sd with mean and sd over the leaves of ANCHOR (sd 0 -> 1)."""
    leaves = np.concatenate([values[d][: p.trees[d].n] for d in anchor])
    mean, sd = (float(leaves.mean()), float(leaves.std())) if leaves.size else (0.0, 1.0)
    sd = sd if sd > 1e-9 else 1.0
    return {d: (x.astype(np.float64) - mean) / sd for d, x in values.items()}


def anchored_scores(p: H.Pool, docs: list[str], qvec: np.ndarray, query: str,
                    m: float) -> dict[str, NodeScores]:
    """Rank scores of every node of DOCS with the statistics of `leading(DOCS, M)`."""
    anchor = leading(p, docs, m)
    trees, terms = {d: p.trees[d] for d in docs}, {d: p.terms[d] for d in docs}
    cos = {d: cosine_scores(t.vectors, qvec, t.norms) for d, t in trees.items()}
    w = p.base.lexical_weight
    if w <= 0:
        return {d: NodeScores(c, c.astype(np.float64)) for d, c in cos.items()}
    n = sum(len(terms[d].lengths) for d in anchor)
    avg = max(sum(float(terms[d].lengths.sum()) for d in anchor) / max(n, 1), 1e-9)
    lengths = {d: lexical._subtree_sums(trees[d], terms[d].lengths) for d in docs}
    lex = {d: np.zeros(2 * trees[d].n - 1) for d in docs}
    for term in sorted(set(lexical.tokenize(query))):
        tfs = {d: terms[d].tf(term) for d in docs}
        if not any(tf.any() for tf in tfs.values()):
            continue
        idf = lexical._idf(int(sum((tfs[d] > 0).sum() for d in anchor)), n)
        for d in docs:
            tf = lexical._subtree_sums(trees[d], tfs[d])
            lex[d] += idf * tf * (lexical.K1 + 1) / (
                tf + lexical.K1 * (1 - lexical.B + lexical.B * lengths[d] / avg))
    zc, zl = _z(cos, anchor, p), _z(lex, anchor, p)
    return {d: NodeScores(cos[d], zc[d] + w * zl[d]) for d in docs}


def tree_row(p: H.Pool, scope: str, m: float, label: str = "") -> dict:
    """Tree mode over SCOPE's documents with anchored statistics (M inf: today's)."""
    def scores(n: int, k: int, docs: list[str]) -> dict[str, NodeScores]:
        if math.isinf(m):
            return p._scores[scope, n, k]
        return anchored_scores(p, docs, p.qvecs[n], p.queries[n]["query"], m)

    return p.row(label, H.tree_runs(p, scope, scores))


def fit(pools: list[H.Pool]) -> float:
    """Rule 11's fit: the largest M within one SE of the best mean IE (today's as inf)."""
    trials = []
    for m in (math.inf, *GRID):
        ies = [H.per_query(tree_row(p, "wide", m)) for p in pools]
        trials.append((m, ies))
        print(f"  train M {m:g}: " + " ".join(f"{100 * x.mean():5.1f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, lambda m: -m, "fit")


def compare(names: list[str], m: float, settings, encoder) -> None:
    """Dev: M against today's, paired, corpus-wide and within."""
    H.compare_dev(names, settings, encoder, f"M {m:g}",
                  lambda p, scope, on: tree_row(p, scope, m if on else math.inf))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--m", type=float, help="compare this M on dev without fitting")
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.fit:
        m = fit([H.Pool(n, *H.open_pool(n, "train", settings, encoder)) for n in args.pools])
    elif args.m:
        m = args.m
    else:
        ap.error("give --fit or --m M")
    compare(args.pools, m, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
