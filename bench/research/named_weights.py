"""Statistics and weights for the documents a question names (issue 29, rules 28-30 of
docs/results.md).

    PYTHONPATH=. .venv/bin/python bench/research/named_weights.py --rule 28 --split train
    PYTHONPATH=. .venv/bin/python bench/research/named_weights.py --rule 29 --split dev
    PYTHONPATH=. .venv/bin/python bench/research/named_weights.py --rule 30   # fit, then dev
    PYTHONPATH=. .venv/bin/python bench/research/named_weights.py --rule 31   # fit, then dev
    PYTHONPATH=. .venv/bin/python bench/research/named_weights.py --rule 32   # fit, then dev
    PYTHONPATH=. .venv/bin/python bench/research/named_weights.py --rule 52   # fit, then dev

Over `mentions.py`'s four pools with the shipped research search (rules 11-27: anchored
statistics, fetch and links, mentions, the entities' first-stage ranking, documents
fetched by mention):
- rule 28: the statistics' anchor is the mentioned documents when two or more are
  mentioned (against rule 11's anchor), paired per query, by one- and two-document
  questions;
- rule 29: the same only when they hold ANCHOR_LEAVES leaves together;
- rule 30: with rule 29 on, the mentioned documents gain MU_LONG instead of 3 when they
  hold ANCHOR_LEAVES leaves together; MU_LONG fitted on train (the least within one SE
  of the best), then against 3 on dev;
- rule 31: with rules 29 and 30 on, a question whose named documents hold ANCHOR_LEAVES
  leaves together, one named document too: "statistics" (the anchor is the named
  documents) or "alone" (only the named documents searched, scored over themselves);
  the simplest of today's, "statistics", "alone" within one SE of the best on train,
  then against today's on dev; both variants reported;
- rule 32: rule 31's "alone" (shipped) with its own floor M (ALONE_FLOORS; 32 today's),
  the largest M within one SE of the best on train, then against 32 on dev;
- rule 52: "alone with links" (the named documents and those the link hop names,
  searched alone) at floors 32, 16, 8 against today's "alone" at 32 (RULE_52, simplest
  first), fitted on train, then every candidate against today's on dev.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases
import mentions as M  # noqa: E402 - the shipped search, rules 23-27
import name_fetch as N  # noqa: E402 - Fetch

from sproutrag.search.node_scores import (  # noqa: E402
    ANCHOR_LEAVES,
    NodeScores,
    anchor_documents,
    node_scores,
)

#: Rule 30's grid (3: rule 23's single weight).
MU_LONG = (3.0, 6.0, 10.0, 20.0)
#: How the anchor is chosen: None (rule 11's), "any" (rule 28), "floor" (rule 29), "one"
#: (rule 31's "statistics": rule 29 with one named document too); "alone": rule 31's
#: "alone" variant on (with rule 29's anchor otherwise).
ANCHOR = {"mode": None, "alone": False}
#: Rule 31's candidates, simplest first.
RULE_31 = ("today", "statistics", "alone")
#: Rule 32's grid: the leaves the named documents must hold together to be searched alone.
ALONE_FLOORS = (32, 16, 8, 4)
ALONE = {"floor": ANCHOR_LEAVES, "links": False}
#: Rule 52's candidates, simplest first: (links, floor).
RULE_52 = ((False, 32), (True, 32), (True, 16), (True, 8))


def _scores(self: N.Fetch, n: int, docs: list[str]) -> dict[str, NodeScores]:
    """`Fetch._scores` with the anchor of ANCHOR["mode"]."""
    p = self.p
    leaves = {d: p.trees[d].n for d in docs}
    anchor = anchor_documents(docs, leaves, ANCHOR_LEAVES)
    if ANCHOR["mode"]:
        named = self.mentioned(p.queries[n]["query"], docs)
        least = 1 if ANCHOR["mode"] == "one" else 2
        if len(named) >= least and (ANCHOR["mode"] == "any"
                                    or sum(leaves[d] for d in named) >= ANCHOR_LEAVES):
            anchor = named
    return node_scores({d: p.trees[d] for d in docs}, p.qvecs[n], query=p.queries[n]["query"],
                       lexical={d: p.terms[d] for d in docs},
                       lexical_weight=p.base.lexical_weight, anchor=anchor)


_searched = N.Fetch.searched


def _searched_alone(self: N.Fetch, n: int, k: int, *args, **kwargs):
    """`Fetch.searched`; with ANCHOR["alone"], when the documents the question names hold
    ANCHOR_LEAVES leaves together, only they are searched, scored over themselves (what a
    query restricted to their doc_ids does: every one of them is the anchor)."""
    docs, base, d1, linked, extra = _searched(self, n, k, *args, **kwargs)
    if ANCHOR["alone"]:
        p = self.p
        named = self.mentioned(p.queries[n]["query"], docs)
        if named and sum(p.trees[d].n for d in named) >= ALONE["floor"]:
            keep = set(named) | (set(linked) if ALONE["links"] else set())
            docs = [d for d in docs if d in keep]
            base = _alone_scores(self, n, docs)
            linked = [d for d in linked if d in docs]
    return docs, base, d1, linked, extra


def _alone_scores(self: N.Fetch, n: int, docs: list[str]) -> dict[str, NodeScores]:
    """DOCS' node scores over themselves (no anchor: all are the statistics')."""
    p = self.p
    return node_scores({d: p.trees[d] for d in docs}, p.qvecs[n], query=p.queries[n]["query"],
                       lexical={d: p.terms[d] for d in docs},
                       lexical_weight=p.base.lexical_weight)


N.Fetch._scores = _scores
N.Fetch.searched = _searched_alone


def shipped(f: N.Fetch, mu_long: float = 3.0) -> dict:
    """The shipped research search (fetch 1, links 3/2, mention 3, mention fetch 1) with
    MU_LONG for mentioned documents that hold ANCHOR_LEAVES leaves together."""
    return f.run("wide", 1, unit_links=True, mention=3.0, mention_fetch=1,
                 long_mention=mu_long)


def by_documents(f: N.Fetch, new: dict, ref: dict) -> str:
    """The paired IE difference of NEW - REF by questions of one and of two documents."""
    a, b = H.per_query(new), H.per_query(ref)
    parts = []
    for n_docs in (1, 2):
        m = np.array([len(q["doc_ids"]) == n_docs for q in f.p.queries])
        if m.sum() > 1:
            d = a[m] - b[m]
            parts.append(f"{n_docs}-document ({m.sum()}) {100 * d.mean():+.2f} +/- "
                         f"{100 * d.std(ddof=1) / np.sqrt(m.sum()):.2f}")
    return "; ".join(parts)


def anchor_rule(mode: str, names: list[str], split: str, settings, encoder) -> None:
    for name in names:
        f = M.open_fetch(name, split, settings, encoder, entities=True)
        within = f.run("within", 0)
        ANCHOR["mode"] = None
        ref = shipped(f)
        ANCHOR["mode"] = mode
        new = shipped(f)
        print(f"{name} {split}: {H.against(new, ref, within)}; {by_documents(f, new, ref)}",
              flush=True)


def long_rule(names: list[str], settings, encoder) -> None:
    ANCHOR["mode"] = "floor"  # rule 29, shipped
    pools = [M.open_fetch(n, "train", settings, encoder, entities=True) for n in names]
    trials = []
    for mu in MU_LONG:
        ies = [H.per_query(shipped(f, mu)) for f in pools]
        trials.append((mu, ies))
        print(f"  train mu_long {mu:g}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in ies),
              flush=True)
    mu = H.one_se_choice(trials, lambda m: m, "mu_long fit")
    for name in names:
        f = M.open_fetch(name, "dev", settings, encoder, entities=True)
        within = f.run("within", 0)
        new, ref = shipped(f, mu), shipped(f)
        print(f"{name} dev: mu_long {mu:g} {H.against(new, ref, within)}", flush=True)


def set_variant(variant: str) -> None:
    """Rule 31's VARIANT on ("today": rule 29's anchor, shipped)."""
    ANCHOR["mode"] = "one" if variant == "statistics" else "floor"
    ANCHOR["alone"] = variant == "alone"


def alone_rule(names: list[str], settings, encoder) -> None:
    """Rule 31: fit on train (the simplest of RULE_31 within one SE of the best), then
    the chosen variant and both variants against today's on dev, paired per query."""
    pools = [M.open_fetch(n, "train", settings, encoder, entities=True) for n in names]
    trials, rows = [], {}
    for variant in RULE_31:
        set_variant(variant)
        rows[variant] = [shipped(f, 6.0) for f in pools]
        ies = [H.per_query(r) for r in rows[variant]]
        trials.append((variant, ies))
        print(f"  train {variant}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in ies),
              flush=True)
    for variant in RULE_31[1:]:
        for f, new, ref in zip(pools, rows[variant], rows["today"], strict=True):
            print(f"  train {f.p.name} {variant}: IE {H.difference(new, ref, 'ie')}; "
                  f"char-IE {H.difference(new, ref, 'char_ie')}; "
                  f"{by_documents(f, new, ref)}", flush=True)
    chosen = H.one_se_choice(trials, RULE_31.index, "rule 31 fit")
    for name in names:
        f = M.open_fetch(name, "dev", settings, encoder, entities=True)
        within = f.run("within", 0)
        set_variant("today")
        ref = shipped(f, 6.0)
        for variant in RULE_31[1:]:
            set_variant(variant)
            new = shipped(f, 6.0)
            mark = " (chosen)" if variant == chosen else ""
            print(f"{name} dev {variant}{mark}: {H.against(new, ref, within)}; "
                  f"{by_documents(f, new, ref)}", flush=True)
        set_variant("today")


def floor_rule(names: list[str], settings, encoder) -> None:
    """Rule 32: rule 31's "alone" with its floor fitted on train (the largest within one
    SE of the best), then against 32 on dev, paired per query."""
    set_variant("alone")
    pools = [M.open_fetch(n, "train", settings, encoder, entities=True) for n in names]
    trials = []
    for floor in ALONE_FLOORS:
        ALONE["floor"] = floor
        ies = [H.per_query(shipped(f, 6.0)) for f in pools]
        trials.append((floor, ies))
        print(f"  train floor {floor}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in ies),
              flush=True)
    chosen = H.one_se_choice(trials, lambda m: -m, "rule 32 fit")
    for name in names:
        f = M.open_fetch(name, "dev", settings, encoder, entities=True)
        within = f.run("within", 0)
        ALONE["floor"] = ANCHOR_LEAVES
        ref = shipped(f, 6.0)
        for floor in ALONE_FLOORS[1:]:
            ALONE["floor"] = floor
            new = shipped(f, 6.0)
            mark = " (chosen)" if floor == chosen else ""
            print(f"{name} dev floor {floor}{mark}: {H.against(new, ref, within)}; "
                  f"{by_documents(f, new, ref)}", flush=True)
    ALONE["floor"] = ANCHOR_LEAVES


def links_rule(names: list[str], settings, encoder) -> None:
    """Rule 52: RULE_52's candidates fitted on train (the simplest within one SE of the
    best), then each against today's ("alone" at 32) on dev, paired per query."""
    set_variant("alone")
    pools = [M.open_fetch(n, "train", settings, encoder, entities=True) for n in names]
    trials, rows = [], {}
    for links, floor in RULE_52:
        ALONE.update(links=links, floor=floor)
        rows[links, floor] = [shipped(f, 6.0) for f in pools]
        ies = [H.per_query(r) for r in rows[links, floor]]
        trials.append(((links, floor), ies))
        print(f"  train links {links} floor {floor}: "
              + " / ".join(f"{100 * x.mean():5.2f}" for x in ies), flush=True)
    for cand in RULE_52[1:]:
        for f, new, ref in zip(pools, rows[cand], rows[RULE_52[0]], strict=True):
            print(f"  train {f.p.name} {cand}: IE {H.difference(new, ref, 'ie')}; "
                  f"char-IE {H.difference(new, ref, 'char_ie')}", flush=True)
    chosen = H.one_se_choice(trials, RULE_52.index, "rule 52 fit")
    for name in names:
        f = M.open_fetch(name, "dev", settings, encoder, entities=True)
        within = f.run("within", 0)
        ALONE.update(links=False, floor=ANCHOR_LEAVES)
        ref = shipped(f, 6.0)
        for cand in RULE_52[1:]:
            ALONE.update(links=cand[0], floor=cand[1])
            new = shipped(f, 6.0)
            mark = " (chosen)" if cand == chosen else ""
            print(f"{name} dev {cand}{mark}: {H.against(new, ref, within)}; "
                  f"{by_documents(f, new, ref)}", flush=True)
    ALONE.update(links=False, floor=ANCHOR_LEAVES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rule", type=int, choices=(28, 29, 30, 31, 32, 52), required=True)
    ap.add_argument("--split", default="dev", help="rules 28 and 29: train or dev")
    ap.add_argument("--pools", nargs="+", default=M.POOLS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.rule == 30:
        long_rule(args.pools, settings, encoder)
    elif args.rule == 31:
        alone_rule(args.pools, settings, encoder)
    elif args.rule == 32:
        floor_rule(args.pools, settings, encoder)
    elif args.rule == 52:
        links_rule(args.pools, settings, encoder)
    else:
        anchor_rule("any" if args.rule == 28 else "floor", args.pools, args.split, settings,
                    encoder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
