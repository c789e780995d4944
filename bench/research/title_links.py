"""Documents named by the question or by the leading document (issue 29, rule 12 of
docs/results.md).

    PYTHONPATH=. .venv/bin/python bench/research/title_links.py --fit   # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/title_links.py --gamma 0.5
    PYTHONPATH=. .venv/bin/python bench/research/title_links.py --latency

A bridge question's second paragraph is about an entity the first paragraph names; in a
corpus of named documents that entity is a document's name. A document's name is its
`title` or else its first line when heading-like, normalised (`name_of`). Today's scores
(the shipped search: rule 11's anchored statistics for a corpus-wide query) give d1, the
document of the best leaf; every node of a searched document other than d1 whose name is
written in the question or in d1's text gets gamma added to its rank score. The shipped
tree search then runs on those scores over the first stage's documents, on the pools of
`hierarchy.py` (their databases under out/). A query with doc_ids (within) is unchanged.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

from sproutrag.search.lexical import STOPWORDS  # noqa: E402
from sproutrag.search.node_scores import (  # noqa: E402
    ANCHOR_LEAVES,
    NodeScores,
    anchor_documents,
    node_scores,
)

GAMMAS = (0.25, 0.5, 1.0, 2.0)
_WORDS = re.compile(r"\w+", re.UNICODE)
_TRAILING_PARENTHESIS = re.compile(r"\s*\([^()]*\)\s*$")
_SENTENCE_END = ".!?;,:。！？"


def words(text: str) -> str:
    """TEXT lower-cased as its words joined by one space, with a space at each end (so
    that a name is found as whole words by `in`)."""
    return " " + " ".join(_WORDS.findall(text.lower())) + " "


def name_of(text: str, title: str | None) -> str | None:
    """A document's name: its title, else its first line when heading-like (at most 100
    characters, no sentence punctuation at its end); a trailing parenthesis dropped.
    None when the name is shorter than 4 characters or only stopwords and digits."""
    line = title if title else text.lstrip().split("\n", 1)[0].strip()
    if not line or len(line) > 100 or (not title and line[-1] in _SENTENCE_END):
        return None
    name = words(_TRAILING_PARENTHESIS.sub("", line)).strip()
    if len(name) < 4 or all(w in STOPWORDS or w.isdigit() for w in name.split()):
        return None
    return name


class Links:
    """The names of a pool's documents and the words of their texts."""

    def __init__(self, docs_path: Path):
        self.names: dict[str, str | None] = {}
        self.texts: dict[str, str] = {}
        with open(docs_path, encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                self.names[d["doc_id"]] = name_of(d["text"], d.get("title"))
                self.texts[d["doc_id"]] = d["text"]
        self._words: dict[str, str] = {}

    def words_of(self, doc_id: str) -> str:
        if doc_id not in self._words:
            self._words[doc_id] = words(self.texts[doc_id])
        return self._words[doc_id]

    def linked(self, docs: list[str], d1: str, query: str, text: str | None = None
               ) -> list[str]:
        """The documents of DOCS other than D1 named in QUERY or in D1's text (TEXT: in
        that text instead, rule 18's best unit; a name two of DOCS share names nothing)."""
        count = Counter(self.names[d] for d in docs if self.names[d])
        q, t = words(query), self.words_of(d1) if text is None else words(text)
        return [d for d in docs if d != d1 and self.names[d] and count[self.names[d]] == 1
                and (f" {self.names[d]} " in q or f" {self.names[d]} " in t)]


def today(p: H.Pool, scope: str, n: int, k: int, docs: list[str]) -> dict[str, NodeScores]:
    """The shipped search's node scores: corpus-wide with the anchored statistics."""
    if scope != "wide":
        return p._scores[scope, n, k]
    key = ("anchored", n, k)
    if key not in p._scores:
        anchor = anchor_documents(docs, {d: p.trees[d].n for d in docs}, ANCHOR_LEAVES)
        p._scores[key] = node_scores(
            {d: p.trees[d] for d in docs}, p.qvecs[n], query=p.queries[n]["query"],
            lexical={d: p.terms[d] for d in docs}, lexical_weight=p.base.lexical_weight,
            anchor=anchor)
    return p._scores[key]


def link_scores(p: H.Pool, links: Links, scope: str, n: int, k: int, docs: list[str],
                gamma: float) -> dict[str, NodeScores]:
    """Today's scores of query N at K, gamma added to every node of a linked document."""
    base = today(p, scope, n, k, docs)
    if gamma <= 0 or scope != "wide":
        return base
    best = max(((float(base[d].rank[: p.trees[d].n].max()), d) for d in docs
                if p.trees[d].n), default=None)
    if best is None:
        return base
    out = dict(base)
    for d in links.linked(docs, best[1], p.queries[n]["query"]):
        out[d] = NodeScores(base[d].cosine, base[d].rank + gamma)
    return out


def row(p: H.Pool, links: Links, scope: str, gamma: float) -> dict:
    runs = H.tree_runs(p, scope, lambda n, k, docs: link_scores(p, links, scope, n, k, docs,
                                                                gamma))
    out = p.row("", runs)
    out["runs"] = runs
    return out


def changed(a: dict, b: dict) -> int:
    """Queries whose units at the largest k differ between two rows."""
    k = max(H.KS)
    return sum(x != y for x, y in zip(a["runs"][k], b["runs"][k], strict=True))


def fit(pools: list[tuple[H.Pool, Links]]) -> float:
    """Rule 12's fit: the least gamma within one SE of the best mean IE (0: today's)."""
    trials = []
    for gamma in (0.0, *GAMMAS):
        ies = [H.per_query(row(p, links, "wide", gamma)) for p, links in pools]
        trials.append((gamma, ies))
        print(f"  train gamma {gamma:g}: " + " ".join(f"{100 * x.mean():5.1f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, lambda g: g, "fit")


def compare(names: list[str], gamma: float, settings, encoder) -> None:
    """Dev: gamma against today's, paired, corpus-wide and within; queries changed."""
    for name in names:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        links = Links(H.pool_files(name, "dev")[0])
        within = row(p, links, "within", 0.0)
        for scope in ("wide", "within"):
            ref = within if scope == "within" else row(p, links, scope, 0.0)
            new = row(p, links, scope, gamma)
            print(f"{name} dev {scope}: today IE {100 * ref['avg']['ie']:.2f}, links "
                  f"{gamma:g} {H.against(new, ref, within)}; queries changed "
                  f"{changed(new, ref)} of {len(p.queries)}", flush=True)


def latency(pool: str, rounds: int = 3) -> None:
    """p50 of a corpus-wide tree search (the query encoded once beforehand) on POOL's dev
    database, the shipped Retriever with link_weight 1 against 0, alternating per round
    (each its own Retriever and cache, warmed by one pass)."""
    import time

    from sproutrag.search.retriever import Retriever

    settings, encoder = H.default_encoder()
    r0, qs, qvecs = H.open_pool(pool, "dev", settings, encoder)
    db = r0.store.uri
    ways = {w: Retriever(db, encoder=encoder, link_weight=w) for w in (0.0, 1.0)}
    times: dict[float, list[float]] = {w: [] for w in ways}
    for r in ways.values():  # warm: trees, texts and names cached
        for q, v in zip(qs, qvecs, strict=True):
            r.search_vector(q["query"], v, k=5)
    for _ in range(rounds):
        for w, r in ways.items():
            for q, v in zip(qs, qvecs, strict=True):
                t0 = time.perf_counter()
                r.search_vector(q["query"], v, k=5)
                times[w].append(1000 * (time.perf_counter() - t0))
    p50 = {w: float(np.median(t)) for w, t in times.items()}
    print(f"{pool} dev, {len(qs)} questions x {rounds} rounds, corpus-wide tree search "
          f"(k 5, query encoded beforehand): p50 {p50[0.0]:.2f} ms without names, "
          f"{p50[1.0]:.2f} ms with ({p50[1.0] / p50[0.0]:.2f}x)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--gamma", type=float, help="compare this gamma on dev without fitting")
    ap.add_argument("--latency", action="store_true",
                    help="only time corpus-wide searches with and without names")
    args = ap.parse_args(argv)
    if args.latency:
        for pool in args.pools:
            latency(pool)
        return 0
    settings, encoder = H.default_encoder()
    if args.fit:
        gamma = fit([(H.Pool(n, *H.open_pool(n, "train", settings, encoder)),
                      Links(H.pool_files(n, "train")[0])) for n in args.pools])
    elif args.gamma is not None:
        gamma = args.gamma
    else:
        ap.error("give --fit or --gamma GAMMA")
    compare(args.pools, gamma, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
