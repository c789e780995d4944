"""Rules 78-82 of docs/whole-corpus.md: BM25 of the documents rule 62 gates in without
the question's names (stop 81).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/name_free_lexical.py \
        --split train|dev|test [--pools lookalike paragraphs ...] \
        [--variant lexfree|openonly|openonly-titled] [--tag=-r78]

Each variant is the function `name_free.own_questions` calls for a gated document's BM25
text (`name_free.lexical_questions`), patched into this process; "today" is the search
before rules 79-80 (every document's BM25 scores the question):

- `lexfree` (rule 78): the question less all its names, in a gated document that is
  not `titled_by` one of them;
- `openonly` (rule 79): the question less the names the document writes in its opening
  leaves and in no other leaf (`opening_only`), no titled-part guard;
- `openonly-titled` (rule 80, shipped at stop 81 before rule 81): `openonly`, but a
  document `titled_by` a name keeps the question;
- `opening-titled` (rule 81, shipped at stop 81; run with `--base openonly-titled`):
  less every name the opening leaves write, also where later leaves write it too,
  unless a part is `titled_by` one;
- `others-titled` (rule 82, shipped at stop 82; run with `--base opening-titled`): less
  every name that the opening of any gated document of the search writes, with the
  same guard (the product's `lexical_questions`).

The cosine keeps rule 77's blend; collection statistics and z-scores are as today. Per
pool of the split (the pools of `alone_guard.py`), tree mode, k = 1, 3, 5, unit IE and
char-IE averaged over k, within the questions' documents and corpus-wide, each paired
per question against "today". Runs are saved in `out/alone-guard/{pool}-{split}{tag}.json`.
The train, dev and test runs of rules 78-80 ran from a worktree of 0d1e08e, where the
script patched BM25 itself (the product had no such function yet); rule 81's ran on main
at the commit that shipped rule 80, as the variant above, paired against rule 80. Run
here, `--variant others-titled` gives the shipped search (docs/whole-corpus.md). Not a
test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import alone_guard as A  # noqa: E402
import hierarchy as H  # noqa: E402

import sproutrag.search.name_free as NF  # noqa: E402
import sproutrag.search.searched as S  # noqa: E402
from sproutrag.names import folded, mention_words  # noqa: E402
from sproutrag.search.entities import question_entities  # noqa: E402
from sproutrag.search.name_free import name_free, opening_leaves, titled_by  # noqa: E402

_shipped = NF.lexical_questions
_shipped_writers = S.own_writers

def _before80(query, entities, stored, docs, **_):
    """The search before rules 79-80: every document's BM25 scores the question."""
    return {}


def _lexfree(query, entities, stored, docs, **_):
    """Rule 78: the question less all its names, unless a part is `titled_by` one."""
    return {d: name_free(query, list(entities)) for d in docs
            if not titled_by(stored[d].texts, entities)}


def opening_only(texts, entities) -> list[str]:
    """ENTITIES written in the opening leaves of TEXTS and in no other leaf (rules 79-80)."""
    words = [mention_words(t) for t in texts]
    n = opening_leaves(texts)
    keys = [(e, f" {folded(e)} ") for e in entities]
    return [e for e, key in keys
            if any(key in w for w in words[:n]) and not any(key in w for w in words[n:])]


def _openonly(query, entities, stored, docs, guard: bool = False, **_):
    """Rule 79: less the names the document writes in its opening alone, no guard; with
    GUARD (rule 80) a document `titled_by` a name keeps the question."""
    out = {}
    for d in docs:
        drop = opening_only(stored[d].texts, entities)
        if drop and not (guard and titled_by(stored[d].texts, entities)):
            out[d] = name_free(query, drop)
    return out


def _opening(query, entities, stored, docs, **_):
    """Rule 81 (shipped at stop 81): less the names the document's own opening writes,
    unless a part is `titled_by` one."""
    out = {}
    for d in docs:
        drop = NF.opening_names(stored[d].texts, entities)
        if drop and not titled_by(stored[d].texts, entities):
            out[d] = name_free(query, drop)
    return out


#: variant -> what `name_free.own_questions` calls for the BM25 texts (rule 82's
#: `others-titled` is the shipped `lexical_questions`).
VARIANTS = {"today": _before80, "lexfree": _lexfree, "openonly": _openonly,
            "openonly-titled": lambda *a, **_: _openonly(*a, guard=True),
            "opening-titled": _opening, "others-titled": _shipped}


def _rule70_writers(holders, stored, order, floor):
    """`name_free.own_writers` before rule 83: rule 70's lead alone."""
    if floor <= 0:
        return dict(holders)
    rank = {d: i for i, d in enumerate(order)}
    return {e: NF._own(docs, [d for d in docs if NF.opens_with(
        stored[d].texts, stored[d].tree.n, [e], floor=1)], stored, rank, floor)
        for e, docs in holders.items()}


def patch(variant: str) -> None:
    """VARIANT's BM25 texts; `before82` is the search of 0.23.2 (rule 81's texts, rule
    70's own writers), for rules 82-83's query cost."""
    S.own_writers = _rule70_writers if variant == "before82" else _shipped_writers
    NF.lexical_questions = VARIANTS["opening-titled" if variant == "before82" else variant]


def mean(runs: dict, i: int = 0) -> float:
    return float(np.mean([v[i] for v in runs.values()]))


def timing(split: str, passes: int = 4, before: str = "today") -> None:
    """Rules 80-83's query cost: the look-alike reports' and the named agreements' SPLIT
    questions, corpus-wide, tree mode, k = 5, encoding included, the shipped search and
    the search BEFORE (`today`: before rule 80; `before82`: 0.23.2's) alternating per
    question in one process, the order swapped each pass, the first pass not counted."""
    settings, encoder = H.default_encoder()
    for pool in ("lookalike", "named-contracts"):
        r, questions, _ = H.open_pool(pool, split, settings, encoder)
        ms = A.alternating_ms(r, [q["query"] for q in questions],
                              {v: (lambda v=v: patch(v)) for v in ("others-titled", before)},
                              passes)
        NF.lexical_questions, S.own_writers = _shipped, _shipped_writers
        p50 = {v: float(np.median(x)) for v, x in ms.items()}
        p95 = {v: float(np.percentile(x, 95)) for v, x in ms.items()}
        now, then = "others-titled", before
        print(f"{pool} {split} ({len(questions)} questions): shipped p50 {p50[now]:.1f} ms, "
              f"p95 {p95[now]:.1f}; before p50 {p50[then]:.1f} ms, p95 {p95[then]:.1f}; "
              f"p50 ratio {p50[now] / p50[then]:.2f}x", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="train")
    ap.add_argument("--pools", nargs="+", default=list(A.POOLS))
    ap.add_argument("--variant", default="lexfree",
                    choices=("lexfree", "openonly", "openonly-titled", "opening-titled",
                             "others-titled"))
    ap.add_argument("--base", default="today",
                    choices=("today", "openonly-titled", "opening-titled"),
                    help="the search the variant is paired against (rule 81: rule 80's; "
                    "rule 82: rule 81's, the shipped one)")
    ap.add_argument("--tag", default="-r78")
    ap.add_argument("--timing", action="store_true", help="rules 80-83's query cost")
    ap.add_argument("--timing-base", default="today", choices=("today", "before82"),
                    help="what --timing compares with: before rule 80, or 0.23.2")
    args = ap.parse_args()
    if args.timing:
        timing(args.split, before=args.timing_base)
        return 0
    out = H.OUT / "alone-guard"
    out.mkdir(parents=True, exist_ok=True)
    gains = []
    for pool, r, qs in A.pools_of(args.split, args.pools):
        named = sum(len(question_entities(q["query"])) > 0 for q in qs)
        patch(args.base)
        runs = {"within": A.scores(r, qs, False), "today": A.scores(r, qs, True)}
        patch(args.variant)
        runs[f"{args.variant} within"] = A.scores(r, qs, False)
        runs[args.variant] = A.scores(r, qs, True)
        NF.lexical_questions, S.own_writers = _shipped, _shipped_writers
        w, t = mean(runs["within"]), mean(runs["today"])
        print(f"{pool} {args.split}: {len(qs)} questions ({named} with entities); within "
              f"{w:.2f}, today corpus-wide {t:.2f} ({t / w:.3f}x)", flush=True)
        v = args.variant
        for scope, ref in ((f"{v} within", "within"), (v, "today")):
            got = mean(runs[scope])
            print(f"  {scope:15} unit IE {mean(runs[ref]):.2f} -> {got:.2f} "
                  f"{A.paired(runs[scope], runs[ref], 0)}; char-IE "
                  f"{A.paired(runs[scope], runs[ref], 1)}", flush=True)
            gains.append(got - mean(runs[ref]))
        after = mean(runs[v]) / mean(runs[f"{v} within"])
        print(f"  corpus-wide / within after: {after:.3f}x", flush=True)
        (out / f"{pool}-{args.split}{args.tag}.json").write_text(json.dumps(runs))
    print(f"mean gain over the pools (within and corpus-wide averaged): {np.mean(gains):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
