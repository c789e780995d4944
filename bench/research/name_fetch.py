"""Documents the first stage missed, fetched by the name the leading unit writes (issue 29,
rule 13 of docs/whole-corpus.md).

    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --fit   # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --max-fetch 2
    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --links-fit   # rule 14
    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --guard       # rule 15
    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --links-fit --wider  # 16
    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --pair-fit    # rule 17
    PYTHONPATH=. .venv/bin/python bench/research/name_fetch.py --unit-links  # rule 18

Rule 12 follows names among the documents the first stage chose; a bridge question's
second document is not always among them (the paragraph pool's first stage misses 12% of
gold documents), and its name is written in the first document's best unit. Variant
"fetch": after today's scores (the shipped search: anchored statistics, links), u1 is the
best leaf and d1 its document; the documents of the whole pool whose name (a name no
other document of the pool has) is written in the question or in u1's text, and that
the first stage did not choose, are added to the searched documents (at most M, in the
order their names are written), the nodes scored again over them all, and the shipped
links applied (d1 leads; a fetched document is named, so it gains the link weight). A
query with doc_ids is unchanged.

Rule 14 (`--links-fit`): with the fetch on (M = 1), the link weight gamma (today 1) and a
leader bonus lambda (today 0: d1's nodes gain lambda when d1 links to at least one
searched document) fitted again on train, then the fitted pair against today's on dev.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases
import title_links as T  # noqa: E402 - names, today's scores

from sproutrag.search.links import LEADER_WEIGHT, LINK_WEIGHT  # noqa: E402
from sproutrag.search.node_scores import (  # noqa: E402
    ANCHOR_LEAVES,
    NodeScores,
    anchor_documents,
    node_scores,
)

MAX_FETCH = (1, 2, 4)
#: The links as rules 12 and 13 measured them: (link weight, leader bonus).
RULE_12 = (1.0, 0.0)
#: Rule 14's grid: (link weight, leader bonus).
LINK_GRID = [(g, lead) for g in (1.0, 1.5, 2.0, 3.0) for lead in (0.0, 0.5, 1.0, 2.0)]
#: Rule 16's grid, past rule 14's corner (3, 2), today's.
WIDER_GRID = [(g, lead) for g in (3.0, 4.0, 6.0) for lead in (2.0, 3.0, 4.0)]
#: Rule 17's candidates, simplest first: today's, the pair as scored, the pair rescored.
PAIRS = (None, "scored", "rescored")
#: The longest name looked up, in words.
MAX_NAME_WORDS = 12


def phrases(text: str) -> list[str]:
    """Every run of at most MAX_NAME_WORDS words of TEXT (as `words` normalises it), in
    the order they start."""
    ws = T.words(text).split()
    return [" ".join(ws[i:i + n]) for i in range(len(ws))
            for n in range(1, min(MAX_NAME_WORDS, len(ws) - i) + 1)]


class Fetch:
    """A pool split's name index (names no two documents share) and the variant's scores."""

    def __init__(self, p: H.Pool, links: T.Links):
        self.p, self.links = p, links
        count = Counter(n for n in links.names.values() if n)
        self.by_name = {n: d for d, n in links.names.items() if n and count[n] == 1}
        self.fetched = 0

    def mentioned(self, query: str, docs: list[str]) -> list[str]:
        """Rule 23: the DOCS that are the only one of them to write an entity of QUERY."""
        from sproutrag.names import mention_words
        from sproutrag.search.entities import question_entities
        from sproutrag.search.mentions import mentioned_documents

        texts = self.__dict__.setdefault("_word_texts", {})
        for d in docs:
            if d not in texts:
                texts[d] = mention_words(self.links.texts[d])
        return mentioned_documents(question_entities(query), {d: texts[d] for d in docs})

    def named_in(self, text: str) -> list[str]:
        return list(dict.fromkeys(self.by_name[g] for g in phrases(text) if g in self.by_name))

    def _load(self, d: str) -> None:
        p = self.p
        if d not in p.trees:
            tid, st = p.r.documents.load_trees([d])[d]
            p.trees[d], p.spans[d] = st.tree, st.spans
            p.terms[d] = p.r.leaf_terms(d, tid)

    def _scores(self, n: int, docs: list[str]) -> dict[str, NodeScores]:
        p = self.p
        anchor = anchor_documents(docs, {d: p.trees[d].n for d in docs}, ANCHOR_LEAVES)
        return node_scores({d: p.trees[d] for d in docs}, p.qvecs[n],
                           query=p.queries[n]["query"], lexical={d: p.terms[d] for d in docs},
                           lexical_weight=p.base.lexical_weight, anchor=anchor)

    def mention_fetched(self, query: str, docs: list[str], limit: int) -> list[str]:
        """Rule 27: at most LIMIT documents, not of DOCS, each the only document of the
        whole pool whose text writes an entity of QUERY, in the order of the entities."""
        from sproutrag.names import mention_words
        from sproutrag.search.entities import question_entities
        from sproutrag.search.mentions import mentioned_documents

        if limit <= 0:
            return []
        entities = question_entities(query)
        if not entities:
            return []
        texts = self.__dict__.setdefault("_word_texts", {})
        for d in self.links.texts:
            if d not in texts:
                texts[d] = mention_words(self.links.texts[d])
        found = [d for d in mentioned_documents(entities, texts) if d not in docs]
        return found[:limit]

    def searched(self, n: int, k: int, max_fetch: int = 1, corpus_unique: bool = True,
                 unit_links: bool = True, mention_fetch: int = 0):
        """Query N at K corpus-wide, before the links are added: (the documents searched,
        their node scores, d1, the documents d1 links, the fetched ones), with the fetch of
        at most MAX_FETCH documents and the guards of `run` (the defaults: the shipped
        search, rules 13-18)."""
        p = self.p
        q = p.queries[n]
        docs = list(p.docs["wide"][n][k])
        base = self._scores(n, docs)
        leaves = {d: base[d].rank[: p.trees[d].n] for d in docs if p.trees[d].n}
        d1 = max(leaves, key=lambda d: float(leaves[d].max()))
        extra: list[str] = []
        if max_fetch > 0:
            s, e = map(int, p.spans[d1][int(np.argmax(leaves[d1]))])
            named = self.named_in(q["query"]) + self.named_in(self.links.texts[d1][s:e])
            extra = [d for d in dict.fromkeys(named) if d not in docs][:max_fetch]
            if extra:
                self.fetched += 1
                for d in extra:
                    self._load(d)
                docs = docs + extra
                base = self._scores(n, docs)
        if mention_fetch > 0:
            more = self.mention_fetched(q["query"], docs, mention_fetch)
            if more:
                for d in more:
                    self._load(d)
                docs = docs + more
                extra = extra + more
                base = self._scores(n, docs)
        if unit_links:
            leaves = {d: base[d].rank[: p.trees[d].n] for d in docs if p.trees[d].n}
            s, e = map(int, p.spans[d1][int(np.argmax(leaves[d1]))])
            linked = self.links.linked(docs, d1, q["query"], self.links.texts[d1][s:e])
        else:
            linked = self.links.linked(docs, d1, q["query"])
        if corpus_unique:
            linked = [d for d in linked if self.links.names[d] in self.by_name]
        return docs, base, d1, linked, extra

    def run(self, scope: str, max_fetch: int, gamma: float = LINK_WEIGHT,
            lead: float = LEADER_WEIGHT, corpus_unique: bool = True,
            pair: str | None = None, unit_links: bool = False, mention: float = 0.0,
            mention_fetch: int = 0, long_mention: float | None = None) -> dict:
        """Tree mode over each query's documents, with the fetch (MAX_FETCH > 0, corpus-wide
        only) or without (today's shipped search); GAMMA: the link weight, LEAD: the
        leader's bonus when it links to a searched document; CORPUS_UNIQUE: a name links
        only when no other document of the pool has it (rule 15, shipped; it changes no
        figure of rules 13 and 14); PAIR (rule 17): when d1 links, search only d1 and the
        linked documents (filled to k leaves in the first stage's order), their nodes
        "scored" as today or "rescored" over them alone; UNIT_LINKS (rule 18): names
        are looked for in the question and d1's best unit, not d1's whole text; MENTION
        (rule 23): the points of a searched document that is the only one to write an
        entity of the question (`sproutrag.search.mentions`); MENTION_FETCH (rule 27): at
        most this many documents the only one of the whole pool to write an entity of the
        question, appended after the fetch; LONG_MENTION (rule 30): the mentioned
        documents' points instead of MENTION when they hold ANCHOR_LEAVES leaves together."""
        from sproutrag.search.tree_search import search_trees

        p = self.p
        out: dict[int, list] = {k: [] for k in H.KS}
        for n, q in enumerate(p.queries):
            for k in H.KS:
                docs = list(p.docs[scope][n][k])
                base = self._scores(n, docs) if scope == "wide" else p._scores[scope, n, k]
                if scope == "wide":
                    docs, base, d1, linked, _ = self.searched(n, k, max_fetch, corpus_unique,
                                                              unit_links, mention_fetch)
                    add = {d: gamma for d in linked}
                    if linked and lead:
                        add[d1] = lead
                    if mention:
                        named = self.mentioned(q["query"], docs)
                        mu = mention
                        if (long_mention is not None
                                and sum(p.trees[d].n for d in named) >= ANCHOR_LEAVES):
                            mu = long_mention
                        for d in named:
                            add[d] = max(add.get(d, 0.0), mu)
                    base = {d: NodeScores(s.cosine, s.rank + add[d]) if d in add else s
                            for d, s in base.items()}
                    if pair and linked:
                        kept = [d1, *(d for d in linked if d != d1)]
                        for d in docs:
                            if sum(p.trees[x].n for x in kept) >= k:
                                break
                            if d not in kept:
                                kept.append(d)
                        docs = kept
                        if pair == "rescored":
                            base = {d: NodeScores(s.cosine, s.rank + add[d]) if d in add
                                    else s for d, s in self._scores(n, docs).items()}
                        else:
                            base = {d: base[d] for d in docs}
                chosen = search_trees({d: p.trees[d] for d in docs}, p.qvecs[n], k=k,
                                      params=p.base, query=q["query"],
                                      lexical={d: p.terms[d] for d in docs}, scores=base)
                out[k].append([(c.doc_id, *map(int, p.spans[c.doc_id][u]))
                               for c in chosen for u in c.leaves])
        row = p.row("", out)
        row["runs"] = out
        return row


def fit(pools: list[Fetch]) -> int:
    """Rule 13's fit: the least M within one SE of the best mean IE (0: today's)."""
    trials = []
    for m in (0, *MAX_FETCH):
        ies = [H.per_query(f.run("wide", m, *RULE_12)) for f in pools]
        trials.append((m, ies))
        print(f"  train max_fetch {m}: " + " ".join(f"{100 * x.mean():5.1f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, lambda m: m, "fit")


def links_fit(pools: list[Fetch], grid: list[tuple[float, float]] = LINK_GRID
              ) -> tuple[float, float]:
    """Rule 14's fit (fetch on; rule 16: GRID = WIDER_GRID): the least leader bonus, then
    the least link weight, within one SE of the best mean IE."""
    trials = []
    for gamma, lead in grid:
        ies = [H.per_query(f.run("wide", 1, gamma, lead)) for f in pools]
        trials.append(((gamma, lead), ies))
        print(f"  train gamma {gamma:g} lead {lead:g}: "
              + " ".join(f"{100 * x.mean():5.1f}" for x in ies), flush=True)
    return H.one_se_choice(trials, lambda t: (t[1], t[0]), "links fit")


def pair_fit(pools: list[Fetch]) -> str | None:
    """Rule 17's fit: the simplest of today's (None), "scored" and "rescored" within one
    SE of the best mean IE."""
    trials = []
    for pair in PAIRS:
        ies = [H.per_query(f.run("wide", 1, pair=pair)) for f in pools]
        trials.append((pair, ies))
        print(f"  train pair {pair}: " + " ".join(f"{100 * x.mean():5.1f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, PAIRS.index, "pair fit")


def _against_today(name: str, split: str, label: str, settings, encoder, **variant) -> None:
    """Print the pool NAME's SPLIT: the variant (`Fetch.run` options VARIANT, fetch on)
    against today's shipped search, paired; queries changed; within IE."""
    p = H.Pool(name, *H.open_pool(name, split, settings, encoder))
    f = Fetch(p, T.Links(H.pool_files(name, split)[0]))
    within = f.run("within", 0)
    ref = f.run("wide", 1)
    new = f.run("wide", 1, **variant)
    print(f"{name} {split} wide: today IE {100 * ref['avg']['ie']:.2f}, {label} "
          f"{H.against(new, ref, within)}; queries changed {T.changed(new, ref)} of "
          f"{len(p.queries)}; within IE {100 * within['avg']['ie']:.2f}", flush=True)


def pair_compare(names: list[str], pair: str | None, settings, encoder) -> None:
    """Dev: rule 17's fitted PAIR against today's."""
    for name in names:
        _against_today(name, "dev", f"pair {pair}", settings, encoder, pair=pair)


def unit_links(names: list[str], settings, encoder) -> None:
    """Rule 18: links from the question and d1's best unit against today's (d1's whole
    text), train and dev."""
    for split in ("train", "dev"):
        for name in names:
            _against_today(name, split, "links from the best unit", settings, encoder,
                           unit_links=True)


def links_compare(names: list[str], point: tuple[float, float], settings, encoder,
                  today: tuple[float, float] = RULE_12) -> None:
    """Dev: the fitted (gamma, lead) against TODAY's (rule 14: (1, 0)), both with the
    fetch."""
    for name in names:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        f = Fetch(p, T.Links(H.pool_files(name, "dev")[0]))
        within = f.run("within", 0)
        ref = f.run("wide", 1, *today)
        new = f.run("wide", 1, *point)
        print(f"{name} dev wide: today IE {100 * ref['avg']['ie']:.2f}, gamma {point[0]:g} "
              f"lead {point[1]:g} {H.against(new, ref, within)}; queries changed "
              f"{T.changed(new, ref)} of {len(p.queries)}; within IE "
              f"{100 * within['avg']['ie']:.2f}", flush=True)


def guard(names: list[str], settings, encoder) -> None:
    """Rule 15: links need a corpus-unique name, against today's (rule 14), train and dev."""
    for split in ("train", "dev"):
        for name in names:
            p = H.Pool(name, *H.open_pool(name, split, settings, encoder))
            f = Fetch(p, T.Links(H.pool_files(name, split)[0]))
            within = f.run("within", 0)
            ref = f.run("wide", 1, corpus_unique=False)
            new = f.run("wide", 1, corpus_unique=True)
            print(f"{name} {split} wide: today IE {100 * ref['avg']['ie']:.2f}, corpus-unique "
                  f"names {H.against(new, ref, within)}; queries changed "
                  f"{T.changed(new, ref)} of {len(p.queries)}", flush=True)


def compare(names: list[str], m: int, settings, encoder) -> None:
    """Dev: the fetch of at most M documents against today's, paired; queries changed."""
    for name in names:
        p = H.Pool(name, *H.open_pool(name, "dev", settings, encoder))
        f = Fetch(p, T.Links(H.pool_files(name, "dev")[0]))
        within = f.run("within", 0)
        ref = f.run("wide", 0, *RULE_12)
        f.fetched = 0
        new = f.run("wide", m, *RULE_12)
        print(f"{name} dev wide: today IE {100 * ref['avg']['ie']:.2f}, fetch {m} "
              f"{H.against(new, ref, within)}; queries changed {T.changed(new, ref)} of "
              f"{len(p.queries)} (a fetch in {f.fetched} of {len(p.queries) * len(H.KS)} "
              f"searches); within IE {100 * within['avg']['ie']:.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--fit", action="store_true", help="fit on train, then compare on dev")
    ap.add_argument("--max-fetch", type=int, help="compare this M on dev without fitting")
    ap.add_argument("--links-fit", action="store_true",
                    help="rule 14: fit link weight and leader bonus on train, then dev")
    ap.add_argument("--wider", action="store_true",
                    help="rule 16: --links-fit over a grid past (3, 2), against (3, 2)")
    ap.add_argument("--guard", action="store_true",
                    help="rule 15: links need a corpus-unique name (train and dev)")
    ap.add_argument("--pair-fit", action="store_true",
                    help="rule 17: a linked pair searched alone (train fit, then dev)")
    ap.add_argument("--unit-links", action="store_true",
                    help="rule 18: links from the best unit, not the leader's text")
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.unit_links:
        unit_links(args.pools, settings, encoder)
        return 0
    if args.pair_fit:
        pair = pair_fit([Fetch(H.Pool(n, *H.open_pool(n, "train", settings, encoder)),
                               T.Links(H.pool_files(n, "train")[0])) for n in args.pools])
        pair_compare(args.pools, pair, settings, encoder)
        return 0
    if args.guard:
        guard(args.pools, settings, encoder)
        return 0
    if args.links_fit:
        grid, today = ((WIDER_GRID, (LINK_WEIGHT, LEADER_WEIGHT)) if args.wider
                       else (LINK_GRID, RULE_12))
        point = links_fit([Fetch(H.Pool(n, *H.open_pool(n, "train", settings, encoder)),
                                 T.Links(H.pool_files(n, "train")[0])) for n in args.pools],
                          grid)
        links_compare(args.pools, point, settings, encoder, today)
        return 0
    if args.fit:
        m = fit([Fetch(H.Pool(n, *H.open_pool(n, "train", settings, encoder)),
                       T.Links(H.pool_files(n, "train")[0])) for n in args.pools])
    elif args.max_fetch is not None:
        m = args.max_fetch
    else:
        ap.error("give --fit or --max-fetch M")
    compare(args.pools, m, settings, encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
