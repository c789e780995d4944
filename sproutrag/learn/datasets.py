"""Labelled datasets on disk: JSON Lines of documents and of queries with gold spans.

A set is two files per split, `SPLIT.docs.jsonl` (`{"doc_id", "text"}` per line) and
`SPLIT.queries.jsonl` (`{"qid", "query", "doc_ids", "gold": [{"doc_id", "start",
"end"}]}` per line), as in ../shared/data and as `sproutrag.learn.devsets` writes them.
Evaluation, training and the long dev sets read and write them here.
"""

from __future__ import annotations

import json
from collections.abc import Container, Sequence
from pathlib import Path
from typing import Any

from sproutrag.search.batch import write_jsonl  # noqa: F401 - the one JSONL writer


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every non-blank line of a JSON Lines file, parsed."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def gold_spans(q: dict[str, Any]) -> list[tuple[str, int, int]]:
    """A query's gold evidence as (doc id, start, end) character spans."""
    return [(str(g["doc_id"]), int(g["start"]), int(g["end"])) for g in q.get("gold", [])]


def usable_queries(
    queries: Sequence[dict[str, Any]], doc_ids: Container[str]
) -> list[dict[str, Any]]:
    """Queries with gold evidence whose documents are all in `doc_ids` (for example the
    featurized documents), each with its `doc_ids` as strings (from its gold when it
    names none)."""
    out = []
    for q in queries:
        docs = [str(d) for d in q.get("doc_ids") or sorted({g[0] for g in gold_spans(q)})]
        if gold_spans(q) and docs and all(d in doc_ids for d in docs):
            out.append({**q, "doc_ids": docs})
    return out
