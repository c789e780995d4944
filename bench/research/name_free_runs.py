"""Rule 61 of docs/whole-corpus.md through the product: the second stage's vector is the
mean of the question's and its name-free one (stop 76).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/name_free_runs.py \
        --label before|after [--sets named-contracts paragraphs ...]
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/name_free_runs.py --compare

`--label after` runs `sproutrag evaluate --db DB --corpus-wide --modes tree` (within the
questions' documents and over the whole corpus, through the Retriever) with
`Retriever._tree` patched in this process: the tree search (not the first stage, not
the choice of documents to search) scores nodes by the cosine with
normalise(q / |q| + f / |f|), f the question embedded with its entities taken out
(`name_free_question.name_free`; a question without entities keeps q): the "mean
cosine" of `name_free_question.py`. `--label before` runs today's code. Dev splits of the
four pools (their databases `out/db-ties-{pool}`, built at stop 73) and of the two base
sets (`out/db-namefree-{set}`, indexed on first use). Runs under out/name-free/. Not a
test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools' files
from name_free_question import name_free  # noqa: E402
from paired_results import database_rows, per_query  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "name-free"
POOLS = ("named-contracts", "paragraphs", "hotpot-pooled", "long-pooled")
BASES = ("contractnli", "hotpotqa")


def _files(name: str) -> tuple[Path, Path, Path]:
    """(docs, queries, database) of a dev set."""
    if name in BASES:
        src = H.SHARED / name
        return (src / "dev.docs.jsonl", src / "dev.queries.jsonl",
                ROOT / "out" / f"db-namefree-{name}")
    docs, queries = H.pool_files(name, "dev")
    return docs, queries, ROOT / "out" / f"db-ties-{name}"


def _patch() -> None:
    from sproutrag.search.entities import question_entities
    from sproutrag.search.hits import hit_of, node_text
    from sproutrag.search.retriever import Retriever
    from sproutrag.search.tree_search import search_trees

    def blended(self, query: str, qvec: np.ndarray) -> np.ndarray:
        free = name_free(query, question_entities(query))
        if not free or free == query:
            return qvec
        f = np.asarray(self._embed([free])[0], dtype=np.float32)
        v = qvec / max(np.linalg.norm(qvec), 1e-12) + f / max(np.linalg.norm(f), 1e-12)
        return v / max(np.linalg.norm(v), 1e-12)

    def _tree(self, query, qvec, k, docs, params, ranked=False, allowed=None):
        found = self.searching.find(query, qvec, docs, params, ranked, allowed)
        stored = found.stored
        chosen = search_trees(
            {d: s.tree for d, s in stored.items()}, blended(self, query, qvec), k=k,
            params=params, query=query, lexical=found.lexical, reranker=self.reranker,
            scores=None, node_text=lambda d, n: node_text(stored[d], n), fill=self.fills_k,
            anchor=found.anchor, links=found.links)
        return [hit_of(stored[c.doc_id], c) for c in chosen]

    Retriever._tree = _tree


def evaluate(docs: Path, queries: Path, db: Path, cache: Path, out: Path) -> Path:
    """`sproutrag evaluate --db DB --corpus-wide --modes tree` into OUT, once: its
    results.json (kept, and returned without a run, when there)."""
    if (out / "results.json").is_file():
        return out / "results.json"
    from sproutrag.flows.cli import main

    code = main(["evaluate", "--docs", str(docs), "--queries", str(queries), "--db", str(db),
                 "--corpus-wide", "--modes", "tree", "--cache", str(cache), "--out", str(out)])
    if code not in (0, 3):
        raise SystemExit(f"evaluate {queries} -> {out}: exit {code}")
    return out / "results.json"


def run(name: str, label: str) -> Path:
    docs, queries, db = _files(name)
    return evaluate(docs, queries, db, OUT / f"cache-{name}", OUT / f"{name}-{label}")


def compare(label: str = "after", base: str = "before") -> None:
    """LABEL's runs paired with the BASE runs, per set."""
    for name in (*POOLS, *BASES):
        before, after = (OUT / f"{name}-{x}" / "results.json" for x in (base, label))
        if not (before.is_file() and after.is_file()):
            print(f"{name}: not run")
            continue
        rows = {x: database_rows(str(p)) for x, p in (("b", before), ("a", after))}
        cells = []
        for row in ("tree", "tree corpus-wide"):
            for metric in ("ie", "char_ie"):
                a, b = (per_query(rows[x][row], metric) for x in "ab")
                d = 100 * np.array([a[q] - b[q] for q in sorted(a.keys() & b.keys())])
                se = d.std(ddof=1) / np.sqrt(len(d))
                cells.append(f"{row} {metric} {100 * np.mean(list(b.values())):.2f} -> "
                             f"{100 * np.mean(list(a.values())):.2f} ({d.mean():+.2f} +/- "
                             f"{se:.2f}, {d.mean() / se if se else 0:+.1f} SE)")
        print(f"{name}:\n  " + "\n  ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", choices=("before", "after"))
    ap.add_argument("--sets", nargs="+", default=[*POOLS, *BASES])
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.label == "after":
        _patch()
    if args.label:
        for name in args.sets:
            print(name, run(name, args.label), flush=True)
    if args.compare:
        compare()


if __name__ == "__main__":
    main()
