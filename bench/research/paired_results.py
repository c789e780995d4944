"""Two `sproutrag evaluate --db DB --corpus-wide` runs compared per query (A - B).

Reads each run's results.json and prints, for tree mode through the database within the
questions' documents and over the whole corpus, both means and the paired difference
(mean +/- standard error over queries) of unit IE and char-IE, then each run's
corpus-wide / within ratio. Used for rule 22 of docs/whole-corpus.md (another encoder against
the shipped one, same pool):

    PYTHONPATH=. .venv/bin/python bench/research/paired_results.py A/results.json B/results.json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

ROWS = ("tree", "tree corpus-wide")
METRICS = ("ie", "char_ie")


def database_rows(path: str) -> dict[str, dict[str, Any]]:
    """The rows of a results.json run through a database, by name without the database."""
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    return {r["name"].split(" [")[0]: r for r in rows if " [database " in r["name"]}


def per_query(row: dict[str, Any], metric: str) -> dict[str, float]:
    pq = row["per_query"]
    return dict(zip(pq["qid"], pq[metric], strict=True))


def paired(a: dict[str, float], b: dict[str, float]) -> str:
    """A - B over the queries both hold, in points: mean +/- standard error."""
    d = 100 * np.array([a[q] - b[q] for q in sorted(a.keys() & b.keys())])
    return f"{d.mean():+.2f} +/- {d.std(ddof=1) / np.sqrt(len(d)):.2f} (n {len(d)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="results.json of run A")
    ap.add_argument("b", help="results.json of run B")
    args = ap.parse_args()
    runs = {"A": database_rows(args.a), "B": database_rows(args.b)}
    for name in ROWS:
        for metric in METRICS:
            a, b = (per_query(runs[r][name], metric) for r in "AB")
            print(f"{name:18s} {metric:8s} A {100 * np.mean(list(a.values())):6.2f} "
                  f"B {100 * np.mean(list(b.values())):6.2f}  A - B {paired(a, b)}")
    for label, rows in runs.items():
        for metric in METRICS:
            within, wide = (np.mean(list(per_query(rows[n], metric).values())) for n in ROWS)
            print(f"{label} corpus-wide / within {metric}: {wide / within:.3f}")


if __name__ == "__main__":
    main()
