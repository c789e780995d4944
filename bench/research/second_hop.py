"""A second hop for corpus-wide search (issue 29, rules 5 and 6 of docs/whole-corpus.md).

    PYTHONPATH=. .venv/bin/python bench/research/second_hop.py --fit   # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/second_hop.py --lexical --fit
    PYTHONPATH=. .venv/bin/python bench/research/second_hop.py --sum --fit
    PYTHONPATH=. .venv/bin/python bench/research/second_hop.py --encoded --fit

A bridge question's second paragraph is about an entity the question never names; the
first paragraph's best unit names it. The hop takes the best leaf u1 by today's rank
score over the searched documents (document d1) and adds gamma x z(cosine with u1's
vector) to the rank score of nodes: scope "others", the nodes of documents other than
d1; scope "all", every node but u1 (z over the leaves that get it). No second encoding:
u1's stored vector is the hop. The shipped tree search then runs on those scores over the
same documents (the first stage's, as the Retriever chooses them, or the query's own
within), on the pools of `hierarchy.py` (their databases under out/).

With --lexical (rule 6) the hop is lexical instead: the words of u1's own text that the
question lacks, scored by BM25 against the nodes of the documents other than d1 (scope
"others" only). With --sum (rule 9) the hop vector is the question's plus u1's (unit
vectors added), scope "others" only; with --encoded (rule 10) it is the encoder's vector
of the question followed by u1's text, scope "others" only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

from sproutrag.search import lexical  # noqa: E402
from sproutrag.search.lexical import tokenize  # noqa: E402
from sproutrag.search.node_scores import NodeScores, cosine_scores  # noqa: E402

GAMMAS = (0.25, 0.5, 1.0, 2.0)
SCOPES = ("others", "all")


def best_unit(p: H.Pool, base: dict[str, NodeScores]) -> tuple[str, int] | None:
    """(d1, u1): the best leaf by today's rank score over the searched documents."""
    best = max(((float(base[d].rank[: p.trees[d].n].max()), d) for d in base
                if p.trees[d].n), default=None)
    if best is None:
        return None
    d1 = best[1]
    return d1, int(np.argmax(base[d1].rank[: p.trees[d1].n]))


def hop_scores(p: H.Pool, scope_name: str, n: int, k: int, gamma: float,
               scope: str) -> dict[str, NodeScores]:
    """Today's node scores of query N at K, with the hop added (gamma 0: today's)."""
    base = p._scores[scope_name, n, k]
    best = best_unit(p, base) if gamma > 0 else None
    if best is None:
        return base
    docs, (d1, u1) = list(base), best
    hop = p.trees[d1].vectors[u1]
    if ENCODER is not None:  # rule 10: the question and u1's text, encoded
        text = p.queries[n]["query"] + " " + p.r.documents.load_trees([d1])[d1][1].texts[u1]
        if text not in _ENCODED:
            _ENCODED[text] = ENCODER.encode_texts([text])[0]
        hop = _ENCODED[text]
    elif SUM:  # rule 9: the question's vector plus the unit's
        q = np.asarray(p.qvecs[n], np.float64)
        hop = (q / max(np.linalg.norm(q), 1e-12)
               + hop / max(float(np.linalg.norm(hop)), 1e-12)).astype(np.float32)
    gets = [d for d in docs if scope == "all" or d != d1]
    if not gets:
        return base
    cos = {d: cosine_scores(p.trees[d].vectors, hop).astype(np.float64) for d in gets}
    leaves = np.concatenate([
        np.delete(cos[d][: p.trees[d].n], u1) if d == d1 else cos[d][: p.trees[d].n]
        for d in gets])
    mean, sd = (float(leaves.mean()), float(leaves.std())) if leaves.size else (0.0, 1.0)
    sd = sd if sd > 1e-9 else 1.0
    out = dict(base)
    for d in gets:
        z = (cos[d] - mean) / sd
        if d == d1:
            z[u1] = 0.0
        out[d] = NodeScores(base[d].cosine, base[d].rank + gamma * z)
    return out


def lexical_hop_scores(p: H.Pool, scope_name: str, n: int, k: int,
                       gamma: float) -> dict[str, NodeScores]:
    """Today's node scores of query N at K, with rule 6's lexical hop added to the nodes
    of the documents other than d1 (gamma 0, or no new word in u1: today's)."""
    base = p._scores[scope_name, n, k]
    best = best_unit(p, base) if gamma > 0 else None
    if best is None:
        return base
    docs, (d1, u1) = list(base), best
    text = p.r.documents.load_trees([d1])[d1][1].texts[u1]
    new_words = set(tokenize(text)) - set(tokenize(p.queries[n]["query"]))
    gets = [d for d in docs if d != d1]
    if not new_words or not gets:
        return base
    # BM25 over the searched documents' leaves (today's collection, the nodes as
    # `bm25_nodes` scores them), the new words as the query's terms
    lex = dict(zip(docs, lexical._bm25("", [p.terms[d] for d in docs],
                                       [p.trees[d] for d in docs], lambda _: new_words,
                                       lexical.K1, lexical.B)))
    leaves = np.concatenate([lex[d][: p.trees[d].n] for d in gets])
    mean, sd = (float(leaves.mean()), float(leaves.std())) if leaves.size else (0.0, 1.0)
    sd = sd if sd > 1e-9 else 1.0
    out = dict(base)
    for d in gets:
        out[d] = NodeScores(base[d].cosine, base[d].rank + gamma * (lex[d] - mean) / sd)
    return out


#: Rule 5 (all unset), rule 6 (LEXICAL, `lexical_hop_scores`) or rule 9 (SUM: the hop
#: is the question's vector plus u1's): set by --lexical / --sum.
LEXICAL = False
SUM = False
#: Rule 10 (--encoded): the encoder of the hop's text, and the vectors encoded so far.
ENCODER = None
_ENCODED: dict[str, np.ndarray] = {}


def runs(p: H.Pool, scope_name: str, gamma: float, scope: str) -> dict[int, list]:
    """Tree mode over each query's documents with the hop's scores."""
    if LEXICAL:
        return H.tree_runs(p, scope_name,
                           lambda n, k, docs: lexical_hop_scores(p, scope_name, n, k, gamma))
    return H.tree_runs(p, scope_name,
                       lambda n, k, docs: hop_scores(p, scope_name, n, k, gamma, scope))


def fit(pools: list[H.Pool]) -> tuple[float, str]:
    """Rule 5's fit: the (gamma, scope) with the best mean corpus-wide IE over POOLS (today
    among the candidates), then the simplest within one SE of it (least gamma)."""
    trials = [((0.0, "others"), [H.per_query(p.row("", runs(p, "wide", 0.0, "others")))
                                 for p in pools])]
    for gamma in GAMMAS:
        for scope in SCOPES[:1] if LEXICAL or SUM or ENCODER else SCOPES:
            ies = [H.per_query(p.row("", runs(p, "wide", gamma, scope))) for p in pools]
            trials.append(((gamma, scope), ies))
    for point, ies in trials:
        print(f"  train gamma {point[0]:g} {point[1]:6s}: "
              + " ".join(f"{100 * x.mean():5.1f}" for x in ies), flush=True)

    return H.one_se_choice(trials, lambda pt: (pt[0], SCOPES.index(pt[1])), "fit")


def compare(names: list[str], point: tuple[float, str], settings, encoder) -> None:
    """Dev: the point against today's, paired, corpus-wide and within."""
    gamma, scope = point
    H.compare_dev(names, settings, encoder, f"hop {gamma:g} {scope}",
                  lambda p, where, on: p.row("", runs(p, where, gamma if on else 0.0, scope)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--lexical", action="store_true",
                    help="rule 6: the hop is u1's words the question lacks, by BM25")
    ap.add_argument("--sum", action="store_true",
                    help="rule 9: the hop is the question's vector plus u1's")
    ap.add_argument("--encoded", action="store_true",
                    help="rule 10: the hop is the question and u1's text, encoded")
    ap.add_argument("--point", nargs=2, metavar=("GAMMA", "SCOPE"),
                    help="compare this point on dev without fitting")
    args = ap.parse_args(argv)
    global LEXICAL, SUM, ENCODER
    LEXICAL, SUM = args.lexical, args.sum
    settings, encoder = H.default_encoder()
    ENCODER = encoder if args.encoded else None
    if args.fit:
        train = [H.Pool(n, *H.open_pool(n, "train", settings, encoder)) for n in args.pools]
        point = fit(train)
    elif args.point:
        point = (float(args.point[0]), args.point[1])
    else:
        ap.error("give --fit or --point GAMMA SCOPE")
    compare(args.pools, point, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
