"""Document and section evidence in corpus-wide search (issue 29): fit on train, decide on dev.

    PYTHONPATH=. .venv/bin/python bench/research/hierarchy.py [--pools ...] [--splits train dev]

Three pools (each split its own database under out/, indexed by the index flow on first
use, as `sproutrag evaluate --db` does):
- paragraphs: ../shared/data/hotpotqa-paragraphs (every HotpotQA paragraph a document, two
  gold documents per question among their look-alike distractors);
- hotpot-pooled: HotpotQA's documents with ContractNLI's pooled in (dev: the pool of
  docs/results.md "Stop 20"; train: HotpotQA train with ContractNLI train);
- long-pooled: the bundled long sets pooled the same way.

Every query is searched as `Retriever.search` does, through the database's own trees, leaf
terms and first stage (`Retriever.choose_documents`, per k), with the shipped parameters
and a grid of `doc_weight` (w_d, the document prior), `ancestor_weight` (w_a, the sections
above a node, tree mode only) and `doc_diversity` (lambda): within each query's documents
(doc_ids given) and corpus-wide (none). The first stage does not depend on the grid, so it
runs once per query and k; node scores once per query.

On train the grid point with the best mean corpus-wide unit IE over the pools (each pool
counts the same) is found, then the simplest point within one standard error of it (least
w_a, then w_d, then lambda). On dev: the shipped search, leaves + fitted prior, tree +
fitted hierarchy, within, corpus-wide, and corpus-wide with the first stage's missed gold
documents added (an oracle: what is left is the second stage's loss), unit IE and
char-IE, paired differences with standard errors, and where corpus-wide search loses
(gold documents chosen, units from other documents). docs/whole-corpus.md, "Whole-corpus
search: document and section evidence".
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("SPROUTRAG_PIPELINE__PROGRESS", "false")

SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "out"
KS = (1, 3, 5)
DOC_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)
ANCESTOR_GRID = (0.0, 0.25, 0.5, 1.0)
DIVERSITY_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)


# -- the pools ---------------------------------------------------------------------------


def pool_files(pool: str, split: str) -> tuple[Path, Path]:
    """(docs, queries) of a pool's split, built under out/data on first use."""
    from sproutrag.learn.devsets import main as devsets

    if pool == "paragraphs":
        src = SHARED / "hotpotqa-paragraphs"
        return src / f"{split}.docs.jsonl", src / f"{split}.queries.jsonl"
    if pool == "lookalike":  # data/lookalike-reports: test 72 documents, holdouts 96, 120, 144
        src = ROOT / "data" / "lookalike-reports"
        docs = {"test": "test.docs.jsonl", "holdout": "holdout.docs.jsonl",
                "holdout2": "holdout2.docs.jsonl", "holdout3": "holdout3.docs.jsonl",
                "holdout4": "holdout4.docs.jsonl", "holdout5": "holdout5.docs.jsonl",
                "holdout6": "holdout6.docs.jsonl",
                "holdout7": "holdout7.docs.jsonl",
                "holdout8": "holdout8.docs.jsonl",
                "holdout9": "holdout9.docs.jsonl",
                "holdout10": "holdout10.docs.jsonl",
                "holdout11": "holdout11.docs.jsonl",
                "holdout12": "holdout12.docs.jsonl"}.get(split, "docs.jsonl")
        return src / docs, src / f"{split}.queries.jsonl"
    if pool == "named-contracts":  # bench/research/named_contracts.py (rule 23)
        src = OUT / "data" / "named-contracts"
        if not (src / f"{split}.queries.jsonl").is_file():
            import subprocess
            subprocess.run([sys.executable, str(ROOT / "bench" / "research" /
                                                "named_contracts.py")], check=True)
        return src / f"{split}.docs.jsonl", src / f"{split}.queries.jsonl"
    other = "train" if split == "dev" else "dev"
    if pool == "hotpot-pooled":
        src = SHARED / "hotpotqa"
        pool_in = [f"contractnli-{split}={SHARED / 'contractnli' / f'{split}.docs.jsonl'}"]
        if split == "dev":  # the pool of docs/results.md, "Stop 20"
            pool_in += [f"hotpot-{other}={src / f'{other}.docs.jsonl'}",
                        f"contractnli-{other}={SHARED / 'contractnli' / f'{other}.docs.jsonl'}"]
    elif pool == "long-pooled":
        for name, base, group in (("hotpot-long", "hotpotqa", 10),
                                  ("contractnli-long", "contractnli", 5)):
            if not (OUT / "data" / name / "dev.docs.jsonl").is_file():
                devsets(["--src", str(SHARED / base), "--group", str(group),
                         "--out", str(OUT / "data" / name)])
        src = OUT / "data" / "hotpot-long"
        long_c = OUT / "data" / "contractnli-long"
        pool_in = [f"contractnli-long-{split}={long_c / f'{split}.docs.jsonl'}"]
        if split == "dev":
            pool_in += [f"hotpot-long-{other}={src / f'{other}.docs.jsonl'}",
                        f"contractnli-long-{other}={long_c / f'{other}.docs.jsonl'}"]
    else:
        raise SystemExit(f"unknown pool {pool!r}")
    out = OUT / "data" / f"{pool}-{split}"
    if not (out / f"{split}.queries.jsonl").is_file():
        devsets(["--src", str(src), "--split", split, "--out", str(out), "--pool", *pool_in])
    return out / f"{split}.docs.jsonl", out / f"{split}.queries.jsonl"


def open_pool(pool: str, split: str, settings: Any, encoder: Any):
    """(Retriever over the pool's database, its usable queries, their vectors)."""
    from sproutrag.flows.commands import run_index

    from sproutrag.learn.datasets import read_jsonl, usable_queries
    from sproutrag.search.retriever import Retriever

    docs, queries = pool_files(pool, split)
    db = OUT / f"db-hierarchy-{pool}-{split}"
    if not (db / ".complete").is_file():
        run_index(str(docs), str(db), settings, raise_outcome=True)
        (db / ".complete").write_text("indexed\n")
    r = Retriever(str(db), encoder=encoder, n_docs=settings.search.n_docs,
                  first_stage=settings.search.first_stage)
    with r._one_view():
        known = set(r._current().doc_ids.to_pylist())
    qs = usable_queries(read_jsonl(queries), known)
    return r, qs, encoder.encode_texts([q["query"] for q in qs])


# -- searching the grid ------------------------------------------------------------------


class Pool:
    """One pool split's queries with their documents loaded once: per query and k, the
    documents searched within (doc_ids) and corpus-wide (the first stage's)."""

    def __init__(self, name: str, retriever: Any, queries: list[dict], qvecs: np.ndarray):
        from sproutrag.search.tree_search import node_scores

        self.name, self.r, self.queries, self.qvecs = name, retriever, queries, qvecs
        self.base, _ = retriever._resolve()
        self.docs: dict[str, list[dict[int, list[str]]]] = {"within": [], "wide": [],
                                                           "wide+gold": []}
        self.trees, self.terms, self.spans = {}, {}, {}
        for q, v in zip(queries, qvecs, strict=True):
            with retriever._one_view():
                wide = {k: retriever.choose_documents(v, None, k=k, query=q["query"])
                        for k in KS}
            self.docs["within"].append({k: list(q["doc_ids"]) for k in KS})
            self.docs["wide"].append(wide)
            self.docs["wide+gold"].append(  # the first stage's, its misses added: an oracle
                {k: list(dict.fromkeys(wide[k] + list(q["doc_ids"]))) for k in KS})
            for d in set(q["doc_ids"]).union(*wide.values()):
                if d not in self.trees:
                    tid, st = retriever.documents.load_trees([d])[d]
                    self.trees[d], self.spans[d] = st.tree, st.spans
                    self.terms[d] = retriever.leaf_terms(d, tid)
        # node scores per query and scope, over the union of the k's documents
        self._scores = {}
        for scope in self.docs:
            for n, (q, v) in enumerate(zip(queries, qvecs, strict=True)):
                for k in KS:
                    docs = self.docs[scope][n][k]
                    self._scores[scope, n, k] = node_scores(
                        {d: self.trees[d] for d in docs}, v, query=q["query"],
                        lexical={d: self.terms[d] for d in docs},
                        lexical_weight=self.base.lexical_weight)

    def runs(self, mode: str, scope: str, params: Any) -> dict[int, list[list[tuple]]]:
        """Ranked units per k per query, as `Retriever._tree` / `_leaves` rank them."""
        from sproutrag.search.tree_search import leaves_mode, search_trees

        out: dict[int, list] = {k: [] for k in KS}
        for n, (q, v) in enumerate(zip(self.queries, self.qvecs, strict=True)):
            for k in KS:
                docs = self.docs[scope][n][k]
                trees = {d: self.trees[d] for d in docs}
                terms = {d: self.terms[d] for d in docs}
                if mode == "tree":
                    chosen = search_trees(trees, v, k=k, params=params, query=q["query"],
                                          lexical=terms, scores=self._scores[scope, n, k])
                    units = [(c.doc_id, int(u)) for c in chosen for u in c.leaves]
                else:
                    ranked = leaves_mode({d: t.vectors[: t.n] for d, t in trees.items()}, v,
                                         k=k, params=params, query=q["query"], lexical=terms)
                    units = [(d, int(u)) for d, u, _ in ranked]
                out[k].append([(d, *map(int, self.spans[d][u])) for d, u in units])
        return out

    def row(self, name: str, runs: dict[int, list]) -> dict[str, Any]:
        from sproutrag.learn.evaluation import result_row

        return result_row(name, runs, {}, self.queries, units=self.spans)

    def loss(self, runs: dict[int, list]) -> dict[str, float]:
        """Gold documents the first stage chose at k = 5, and the share of units from
        documents without gold."""
        found = other = units = 0.0
        for n, q in enumerate(self.queries):
            gold = set(q["doc_ids"])
            found += len(gold & set(self.docs["wide"][n][max(KS)])) / len(gold)
            other += sum(d not in gold for d, _, _ in runs[max(KS)][n])
            units += len(runs[max(KS)][n])
        return {"gold_docs_chosen": found / len(self.queries),
                "non_gold_units": other / max(units, 1)}


# -- fitting and reporting --------------------------------------------------------------


def per_query(row: dict[str, Any], key: str = "ie") -> np.ndarray:
    return np.asarray(row["per_query"][key], np.float64)


def grid(mode: str):
    ancestors = ANCESTOR_GRID if mode == "tree" else (0.0,)
    return list(itertools.product(DOC_GRID, ancestors, DIVERSITY_GRID))


def fit(pools: list[Pool], mode: str) -> tuple[tuple[float, float, float], list[dict]]:
    """The simplest grid point within one SE of the best mean corpus-wide IE over POOLS."""
    trials = []
    for point in grid(mode):
        ies = []
        for p in pools:
            params = replace(p.base, doc_weight=point[0], ancestor_weight=point[1],
                             doc_diversity=point[2])
            ies.append(per_query(p.row("", p.runs(mode, "wide", params))))
        trials.append((point, ies))
        print(f"  {mode} w_d {point[0]:g} w_a {point[1]:g} lambda {point[2]:g}: "
              + " ".join(f"{100 * x.mean():5.1f}" for x in ies), flush=True)

    point = one_se_choice(trials, lambda pt: (pt[1], pt[0], pt[2]), mode)
    return point, [{"w_d": pt[0], "w_a": pt[1], "lambda": pt[2], "ie": mean_ie(ies)}
                   for pt, ies in trials]


def mean_ie(ies: list[np.ndarray]) -> float:
    """The mean over pools (each counts the same) of their mean per-query IE."""
    return float(np.mean([x.mean() for x in ies]))


def one_se_choice(trials: list[tuple[Any, list[np.ndarray]]], simplest: Any,
                  label: str) -> Any:
    """The simplest point (least SIMPLEST(point)) whose mean IE over the pools is within
    one standard error of the best's; TRIALS: (point, per-query IE per pool)."""
    best_point, best = max(trials, key=lambda t: mean_ie(t[1]))

    def se(ies):  # SE of the mean paired difference to the best, pools weighted equally
        d = [b - x for b, x in zip(best, ies)]
        return float(np.sqrt(sum(v.var(ddof=1) / len(v) for v in d)) / len(d))

    ok = [pt for pt, ies in trials if mean_ie(ies) >= mean_ie(best) - se(ies) - 1e-12]
    point = min(ok, key=simplest)
    print(f"{label}: best {best_point} IE {100 * mean_ie(best):.2f}; chosen (1 SE) {point}",
          flush=True)
    return point


def tree_runs(p: Pool, scope: str, scores: Any) -> dict[int, list]:
    """Tree mode (the shipped search) over each query's documents (SCOPE) with the node
    scores SCORES(n, k, docs) gives, as (doc_id, start, end) units per k per query."""
    from sproutrag.search.tree_search import search_trees

    out: dict[int, list] = {k: [] for k in KS}
    for n, (q, v) in enumerate(zip(p.queries, p.qvecs, strict=True)):
        for k in KS:
            docs = p.docs[scope][n][k]
            chosen = search_trees({d: p.trees[d] for d in docs}, v, k=k, params=p.base,
                                  query=q["query"], lexical={d: p.terms[d] for d in docs},
                                  scores=scores(n, k, docs))
            out[k].append([(c.doc_id, *map(int, p.spans[c.doc_id][u]))
                           for c in chosen for u in c.leaves])
    return out


def paired(a: dict, b: dict, key: str) -> tuple[float, float]:
    from sproutrag.learn.metrics import paired_difference

    return paired_difference(a["per_query"][key], b["per_query"][key])


def difference(row: dict, ref: dict, key: str = "ie") -> str:
    """ROW - REF paired per query, in points: "+0.56 +/- 1.03 (+0.5 SE)"."""
    d, se = paired(row, ref, key)
    return f"{100 * d:+.2f} +/- {100 * se:.2f} ({d / se if se else 0:+.1f} SE)"


def against(row: dict, ref: dict, within: dict) -> str:
    """ROW's IE and char-IE with their ratios to WITHIN and paired differences to REF."""
    return "; ".join(
        f"{label} {100 * row['avg'][key]:.2f} ({row['avg'][key] / within['avg'][key]:.3f}x "
        f"within): {difference(row, ref, key)}"
        for label, key in (("IE", "ie"), ("char-IE", "char_ie")))


def compare_dev(names: list[str], settings: Any, encoder: Any, label: str,
                row: Any) -> None:
    """Print, for each dev pool of NAMES, a variant (LABEL) against today's search,
    corpus-wide and within, paired; ROW(pool, scope, variant_on) gives a result row."""
    for name in names:
        p = Pool(name, *open_pool(name, "dev", settings, encoder))
        within = row(p, "within", False)
        for scope in ("wide", "within"):
            ref = within if scope == "within" else row(p, scope, False)
            print(f"{name} dev {scope}: today IE {100 * ref['avg']['ie']:.2f}, {label} "
                  f"{against(row(p, scope, True), ref, within)}", flush=True)


#: The three pools every research script measures by default.
POOLS = ["paragraphs", "hotpot-pooled", "long-pooled"]


def evaluate(p: Pool, fitted: dict[str, tuple]) -> dict[str, Any]:
    """Rows of one dev pool: today's search and the fitted ones, within and corpus-wide."""
    rows: dict[str, dict] = {}
    for mode in ("leaves", "tree"):
        variants = {"today": (0.0, 0.0, 0.0), "prior": fitted["leaves"]}
        if mode == "tree":
            variants["hierarchy"] = fitted["tree"]
        for label, (wd, wa, lam) in variants.items():
            params = replace(p.base, doc_weight=wd, ancestor_weight=wa, doc_diversity=lam)
            for scope in ("within", "wide", "wide+gold"):
                runs = p.runs(mode, scope, params)
                row = p.row(f"{mode} {label} {scope}", runs)
                if scope == "wide":
                    row["loss"] = p.loss(runs)
                rows[f"{mode} {label} {scope}"] = row
    return rows


def gold_on_top(p: Pool) -> dict[str, float]:
    """Share of a query's gold documents among the first |gold| of the documents searched
    corpus-wide (k = 5), ordered by the first stage, by the document prior D, and by each
    document's best leaf (its best rank score)."""
    from sproutrag.search.hierarchy import document_scores

    out: dict[str, list[float]] = {"first stage": [], "prior D": [], "best leaf": []}
    for n, (q, v) in enumerate(zip(p.queries, p.qvecs, strict=True)):
        docs, gold = p.docs["wide"][n][max(KS)], set(q["doc_ids"])
        prior = document_scores({d: p.trees[d].vectors[: p.trees[d].n] for d in docs}, v,
                                query=q["query"], lexical={d: p.terms[d] for d in docs},
                                lexical_weight=p.base.lexical_weight)
        sc = p._scores["wide", n, max(KS)]
        best = {d: float(sc[d].rank[: p.trees[d].n].max()) for d in docs}
        for key, order in (("first stage", docs),
                           ("prior D", sorted(docs, key=lambda d: -prior[d])),
                           ("best leaf", sorted(docs, key=lambda d: -best[d]))):
            out[key].append(len(set(order[: len(gold)]) & gold) / len(gold))
    return {k: float(np.mean(v)) for k, v in out.items()}


def by_type(p: Pool, rows: dict[str, dict]) -> dict[str, tuple[int, float, float]]:
    """Per question type ("type" of the queries, e.g. bridge / comparison): (queries, tree
    IE within, corpus-wide)."""
    types = [str(q.get("type", "-")) for q in p.queries]
    within = per_query(rows["tree today within"])
    wide = per_query(rows["tree today wide"])
    return {t: (types.count(t), float(within[[x == t for x in types]].mean()),
                float(wide[[x == t for x in types]].mean())) for t in sorted(set(types))}


def show(name: str, rows: dict[str, dict]) -> None:
    print(f"\n{name}")
    ref = rows["leaves today wide"]
    for key, row in rows.items():
        a = row["avg"]
        line = f"  {key:28s} IE {100 * a['ie']:5.1f}  cIE {100 * a['char_ie']:5.1f}"
        if row is not ref and not key.endswith("within"):
            m, se = paired(row, ref, "ie")
            c, cse = paired(row, ref, "char_ie")
            line += f"  vs leaves today: IE {100 * m:+5.1f} +/- {100 * se:4.1f}, cIE " \
                    f"{100 * c:+5.1f} +/- {100 * cse:4.1f}"
        if "loss" in row:
            line += (f"  [gold docs chosen {row['loss']['gold_docs_chosen']:.0%}, units "
                     f"from other docs {row['loss']['non_gold_units']:.0%}]")
        print(line, flush=True)
    for mode in ("leaves", "tree"):
        for label in ("today", "prior") + (("hierarchy",) if mode == "tree" else ()):
            w, c = rows[f"{mode} {label} within"]["avg"], rows[f"{mode} {label} wide"]["avg"]
            print(f"  {mode} {label}: corpus-wide / within: IE {c['ie'] / w['ie']:.3f}, "
                  f"cIE {c['char_ie'] / w['char_ie']:.3f}")
    for a, b in (("tree hierarchy", "leaves prior"), ("tree today", "leaves today"),
                 ("leaves prior", "leaves today"), ("tree hierarchy", "tree today")):
        for scope in ("wide", "within"):
            m, se = paired(rows[f"{a} {scope}"], rows[f"{b} {scope}"], "ie")
            c, cse = paired(rows[f"{a} {scope}"], rows[f"{b} {scope}"], "char_ie")
            print(f"  {a} - {b} ({scope}): IE {100 * m:+5.2f} +/- {100 * se:4.2f} "
                  f"({m / se if se else 0:+.1f} SE), cIE {100 * c:+5.2f} +/- {100 * cse:4.2f}")


def open_probed_pool(pool: str, split: str, settings: Any, encoder: Any):
    """`open_pool` with rule 31's "alone" off (so that a probe sees every named document
    of a question), and the Retriever's search parameters: (retriever, queries, vectors,
    params)."""
    r, qs, qv = open_pool(pool, split, settings, encoder)
    r.mention_alone = False
    return r, qs, qv, r._resolve()[0]


def each_found(r: Any, queries: list[dict], qvecs: Any, params: Any):
    """Per question of a pool: (question, vector, the first stage's documents, what the
    shipped search reads for it: `SearchedDocuments.find`), yielded inside one view of
    R's trees, so that the caller may search or read more in the same view."""
    for q, v in zip(queries, qvecs, strict=True):
        with r._one_view():
            docs = r.choose_documents(v, None, k=5, query=q["query"])
            yield q, v, docs, r.searching.find(q["query"], v, docs, params, True)


def found_questions(pool: str, split: str, settings: Any, encoder: Any):
    """POOL's SPLIT opened through the shipped Retriever: (retriever, `each_found` over its
    questions with its search parameters), what a probe walks."""
    r, qs, qv = open_pool(pool, split, settings, encoder)
    return r, each_found(r, qs, qv, r._resolve()[0])


def probe_main(probe: Any, argv: list[str] | None = None) -> int:
    """Run PROBE(pool, split, settings, encoder) -> counts on each pool named after the
    split on the command line ("dev paragraphs named-contracts") and print its counts."""
    args = sys.argv[1:] if argv is None else argv
    split, pools = args[0], args[1:]
    settings, encoder = default_encoder()
    for name in pools:
        print(name, split, probe(name, split, settings, encoder), flush=True)
    return 0


def default_encoder() -> tuple[Any, Any]:
    """(the default settings, their encoder with the packaged trained weights)."""
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights

    settings = load_settings(None)
    return settings, encoder_from_settings(settings.encoding,
                                           load_default_weights(settings.encoding.weights))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=POOLS)
    ap.add_argument("--fitted", help="JSON {leaves: [w_d, w_a, lambda], tree: [...]}: skip "
                    "the fit on train")
    ap.add_argument("--out", default=str(OUT / "hierarchy.json"))
    args = ap.parse_args(argv)
    settings, encoder = default_encoder()
    report: dict[str, Any] = {}
    if args.fitted:
        fitted = {k: tuple(v) for k, v in json.loads(args.fitted).items()}
    else:
        train = [Pool(f"{n}-train", *open_pool(n, "train", settings, encoder))
                 for n in args.pools]
        fitted = {}
        for mode in ("leaves", "tree"):
            fitted[mode], report[f"grid {mode}"] = fit(train, mode)
    report["fitted"] = fitted
    print(f"fitted on train: {fitted}", flush=True)
    for n in args.pools:
        p = Pool(f"{n}-dev", *open_pool(n, "dev", settings, encoder))
        rows = evaluate(p, fitted)
        show(f"{n} dev ({len(p.queries)} queries)", rows)
        top = gold_on_top(p)
        print("  gold documents among the first |gold| searched: " + ", ".join(
            f"{k} {v:.0%}" for k, v in top.items()))
        for t, (count, w, c) in by_type(p, rows).items():
            print(f"  {t} ({count} queries): tree IE within {100 * w:.1f}, corpus-wide "
                  f"{100 * c:.1f} ({c / w if w else 0:.2f}x)")
        report[f"{n}-dev"] = {k: {"avg": r["avg"], "per_query": r["per_query"],
                                  "loss": r.get("loss")} for k, r in rows.items()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, default=float), encoding="utf-8")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
