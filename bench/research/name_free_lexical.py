"""Rules 78 and 79 of docs/whole-corpus.md: rule 64's name-free BM25 in the documents
rule 62 gates in, with rule 77's titled-part guard (78), or less only the names a
document writes in its opening alone (79; stop 81).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/name_free_lexical.py \
        --split train|dev|test [--pools lookalike paragraphs ...] \
        [--variant lexfree|openonly|openonly-titled] [--tag=-r78]

Variant `lexfree`, patched into this process: in a document that rule 62 gates in (it
opens with an entity of the question and holds `name_free_leaves` leaves; the keys of
`opening_vectors`) and that is not `titled_by` an entity, BM25 scores the nodes with
`name_free(question, entities)` (the question less its names), with the same collection
statistics (`bm25_nodes`' collection: every searched document's leaves, or the anchor's)
and the same z-scores; the cosine keeps rule 77's blend; every other document, the first
stage and the choice of documents keep the question. Per pool of the split (the pools of
`alone_guard.py`), tree mode, k = 1, 3, 5, unit IE and char-IE averaged over k, within
the questions' documents and corpus-wide, each paired per question against today's
search. Variant `openonly` (rule 79): in a document rule 62 gates in, BM25 scores with
the question less the entities the document writes in its opening leaves (the leaves
`name_free.opening` takes) and in no other leaf; no titled-part guard. Runs are saved in
`out/alone-guard/{pool}-{split}{tag}.json`. Variant `openonly-titled` (rule 80): rule 79,
but a document `titled_by` an entity keeps the question. Not a test.
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

import sproutrag.search.node_scores as NS  # noqa: E402
from sproutrag.names import folded, mention_words  # noqa: E402
from sproutrag.search import searched as S  # noqa: E402
from sproutrag.search.entities import question_entities  # noqa: E402
from sproutrag.search.name_free import OPENING_CHARS, name_free, titled_by  # noqa: E402

#: id(tree) -> the text BM25 scores that document's nodes with, for the question being
#: searched (cleared at each `find`).
LEXICAL_TEXT: dict[int, str] = {}

_today_find = S.SearchedDocuments.find
_today_vectors = S.opening_vectors
_today_bm25_nodes = NS.bm25_nodes


def _find(self, *args, **kwargs):
    LEXICAL_TEXT.clear()
    return _today_find(self, *args, **kwargs)


VARIANT = ["lexfree"]


def opening_leaves(texts, chars: int = OPENING_CHARS) -> int:
    """How many leading leaves `name_free.opening` takes."""
    held = n = 0
    for t in texts:
        if held >= chars:
            break
        held += len(t) + 1
        n += 1
    return n


def opening_only(texts, entities) -> list[str]:
    """ENTITIES written in the opening leaves of TEXTS and in no other leaf."""
    words = [mention_words(t) for t in texts]
    n = opening_leaves(texts)
    out = []
    for e in entities:
        key = f" {folded(e)} "
        if any(key in w for w in words[:n]) and not any(key in w for w in words[n:]):
            out.append(e)
    return out


def _vectors(query, qvec, entities, stored, embed, *args, **kwargs):
    got = _today_vectors(query, qvec, entities, stored, embed, *args, **kwargs)
    for d in got:
        if VARIANT[0] == "lexfree":
            if not titled_by(stored[d].texts, entities):
                LEXICAL_TEXT[id(stored[d].tree)] = name_free(query, list(entities))
        elif VARIANT[0] == "openonly" or not titled_by(stored[d].texts, entities):
            drop = opening_only(stored[d].texts, entities)
            if drop:
                LEXICAL_TEXT[id(stored[d].tree)] = name_free(query, drop)
    return got


def _bm25_nodes(query, docs, trees, collection=None):
    if not any(id(t) in LEXICAL_TEXT for t in trees):
        return _today_bm25_nodes(query, docs, trees, collection)
    held = list(docs) if collection is None else collection
    return [_today_bm25_nodes(LEXICAL_TEXT.get(id(t), query), [d], [t], held)[0]
            for d, t in zip(docs, trees, strict=True)]


def patch(on: bool) -> None:
    S.SearchedDocuments.find = _find if on else _today_find
    S.opening_vectors = _vectors if on else _today_vectors
    NS.bm25_nodes = _bm25_nodes if on else _today_bm25_nodes
    LEXICAL_TEXT.clear()


def mean(runs: dict, i: int = 0) -> float:
    return float(np.mean([v[i] for v in runs.values()]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="train")
    ap.add_argument("--pools", nargs="+", default=list(A.POOLS))
    ap.add_argument("--variant", default="lexfree",
                    choices=("lexfree", "openonly", "openonly-titled"))
    ap.add_argument("--tag", default="-r78")
    args = ap.parse_args()
    VARIANT[0] = args.variant
    settings, encoder = H.default_encoder()
    out = H.OUT / "alone-guard"
    out.mkdir(parents=True, exist_ok=True)
    gains = []
    for pool in args.pools:
        if args.split == "test" and pool != "lookalike":
            continue  # the test split is the look-alike reports' alone
        r, qs, _ = H.open_pool(pool, args.split, settings, encoder)
        named = sum(len(question_entities(q["query"])) > 0 for q in qs)
        patch(False)
        runs = {"within": A.scores(r, qs, False), "today": A.scores(r, qs, True)}
        patch(True)
        runs[f"{args.variant} within"] = A.scores(r, qs, False)
        runs[args.variant] = A.scores(r, qs, True)
        patch(False)
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
