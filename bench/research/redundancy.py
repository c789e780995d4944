"""Units that repeat a taken unit of another document compete lower (issue 29, rule 19 of
docs/results.md).

    PYTHONPATH=. .venv/bin/python bench/research/redundancy.py --fit    # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/redundancy.py --point 1 others  # dev only
    PYTHONPATH=. .venv/bin/python bench/research/redundancy.py --cohesion-fit  # rule 21

Variant "redundancy" (maximal marginal relevance over the taken units): while tree mode
spends its k units (`select_evidence`, then `fill_to_k`), a candidate node of document d
competes at its rank score less mu x its largest cosine with a unit already taken (the
stored vectors, normalised); scope "others": taken units of other documents only; "all":
every taken unit. Everything else is today's search through each pool's database
`Retriever` (first stage, anchored statistics, fetch, links), within each query's
documents and corpus-wide. The fit's objective is the mean corpus-wide tree unit IE over
the three train pools; the simplest point (least mu, then "others") within one SE of the
best is compared with today's on dev, paired.

Rule 21 (`--cohesion-fit`), corpus-wide only: a candidate of a document that already
holds a taken unit competes at its rank score plus beta (once, not per unit).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

import sproutrag.search.tree_search as TS  # noqa: E402

MUS = (0.5, 1.0, 2.0, 4.0)
SCOPES = ("others", "all")
BETAS = (0.25, 0.5, 1.0, 2.0, 4.0)
#: The variant every search of this process runs: redundancy (mu, scope) and cohesion
#: (beta); both 0 is today's.
VARIANT: dict[str, Any] = {"mu": 0.0, "scope": "others", "beta": 0.0}
#: Today's search as a redundancy point (mu, scope).
TODAY = (0.0, "others")
_SELECT, _FILL = TS.select_evidence, TS.fill_to_k


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def _penalty(doc_id: str, vecs: np.ndarray, taken: list[tuple[str, np.ndarray]]) -> np.ndarray:
    """mu x the largest cosine of each row of VECS (normalised) with the taken units
    (of other documents only under scope "others"), less beta when DOC_ID holds one."""
    cohesion = VARIANT["beta"] * any(d == doc_id for d, _ in taken)
    others = VARIANT["scope"] == "others"
    ref = [v for d, v in taken if not (others and d == doc_id)]
    if not ref or VARIANT["mu"] == 0:
        return np.full(len(vecs), -cohesion, np.float64)
    return VARIANT["mu"] * (vecs @ np.stack(ref).T).max(axis=1).astype(np.float64) - cohesion


def _today() -> bool:
    return VARIANT["mu"] == 0 and VARIANT["beta"] == 0


def select_evidence(trees, candidates, *, k, diversity=0.0):
    """`tree_search.select_evidence` with the redundancy penalty (greedy: the candidate
    with the best penalised score next; ties to the smaller (doc_id, node))."""
    if _today():
        return _SELECT(trees, candidates, k=k, diversity=diversity)
    assert diversity == 0, "the variant is measured without document diversity"
    taken_mask = {d: np.zeros(t.n, dtype=bool) for d, t in trees.items()}
    taken: list[tuple[str, np.ndarray]] = []
    pending = list(candidates)
    out, budget = [], k
    while pending and budget:
        effective = [s - _penalty(d, _unit(trees[d].vectors[n][None]), taken)[0]
                     for d, n, s in pending]
        i = min(range(len(pending)), key=lambda j: (-effective[j], pending[j][0],
                                                    pending[j][1]))
        d, node, score = pending.pop(i)
        tree = trees[d]
        if int(tree.n_leaves[node]) > budget:
            continue
        leaves = tree.leaves_of(node)
        if taken_mask[d][leaves].any():
            continue
        taken_mask[d][leaves] = True
        taken += [(d, _unit(tree.vectors[u])) for u in leaves]
        out.append(TS.Selected(d, int(node), float(score), np.sort(leaves)))
        budget -= len(leaves)
    return out


def fill_to_k(trees, scores, chosen, *, k):
    """`tree_search.fill_to_k` with the redundancy penalty: the best other leaf by its
    penalised rank score next, until k units."""
    if _today():
        return _FILL(trees, scores, chosen, k=k)
    used = sum(len(s.leaves) for s in chosen)
    taken = [(s.doc_id, _unit(trees[s.doc_id].vectors[int(u)])) for s in chosen
             for u in s.leaves]
    free = {d: np.ones(t.n, dtype=bool) for d, t in trees.items()}
    for s in chosen:
        free[s.doc_id][s.leaves] = False
    out = list(chosen)
    while used < k:
        best = None
        for d, t in trees.items():
            ids = np.flatnonzero(free[d])
            if not len(ids):
                continue
            eff = (np.asarray(scores[d].rank, np.float64)[ids]
                   - _penalty(d, _unit(t.vectors[ids]), taken))
            j = int(np.argmax(eff))  # the first of equals: the smaller leaf
            key = (-float(eff[j]), d, int(ids[j]))
            if best is None or key < best[0]:
                best = (key, float(scores[d].rank[ids[j]]))
        if best is None:
            break
        (_, d, u), rank = best
        free[d][u] = False
        taken.append((d, _unit(trees[d].vectors[u])))
        out.append(TS.Selected(d, u, rank, np.array([u], dtype=np.int64)))
        used += 1
    return out


TS.select_evidence, TS.fill_to_k = select_evidence, fill_to_k


class Pool:
    """A pool split's database Retriever, its queries and their gold documents' units."""

    def __init__(self, name: str, split: str, settings: Any, encoder: Any):
        self.name = f"{name}-{split}"
        self.r, self.queries, _ = H.open_pool(name, split, settings, encoder)
        gold = sorted({d for q in self.queries for d in q["doc_ids"]})
        loaded = self.r.documents.load_trees(gold)
        self.spans = {d: st.spans for d, (_, st) in loaded.items()}

    def row(self, scope: str, point: tuple[float, str], beta: float = 0.0) -> dict[str, Any]:
        """Tree mode within the queries' documents or corpus-wide (SCOPE) with redundancy
        POINT (mu, scope) and, corpus-wide only, cohesion BETA."""
        from sproutrag.learn.evaluation import result_row, retriever_runs

        VARIANT["mu"], VARIANT["scope"] = point
        VARIANT["beta"] = beta if scope == "wide" else 0.0
        try:
            runs = retriever_runs(self.r, self.queries, H.KS, "tree",
                                  corpus_wide=scope == "wide")
        finally:
            VARIANT["mu"], VARIANT["beta"] = 0.0, 0.0
        return result_row(f"{self.name} {scope} {point}", runs, {}, self.queries,
                          units=self.spans)



def fit(pools: list[Pool]) -> tuple[float, str]:
    trials = []
    for point in [TODAY] + [(mu, s) for mu in MUS for s in SCOPES]:
        ies = [H.per_query(p.row("wide", point)) for p in pools]
        print(f"train {point}: corpus-wide tree IE " + " / ".join(
            f"{100 * x.mean():.2f}" for x in ies), flush=True)
        trials.append((point, ies))
    return H.one_se_choice(trials, lambda pt: (pt[0], SCOPES.index(pt[1])), "rule 19")


def cohesion_fit(pools: list[Pool]) -> float:
    trials = []
    for beta in (0.0, *BETAS):
        ies = [H.per_query(p.row("wide", TODAY, beta)) for p in pools]
        print(f"train beta {beta}: corpus-wide tree IE " + " / ".join(
            f"{100 * x.mean():.2f}" for x in ies), flush=True)
        trials.append((beta, ies))
    return H.one_se_choice(trials, lambda b: b, "rule 21")


def cohesion_compare(pools: list[Pool], beta: float) -> None:
    for p in pools:
        within, ref = p.row("within", TODAY), p.row("wide", TODAY)
        print(f"{p.name} wide: today IE {100 * ref['avg']['ie']:.2f}, beta {beta} "
              f"{H.against(p.row('wide', TODAY, beta), ref, within)}", flush=True)


def compare(pools: list[Pool], point: tuple[float, str]) -> None:
    for p in pools:
        within = p.row("within", TODAY)
        for scope in ("wide", "within"):
            ref = within if scope == "within" else p.row(scope, TODAY)
            print(f"{p.name} {scope}: today IE {100 * ref['avg']['ie']:.2f}, {point} "
                  f"{H.against(p.row(scope, point), ref, within)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--point", nargs=2, metavar=("MU", "SCOPE"),
                    help="compare this point with today's on dev (no fit)")
    ap.add_argument("--cohesion-fit", action="store_true",
                    help="rule 21: fit beta on train, then compare on dev")
    ap.add_argument("--cohesion", type=float, help="rule 21: compare this beta on dev")
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.cohesion_fit or args.cohesion is not None:
        beta = (cohesion_fit([Pool(n, "train", settings, encoder) for n in args.pools])
                if args.cohesion_fit else args.cohesion)
        cohesion_compare([Pool(n, "dev", settings, encoder) for n in args.pools], beta)
        return 0
    if args.fit:
        point = fit([Pool(n, "train", settings, encoder) for n in args.pools])
    elif args.point:
        point = (float(args.point[0]), args.point[1])
    else:
        ap.error("give --fit or --point MU SCOPE")
    if point == TODAY:
        print("the fit chose today's search: every dev difference is 0")
        return 0
    compare([Pool(n, "dev", settings, encoder) for n in args.pools], point)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
