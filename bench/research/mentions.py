"""Documents the question names in their text (issue 29, rule 23 of docs/whole-corpus.md).

    PYTHONPATH=. .venv/bin/python bench/research/mentions.py --fit     # train, then dev
    PYTHONPATH=. .venv/bin/python bench/research/mentions.py --mu 2    # dev at one point
    PYTHONPATH=. .venv/bin/python bench/research/mentions.py --fit --wider   # rule 24
    PYTHONPATH=. .venv/bin/python bench/research/mentions.py --mention-fetch # rule 27

Variant "mention": corpus-wide, after the shipped search's fetch and links (rules 11-18),
a searched document that is the only searched document whose text writes an entity of
the question (`sproutrag.search.mentions`: its runs of capitalised words) gains MU on all
its nodes (the larger of MU and its link points). Four pools (`hierarchy.py`'s three and
named-contracts, `named_contracts.py`), each split its own database. The fit: MU in GRID,
objective the mean corpus-wide tree unit IE over the four train pools (each counts the
same), the least MU within one SE of the best. Dev: the fitted MU against today's search
(MU 0), paired, with the queries changed and the ratio to search within the questions'
documents.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases
import name_fetch as N  # noqa: E402 - the shipped search (fetch, links), a mention added
import title_links as T  # noqa: E402 - names, queries changed

POOLS = ["paragraphs", "hotpot-pooled", "long-pooled", "named-contracts"]
GRID = (0.0, 0.5, 1.0, 2.0, 3.0)
#: Rule 24's grid, past rule 23's corner (3, today's).
WIDER = (3.0, 4.0, 6.0, 10.0)


def open_fetch(name: str, split: str, settings, encoder, entities: bool = False
               ) -> N.Fetch:
    """The pool's split with the first stage's documents chosen (ENTITIES: rule 25's
    third ranking). Rule 26's run (`--entity-docs`) is in commit b1100b4."""
    r, queries, qvecs = H.open_pool(name, split, settings, encoder)
    r.first.entities = entities
    p = H.Pool(f"{name}-{split}", r, queries, qvecs)
    return N.Fetch(p, T.Links(H.pool_files(name, split)[0]))


def entities_compare(names: list[str], splits: list[str], settings, encoder) -> None:
    """Rule 25: the first stage with the entities' ranking against today's, both with the
    shipped second stage (mu 3), paired per query."""
    for split in splits:
        for name in names:
            ref_f = open_fetch(name, split, settings, encoder)
            new_f = open_fetch(name, split, settings, encoder, entities=True)
            within = ref_f.run("within", 0)
            ref, new = wide(ref_f, 3.0), wide(new_f, 3.0)
            gold = [sum(d in set(q["doc_ids"]) for d in f.p.docs["wide"][n][max(H.KS)])
                    / len(q["doc_ids"]) for f in (ref_f, new_f)
                    for n, q in enumerate(f.p.queries)]
            half = len(gold) // 2
            print(f"{name} {split}: within IE {100 * within['avg']['ie']:.2f}; today "
                  f"{100 * ref['avg']['ie']:.2f} ({ref['avg']['ie'] / within['avg']['ie']:.3f}x)"
                  f" char-IE {100 * ref['avg']['char_ie']:.2f}; entities "
                  f"{H.against(new, ref, within)}; gold documents chosen "
                  f"{sum(gold[:half]) / half:.0%} -> {sum(gold[half:]) / half:.0%}; queries "
                  f"changed {T.changed(new, ref)} of {len(ref_f.p.queries)}", flush=True)


def wide(f: N.Fetch, mu: float) -> dict:
    """The shipped corpus-wide search (fetch, links from the best unit) with MU."""
    return f.run("wide", 1, unit_links=True, mention=mu)


def fit(pools: list[N.Fetch], grid: tuple[float, ...] = GRID) -> float:
    trials = []
    for mu in grid:
        ies = [H.per_query(wide(f, mu)) for f in pools]
        trials.append((mu, ies))
        print(f"  train mu {mu:g}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in ies),
              flush=True)
    return H.one_se_choice(trials, lambda mu: mu, "mention fit")


def compare(names: list[str], split: str, mu: float, settings, encoder,
            today: float = 0.0) -> None:
    """SPLIT of each pool: MU against TODAY's, paired, and the ratios to within."""
    for name in names:
        f = open_fetch(name, split, settings, encoder)
        within = f.run("within", 0)
        ref, new = wide(f, today), wide(f, mu)
        print(f"{name} {split}: within IE {100 * within['avg']['ie']:.2f} char-IE "
              f"{100 * within['avg']['char_ie']:.2f}; today "
              f"{H.against(ref, ref, within).split(':')[0]} char-IE "
              f"{100 * ref['avg']['char_ie']:.2f} "
              f"({ref['avg']['char_ie'] / within['avg']['char_ie']:.3f}x); mu {mu:g}: "
              f"{H.against(new, ref, within)}; queries changed {T.changed(new, ref)} of "
              f"{len(f.p.queries)}", flush=True)


#: Rule 27's grid: documents fetched by the entities they alone write in the whole pool.
MENTION_FETCH = (0, 1, 2)


def mention_fetch_rule(names: list[str], settings, encoder) -> None:
    """Rule 27: M (`MENTION_FETCH`) fitted on train with the shipped search (rules 23 and
    25 on), then the fitted M against today's (M 0) on dev, paired, with the gold
    documents searched."""
    pools = [open_fetch(n, "train", settings, encoder, entities=True) for n in names]
    trials = []
    for m in MENTION_FETCH:
        ies = [H.per_query(f.run("wide", 1, unit_links=True, mention=3.0, mention_fetch=m))
               for f in pools]
        trials.append((m, ies))
        print(f"  train M {m}: " + " / ".join(f"{100 * x.mean():5.2f}" for x in ies),
              flush=True)
    m = H.one_se_choice(trials, lambda m: m, "mention fetch fit")
    for name in names:
        f = open_fetch(name, "dev", settings, encoder, entities=True)
        within = f.run("within", 0)
        ref = f.run("wide", 1, unit_links=True, mention=3.0)
        new = f.run("wide", 1, unit_links=True, mention=3.0, mention_fetch=m)
        gold = []
        for mf in (0, m):
            got = 0.0
            for n, q in enumerate(f.p.queries):
                docs = f.searched(n, max(H.KS), 1, True, True, mf)[0]
                got += sum(d in docs for d in q["doc_ids"]) / len(q["doc_ids"])
            gold.append(got / len(f.p.queries))
        print(f"{name} dev: within IE {100 * within['avg']['ie']:.2f}; today "
              f"{100 * ref['avg']['ie']:.2f} ({ref['avg']['ie'] / within['avg']['ie']:.3f}x)"
              f" char-IE {100 * ref['avg']['char_ie']:.2f}; M {m}: "
              f"{H.against(new, ref, within)}; gold documents searched {gold[0]:.0%} -> "
              f"{gold[1]:.0%}; queries changed {T.changed(new, ref)} of "
              f"{len(f.p.queries)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=POOLS)
    ap.add_argument("--fit", action="store_true", help="fit MU on train, then dev")
    ap.add_argument("--mu", type=float, help="compare this MU with today's on dev")
    ap.add_argument("--splits", nargs="+", default=["dev"])
    ap.add_argument("--entities", action="store_true",
                    help="rule 25: the entities' ranking in the first stage, train and dev")
    ap.add_argument("--wider", action="store_true",
                    help="rule 24: fit over WIDER, against today's mu 3")
    ap.add_argument("--mention-fetch", action="store_true",
                    help="rule 27: documents the entities name in the whole pool, fetched")
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    if args.mention_fetch:
        mention_fetch_rule(args.pools, settings, encoder)
        return 0
    if args.entities:
        entities_compare(args.pools, ["train", "dev"], settings, encoder)
        return 0
    mu = args.mu
    if args.fit:
        mu = fit([open_fetch(n, "train", settings, encoder) for n in args.pools],
                 WIDER if args.wider else GRID)
    if mu is None:
        ap.error("give --fit or --mu")
    for split in args.splits:
        compare(args.pools, split, mu, settings, encoder, 3.0 if args.wider else 0.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
