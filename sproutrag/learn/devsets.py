"""Development sets built from labelled ones: long documents made by joining short ones.

Both shipped dev sets have documents of 5,000-10,000 characters, but the method exists
for long documents. `join_documents` concatenates groups of documents (for example ten
HotpotQA documents of about 5,500 characters into one of about 55,000) and shifts every
query's gold spans into the joined text, so retrieval is scored exactly as before, only
inside much longer documents:

    python -m sproutrag.learn.devsets --src ../shared/data/hotpotqa --split dev \\
        --group 10 --out out/data/hotpot-long

writes `dev.docs.jsonl` and `dev.queries.jsonl` under --out (the same shapes as the
source). Joined documents keep the source order within a group; groups are drawn from a
seeded shuffle of the source documents, so the set is reproducible.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sproutrag.learn.datasets import read_jsonl, write_jsonl

SEPARATOR = "\n\n"


def join_documents(
    docs: Sequence[dict[str, Any]],
    queries: Sequence[dict[str, Any]],
    *,
    group: int,
    seed: int = 0,
    prefix: str = "long",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Join groups of `group` documents; return (joined docs, queries with shifted gold).

    A query moves to the joined document that holds its documents; one whose documents
    end up in different joined documents is dropped (not possible when every query names
    one document, as in HotpotQA and ContractNLI). Queries with the same text that land
    in the same joined document become one query whose gold is the union of theirs
    (ContractNLI asks the same 17 hypotheses of every contract: in a bundle of contracts,
    the evidence of a hypothesis is its evidence in each of them).
    """
    if group < 1:
        raise ValueError(f"group must be >= 1, got {group}")
    order = list(docs)
    random.Random(seed).shuffle(order)
    joined, where = [], {}
    for g in range(0, len(order), group):
        parts, pos = [], 0
        doc_id = f"{prefix}-{g // group:03d}"
        for d in order[g : g + group]:
            where[str(d["doc_id"])] = (doc_id, pos)
            parts.append(d["text"])
            pos += len(d["text"]) + len(SEPARATOR)
        joined.append({"doc_id": doc_id, "text": SEPARATOR.join(parts),
                       "sources": [str(d["doc_id"]) for d in order[g : g + group]]})
    out = []
    for q in queries:
        targets = {where[str(d)][0] for d in q.get("doc_ids", []) if str(d) in where}
        if len(targets) != 1:
            continue
        gold = []
        for s in q.get("gold", []):
            doc_id, offset = where[str(s["doc_id"])]
            gold.append({**s, "doc_id": doc_id, "start": s["start"] + offset,
                         "end": s["end"] + offset})
        out.append({**q, "doc_ids": sorted(targets), "gold": gold})
    return joined, _merge_same_text(out)


def pool_documents(
    docs: Sequence[dict[str, Any]], distractors: dict[str, Sequence[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """DOCS followed by the DISTRACTORS (name -> documents), each distractor's id
    prefixed "{name}/" so no id collides: one corpus for corpus-wide search, where a
    query's own documents compete with every other document (the queries are unchanged)."""
    out = list(docs)
    seen = {str(d["doc_id"]) for d in out}
    for name, extra in distractors.items():
        for d in extra:
            doc_id = f"{name}/{d['doc_id']}"
            if doc_id in seen:
                raise ValueError(f"document id {doc_id!r} twice in the pool")
            seen.add(doc_id)
            out.append({"doc_id": doc_id, "text": d["text"]})
    return out


def _merge_same_text(queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One query per (joined document, query text), golds unioned, first qid kept + count."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for q in queries:
        key = (q["doc_ids"][0], q["query"])
        if key in merged:
            merged[key]["gold"] += q["gold"]
            merged[key]["merged_qids"].append(q["qid"])
        else:
            merged[key] = {**q, "qid": f"{q['doc_ids'][0]}:{q['qid']}",
                           "merged_qids": [q["qid"]], "gold": list(q["gold"])}
    return list(merged.values())


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m sproutrag.learn.devsets",
        description="Build a long-document set by joining groups of documents of a "
        "labelled set (SRC/SPLIT.docs.jsonl + SRC/SPLIT.queries.jsonl), shifting the gold "
        "spans of every query into the joined text.")
    p.add_argument("--src", required=True, help="folder with SPLIT.docs/queries.jsonl")
    p.add_argument("--split", nargs="+", default=["train", "dev"], help="splits (train dev)")
    p.add_argument("--group", type=int, default=10, help="documents per joined one (10)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (0)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--pool", nargs="+", metavar="NAME=FILE", default=[],
                   help="instead of joining: write SRC's documents and queries with the "
                   "documents of each FILE (a docs JSONL; ids prefixed NAME/) pooled in "
                   "as distractors, for `sproutrag evaluate --db DB --corpus-wide`")
    args = p.parse_args(argv)
    if args.pool:
        return _write_pooled(args)
    for split in args.split:
        docs = read_jsonl(Path(args.src) / f"{split}.docs.jsonl")
        queries = read_jsonl(Path(args.src) / f"{split}.queries.jsonl")
        joined, moved = join_documents(docs, queries, group=args.group, seed=args.seed,
                                       prefix=f"long-{split}")
        write_jsonl(Path(args.out) / f"{split}.docs.jsonl", joined)
        write_jsonl(Path(args.out) / f"{split}.queries.jsonl", moved)
        sizes = sorted(len(d["text"]) for d in joined)
        print(f"{split}: {len(joined)} documents (median {sizes[len(sizes) // 2]:,} chars), "
              f"{len(moved)} queries (from {len(queries)}) -> {args.out}")
    return 0


def _write_pooled(args: argparse.Namespace) -> int:
    distractors: dict[str, list[dict[str, Any]]] = {}
    for spec in args.pool:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--pool takes NAME=FILE (e.g. contractnli-dev="
                             f"../shared/data/contractnli/dev.docs.jsonl); got {spec!r}")
        distractors[name] = read_jsonl(path)
    for split in args.split:
        docs = read_jsonl(Path(args.src) / f"{split}.docs.jsonl")
        queries = read_jsonl(Path(args.src) / f"{split}.queries.jsonl")
        pooled = pool_documents(docs, distractors)
        write_jsonl(Path(args.out) / f"{split}.docs.jsonl", pooled)
        write_jsonl(Path(args.out) / f"{split}.queries.jsonl", queries)
        print(f"{split}: {len(docs)} documents + {len(pooled) - len(docs)} pooled in, "
              f"{len(queries)} queries -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
