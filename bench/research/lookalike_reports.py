"""A pool of look-alike reports: issue 29's independent set, as near as the project can
write one (stop 79).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/lookalike_reports.py --build
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/lookalike_reports.py \
        --run train|dev|test|holdout|holdout2|...|holdout12 [--label today]

Issue 29 measured its loss on a set the project never sees: 108 finance, law and medical
reports of similar companies and cases, 300 questions, 43% of them about two documents.
`data/lookalike-reports/` is the project's own stand-in, every text invented for it
(`out/lookalike/SPEC.md` is what its writers were asked): six clusters of 8 look-alike
long documents (fiscal-year reports of robotics makers and of regional banks, appellate
decisions on non-competes and district-court opinions on implanted devices, case reports
of autoimmune encephalitis and of endocarditis), 14 questions each: 6 that name their
document, 2 that describe it without its name and 6 that compare two named documents.
The pool is the 48 documents of the `-a` and `-b` clusters; the `-a` clusters' questions
are the train split, the `-b` clusters' the dev split. Three `-c` clusters, written later
(stop 79), are a test split of their own: their questions over all 72 documents
(`test.docs.jsonl`), to check on unseen documents a rule chosen on train and dev. Three
`-d` clusters (stop 83, `bench/research/lookalike_spec.md`: 16 questions each, also two
`two-described`) are the holdout split: their questions over all 96 documents
(`holdout.docs.jsonl`); three `-e` clusters, written later in stop 83 to the same
specification, the holdout2 split over all 120 (`holdout2.docs.jsonl`), and three `-f`
clusters the holdout3 split over all 144 (`holdout3.docs.jsonl`); three `-g` clusters
(stop 84: utilities' reports, malpractice appeals, takotsubo case reports) the holdout4
split over all 168 (`holdout4.docs.jsonl`); three `-h` clusters (trucking companies'
reports, ERISA benefit opinions, necrotizing-fasciitis case reports) the holdout5 split
over all 192 (`holdout5.docs.jsonl`); three `-i` clusters (hotel operators' reports,
construction-defect opinions, pulmonary-embolism case reports) the holdout6 split over
all 216 (`holdout6.docs.jsonl`); three `-j` clusters (stop 85: homebuilders' reports,
trademark appeals, cardiac-sarcoidosis case reports) the holdout7 split over all 240
(`holdout7.docs.jsonl`); three `-k` clusters (specialty chemical makers' reports,
whistleblower wrongful-discharge appeals, adult-onset Still's disease case reports) the
holdout8 split over all 264 (`holdout8.docs.jsonl`); three `-l` clusters
(waste-management companies' reports, securities-fraud dismissal opinions, invasive
aspergillosis case reports) the holdout9 split over all 288 (`holdout9.docs.jsonl`);
three `-m` clusters (casual-dining chains' reports, premises-liability appeals,
thrombotic thrombocytopenic purpura case reports) the holdout10 split over all 312
(`holdout10.docs.jsonl`); three `-n` clusters (home-furnishings retailers' reports,
non-compete appeals, anti-NMDA receptor encephalitis case reports) the holdout11 split
over all 336 (`holdout11.docs.jsonl`); three `-o` clusters (craft-beverage companies'
reports, FLSA conditional-certification opinions, spontaneous coronary artery dissection
case reports) the holdout12 split over all 360 (`holdout12.docs.jsonl`).
`bench/research/lookalike_check.py DIR` checks a writer's cluster.

`--build` converts the writers' files (`out/lookalike/<cluster>/`, each gold sentence a
verbatim quote) into `data/lookalike-reports/docs.jsonl` and `{train,dev}.queries.jsonl`
(gold as character spans); a split whose writers' files are gone keeps its files, and its
documents come from them. `--run` indexes the pool (`out/db-lookalike`) and runs
`sproutrag evaluate --db --corpus-wide --modes tree leaves` on a split (with
`--budgets`, also the contexts under 500, 1,000 and 2,000 characters), then prints the
tree rows within and corpus-wide (unit IE, char-IE, their ratio) by question type.
Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = ROOT / "out" / "lookalike"
POOL = ROOT / "data" / "lookalike-reports"
CLUSTERS = {"train": ("fin-a", "law-a", "med-a"), "dev": ("fin-b", "law-b", "med-b"),
            "test": ("fin-c", "law-c", "med-c"), "holdout": ("fin-d", "law-d", "med-d"),
            "holdout2": ("fin-e", "law-e", "med-e"), "holdout3": ("fin-f", "law-f", "med-f"),
            "holdout4": ("fin-g", "law-g", "med-g"), "holdout5": ("fin-h", "law-h", "med-h"),
            "holdout6": ("fin-i", "law-i", "med-i"), "holdout7": ("fin-j", "law-j", "med-j"),
            "holdout8": ("fin-k", "law-k", "med-k"), "holdout9": ("fin-l", "law-l", "med-l"),
            "holdout10": ("fin-m", "law-m", "med-m"),
            "holdout11": ("fin-n", "law-n", "med-n"),
            "holdout12": ("fin-o", "law-o", "med-o")}
#: Each split's pool: the clusters written up to it (train and dev share one).
POOLS = {"train": "docs.jsonl", "dev": "docs.jsonl", "test": "test.docs.jsonl",
         "holdout": "holdout.docs.jsonl", "holdout2": "holdout2.docs.jsonl",
         "holdout3": "holdout3.docs.jsonl", "holdout4": "holdout4.docs.jsonl",
         "holdout5": "holdout5.docs.jsonl", "holdout6": "holdout6.docs.jsonl",
         "holdout7": "holdout7.docs.jsonl", "holdout8": "holdout8.docs.jsonl",
         "holdout9": "holdout9.docs.jsonl", "holdout10": "holdout10.docs.jsonl",
         "holdout11": "holdout11.docs.jsonl", "holdout12": "holdout12.docs.jsonl"}
DATABASES = {"train": "db-lookalike", "dev": "db-lookalike", "test": "db-lookalike-test",
             "holdout": "db-lookalike-holdout", "holdout2": "db-lookalike-holdout2",
             "holdout3": "db-lookalike-holdout3", "holdout4": "db-lookalike-holdout4",
             "holdout5": "db-lookalike-holdout5", "holdout6": "db-lookalike-holdout6",
             "holdout7": "db-lookalike-holdout7", "holdout8": "db-lookalike-holdout8",
             "holdout9": "db-lookalike-holdout9", "holdout10": "db-lookalike-holdout10",
             "holdout11": "db-lookalike-holdout11", "holdout12": "db-lookalike-holdout12"}
OUT = ROOT / "out" / "lookalike-runs"


def build() -> None:
    """The writers' clusters as one pool with character spans."""
    POOL.mkdir(parents=True, exist_ok=True)
    docs: dict[str, str] = {}  # the pools built before, then the writers' files over them
    for name in sorted(set(POOLS.values())):
        if (POOL / name).is_file():
            docs.update((o["doc_id"], o["text"]) for o in map(json.loads, open(POOL / name)))
    for split, clusters in CLUSTERS.items():
        if not all((WRITTEN / c / "docs.jsonl").is_file() for c in clusters):
            print(f"{split}: writers' files not here (its pool files stay as they are)")
            continue
        queries = []
        for c in clusters:
            for line in open(WRITTEN / c / "docs.jsonl", encoding="utf-8"):
                o = json.loads(line)
                docs[o["doc_id"]] = o["text"]
            for line in open(WRITTEN / c / "questions.jsonl", encoding="utf-8"):
                q = json.loads(line)
                gold = []
                for g in q["gold"]:
                    text = docs[g["doc_id"]]
                    start = text.index(g["quote"])
                    if text.count(g["quote"]) != 1:
                        raise SystemExit(f"{q['qid']}: quote not unique in {g['doc_id']}")
                    gold.append({"doc_id": g["doc_id"], "start": start,
                                 "end": start + len(g["quote"])})
                queries.append({"qid": q["qid"], "query": q["query"],
                                "doc_ids": q["doc_ids"], "gold": gold, "type": q["type"]})
        with open(POOL / f"{split}.queries.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(q) + "\n" for q in queries)
        print(f"{split}: {len(queries)} questions")
    for name in sorted(set(POOLS.values())):
        upto = max(i for i, s in enumerate(CLUSTERS) if POOLS[s] == name)
        held = {c for s in list(CLUSTERS)[: upto + 1] for c in CLUSTERS[s]}
        pool = {d: t for d, t in docs.items() if d.rsplit("-", 1)[0] in held}
        if not held <= {d.rsplit("-", 1)[0] for d in docs}:
            continue
        with open(POOL / name, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in pool.items())
        print(f"{name}: {len(pool)} documents, {sum(map(len, pool.values())):,} characters")


def run(split: str, label: str, budgets: bool = False) -> Path:
    """`sproutrag evaluate --db --corpus-wide` of SPLIT's questions over the whole pool."""
    from sproutrag.flows.cli import main

    out = OUT / f"{split}-{label}"
    if not (out / "results.json").is_file():
        docs, db = POOL / POOLS[split], ROOT / "out" / DATABASES[split]
        code = main(["evaluate", "--docs", str(docs), "--queries",
                     str(POOL / f"{split}.queries.jsonl"), "--db", str(db),
                     "--corpus-wide", "--modes", "tree", "leaves",
                     "--k", "1", "3", "5", "--cache", str(OUT / "cache"), "--out", str(out)]
                    + (["--budgets", "500", "1000", "2000"] if budgets else []))
        if code not in (0, 3):
            raise SystemExit(f"evaluate {split}: exit {code}")
    return out / "results.json"


def report(path: Path, split: str) -> None:
    """Tree mode within and corpus-wide, by question type."""
    rows = {r["name"].split(" [")[0]: r for r in json.loads(path.read_text())["rows"]
            if " [database " in r["name"]}
    types = {q["qid"]: q["type"] for q in map(json.loads, open(POOL /
                                                                f"{split}.queries.jsonl"))}
    for kind in ("all", "one-named", "one-described", "two", "two-described"):
        cells = []
        for metric in ("ie", "char_ie"):
            per = {}
            for row in ("tree", "tree corpus-wide"):
                pq = rows[row]["per_query"]
                per[row] = {q: v for q, v in zip(pq["qid"], pq[metric], strict=True)
                            if kind == "all" or types[q] == kind}
            if not per["tree"]:
                break
            w, c = (np.mean(list(per[r].values())) * 100 for r in ("tree", "tree corpus-wide"))
            d = 100 * np.array([per["tree corpus-wide"][q] - per["tree"][q] for q in per["tree"]])
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
            cells.append(f"{metric} {w:.2f} / {c:.2f} ({c / w if w else 0:.3f}x; "
                         f"{d.mean():+.2f} +/- {se:.2f})")
        if cells:
            print(f"  {kind:13} n {len(per['tree']):3d}  " + "  ".join(cells))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="store_true")
    ap.add_argument("--run", choices=tuple(CLUSTERS))
    ap.add_argument("--label", default="today")
    ap.add_argument("--budgets", action="store_true",
                    help="also the contexts under 500, 1,000 and 2,000 characters")
    args = ap.parse_args()
    if args.build:
        build()
    if args.run:
        path = run(args.run, args.label, args.budgets)
        print(f"{args.run} ({args.label}): unit / char IE, within / corpus-wide")
        report(path, args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
