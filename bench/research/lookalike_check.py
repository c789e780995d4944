"""Check one look-alike cluster written to `bench/research/lookalike_spec.md`.

    python3 bench/research/lookalike_check.py DIR

DIR holds `docs.jsonl` (8 documents) and `questions.jsonl` (16 questions). Prints OK, or
every problem found (exit 1). Checks: 8 documents of 5,000-9,000 ASCII characters whose
ids share one cluster prefix, 16 questions of the four types in the numbers the
specification asks (6 one-named, 2 one-described, 6 two, 2 two-described), the number of
doc_ids each type needs, gold in every document a question names, and every quote
occurring exactly once in its document. (Written again at stop 84: the checker the
`-d` to `-f` writers ran was untracked, out/lookalike/check_d.py.)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

TYPES = {"one-named": (6, 1), "one-described": (2, 1), "two": (6, 2), "two-described": (2, 2)}


def _lines(path: Path, problems: list[str]) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except (OSError, ValueError) as e:
        problems.append(f"{path.name}: {e}")
        return []


def check_docs(docs: list[dict], problems: list[str]) -> dict[str, str]:
    texts = {d.get("doc_id"): d.get("text", "") for d in docs}
    if len(docs) != 8 or len(texts) != 8:
        problems.append(f"docs.jsonl: {len(docs)} documents ({len(texts)} ids), need 8")
    if len({str(i).rsplit("-", 1)[0] for i in texts}) != 1:
        problems.append("docs.jsonl: doc_ids do not share one cluster prefix")
    for i, t in texts.items():
        if not 5000 <= len(t) <= 9000:
            problems.append(f"{i}: {len(t)} characters, need 5,000-9,000")
        if not t.isascii():
            problems.append(f"{i}: not ASCII")
    return texts


def check_questions(qs: list[dict], texts: dict[str, str], problems: list[str]) -> None:
    counts = Counter(q.get("type") for q in qs)
    for kind, (n, _) in TYPES.items():
        if counts[kind] != n:
            problems.append(f"questions.jsonl: {counts[kind]} of type {kind}, need {n}")
    if len(qs) != 16 or len({q.get("qid") for q in qs}) != 16:
        problems.append(f"questions.jsonl: {len(qs)} questions, need 16 distinct qids")
    for q in qs:
        qid, ids = q.get("qid"), q.get("doc_ids", [])
        need = TYPES.get(q.get("type"), (0, 0))[1]
        if len(set(ids)) != need or not set(ids) <= set(texts):
            problems.append(f"{qid}: doc_ids {ids} (type {q.get('type')} needs {need} known)")
        gold = q.get("gold", [])
        if {g.get("doc_id") for g in gold} != set(ids):
            problems.append(f"{qid}: gold is not in every document of doc_ids")
        for g in gold:
            n = texts.get(g.get("doc_id"), "").count(g.get("quote") or "\0")
            if n != 1:
                problems.append(f"{qid}: quote occurs {n} times in {g.get('doc_id')}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    folder, problems = Path(argv[0]), []
    texts = check_docs(_lines(folder / "docs.jsonl", problems), problems)
    check_questions(_lines(folder / "questions.jsonl", problems), texts, problems)
    print("\n".join(problems) if problems else "OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
