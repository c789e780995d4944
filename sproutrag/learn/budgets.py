"""evaluate --budgets: contexts under a character budget, scored by character precision
and recall (LegalBench-RAG's definitions) per budget.

Per query and budget B, each system's context (`sproutrag.search.context`) is scored:
``P = |context & gold| / |context|`` (0 for an empty context), ``R = |context & gold| /
|gold|`` over the union of characters per document, and ``P x R``; a row reports them per
budget, their mean over the budgets, and the spans per context. Systems: flat (leaves by
cosine), the tree's own fused score with leaves competing alone (`leaves`), with a
window of neighbours (`window`), every tree node (`tree`), and the LanceDB baselines
(their two-sentence chunks in rank order, filled the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sproutrag.learn.datasets import gold_spans
from sproutrag.learn.features import DocFeatures
from sproutrag.learn.metrics import intersection_length, paired_difference, span_length
from sproutrag.params import SearchParams
from sproutrag.search.context import (
    DEFAULT_LENGTH_PENALTY,
    DEFAULT_MARGIN,
    DEFAULT_WINDOW,
    Units,
    build_context,
    ranked_pieces,
    selection_pieces,
)
from sproutrag.search.hierarchy import hierarchical_scores
from sproutrag.search.node_scores import cosine_scores, node_scores
from sproutrag.trees.tree import Tree

DocSpan = tuple[str, int, int]

#: The budgets of `sproutrag evaluate --budgets` by default (characters).
BUDGETS = (500, 1000, 2000)


def char_pr(context: Sequence[DocSpan], gold: Sequence[DocSpan]) -> tuple[float, float]:
    """(character precision, character recall) of CONTEXT's spans against GOLD's."""
    ret: dict[str, list] = {}
    ref: dict[str, list] = {}
    for d, s, e in context:
        ret.setdefault(str(d), []).append((int(s), int(e)))
    for d, s, e in gold:
        ref.setdefault(str(d), []).append((int(s), int(e)))
    inter = sum(intersection_length(v, ref[d]) for d, v in ret.items() if d in ref)
    n_ret = sum(span_length(v) for v in ret.values())
    n_gold = sum(span_length(v) for v in ref.values())
    return (inter / n_ret if n_ret else 0.0, inter / n_gold if n_gold else 0.0)


@dataclass(frozen=True)
class Selection:
    """How a row's context is chosen: SELECTION (`sproutrag.search.context.SELECTIONS`, or
    "flat": leaves by cosine), its length penalty and window."""

    name: str
    selection: str
    length_penalty: float = DEFAULT_LENGTH_PENALTY
    window: int = DEFAULT_WINDOW
    margin: float | None = DEFAULT_MARGIN


def default_selections() -> list[Selection]:
    """The rows `evaluate --budgets` reports for the project's own search."""
    cut = f"cutoff {DEFAULT_MARGIN:g}" if DEFAULT_MARGIN is not None else "no cutoff"
    return [Selection("flat (cosine), budget filled", "flat"),
            Selection("leaves, budget filled", "leaves", margin=None),
            Selection(f"leaves, {cut} (shipped)", "leaves"),
            Selection(f"leaves with {DEFAULT_WINDOW} neighbour(s) each side, {cut}", "window"),
            Selection(f"tree nodes, {cut}", "tree")]


def query_contexts(
    q: dict[str, Any], qvec: np.ndarray, feats: Mapping[str, DocFeatures],
    texts: Mapping[str, str], trees: Mapping[str, Tree], params: SearchParams,
    selections: Sequence[Selection], budgets: Sequence[int],
    doc_vectors: Mapping[str, np.ndarray] | None = None,
    doc_questions: Mapping[str, str] | None = None,
) -> dict[str, dict[int, list[DocSpan]]]:
    """Each selection's context (doc spans) of one query at each budget, within the
    query's documents, scored as tree mode scores them (`hierarchical_scores`; DOC_VECTORS,
    DOC_QUESTIONS: some documents' vectors and BM25 texts, `variants.NameFree.own`)."""
    docs = list(q["doc_ids"])
    sub = {d: trees[d] for d in docs}
    units = {d: Units(feats[d].spans, texts[d]) for d in docs}
    lexical = ({d: feats[d].terms for d in docs} if params.lexical_weight > 0 else None)
    query = q.get("query", "")
    scores = node_scores(sub, qvec, query=query, lexical=lexical,
                         lexical_weight=params.lexical_weight, doc_vectors=doc_vectors,
                         doc_questions=doc_questions)
    scores = hierarchical_scores(sub, scores, params, qvec, query=query, lexical=lexical)
    rank = {d: s.rank for d, s in scores.items()}
    out: dict[str, dict[int, list[DocSpan]]] = {}
    for sel in selections:
        if sel.selection == "flat":
            cos = {d: cosine_scores(feats[d].emb, qvec) for d in docs}
            order = sorted((-float(c[u]), d, u) for d, c in cos.items() for u in range(len(c)))
            pieces, overlap = ranked_pieces((d, u, -r) for r, d, u in order), "skip"
        else:
            pieces, overlap = selection_pieces(sel.selection, rank, units, trees=sub,
                                               length_penalty=sel.length_penalty,
                                               window=sel.window, margin=sel.margin)
        out[sel.name] = {b: build_context(pieces, units, budget_chars=b,
                                          overlap=overlap).doc_spans() for b in budgets}
    return out


def budget_row(name: str, contexts: Sequence[Mapping[int, Sequence[DocSpan]]],
               queries: Sequence[dict[str, Any]], budgets: Sequence[int], **extra: Any
               ) -> dict[str, Any]:
    """One report row: per budget the mean char P, R, P x R and spans per context; their
    mean P x R over the budgets, and per query its P x R averaged over the budgets."""
    per_budget, per_query = {}, np.zeros(len(queries))
    for b in budgets:
        p, r, pr, spans = [], [], [], []
        for n, (q, ctx) in enumerate(zip(queries, contexts, strict=True)):
            cp, cr = char_pr(ctx[b], gold_spans(q))
            p.append(cp)
            r.append(cr)
            pr.append(cp * cr)
            spans.append(len(ctx[b]))
            per_query[n] += cp * cr / len(budgets)
        per_budget[str(b)] = {"p": float(np.mean(p)), "r": float(np.mean(r)),
                              "pr": float(np.mean(pr)), "spans": float(np.mean(spans))}
    return {"name": name, **extra, "budgets": per_budget,
            "mean_pr": float(np.mean([v["pr"] for v in per_budget.values()])),
            "per_query": {"qid": [str(q.get("qid", n)) for n, q in enumerate(queries)],
                          "pr": per_query.tolist()}}


def budget_rows(
    feats: Mapping[str, DocFeatures], texts: Mapping[str, str],
    queries: Sequence[dict[str, Any]], qvecs: np.ndarray, trees: Mapping[str, Tree],
    params: SearchParams, budgets: Sequence[int] = BUDGETS,
    selections: Sequence[Selection] | None = None, name_free: Any = None,
) -> list[dict[str, Any]]:
    """A `budget_row` per selection (default: `default_selections`) over QUERIES
    (NAME_FREE: a `variants.NameFree`, rules 62 and 80-82 as `Retriever` has them)."""
    selections = list(selections or default_selections())
    found = [query_contexts(q, v, feats, texts, trees, params, selections, budgets,
                            *((None, None) if name_free is None else name_free.own(
                                q.get("query", ""), v, trees, q["doc_ids"])))
             for q, v in zip(queries, qvecs, strict=True)]
    return [budget_row(s.name, [f[s.name] for f in found], queries, budgets,
                       mode=s.selection, length_penalty=s.length_penalty, window=s.window,
                       margin=s.margin)
            for s in selections]


def anchor_budget_rows(
    anchors: Sequence[str], table: Any, queries: Sequence[dict[str, Any]],
    qvecs: np.ndarray, texts: Mapping[str, str], budgets: Sequence[int] = BUDGETS,
    depth: int = 200,
) -> list[dict[str, Any]]:
    """A `budget_row` per LanceDB baseline: its first DEPTH chunks of the query's
    documents in rank order, filled to each budget as the project's leaves are."""
    from sproutrag.learn.anchors import ANCHORS

    units = {d: Units(s, texts[d]) for d, s in table.spans.items()}
    index = {d: {(int(a), int(b)): u for u, (a, b) in enumerate(s.tolist())}
             for d, s in table.spans.items()}
    rows = []
    for a in anchors:
        contexts = []
        for q, v in zip(queries, qvecs, strict=True):
            ranked = table.search(a, q["query"], v, [str(d) for d in q["doc_ids"]], depth)
            pieces = ranked_pieces((d, index[d][(int(s), int(e))], 0.0) for d, s, e in ranked)
            docs = {d: units[d] for d in q["doc_ids"] if d in units}
            contexts.append({b: build_context(pieces, docs, budget_chars=b).doc_spans()
                             for b in budgets})
        rows.append(budget_row(f"{ANCHORS[a]}, budget", contexts, queries, budgets, mode=a,
                               notes="LanceDB's own search"))
    return rows


def retriever_budget_rows(
    retriever: Any, queries: Sequence[dict[str, Any]], budgets: Sequence[int], label: str,
    *, corpus_wide: bool = False,
) -> list[dict[str, Any]]:
    """The shipped context through a database `Retriever` (`Retriever.context`: its
    default selection and cutoff) under each character budget: a `budget_row` within each
    query's documents, and with CORPUS_WIDE one over the whole database (no doc_ids: the
    first stage chooses, as `sproutrag query --budget-chars` does), its mean P x R paired
    against the first in ``row["corpus_wide"]`` and its notes. LABEL names the database."""
    scopes = [("", True)] + ([(" corpus-wide", False)] if corpus_wide else [])
    rows = []
    for scope, within in scopes:
        contexts = [{b: [(s.doc_id, s.start, s.end) for s in retriever.context(
                        q["query"], budget_chars=b,
                        doc_ids=list(q["doc_ids"]) if within else None).spans]
                     for b in budgets} for q in queries]
        rows.append(budget_row(f"shipped context{scope} [{label}]", contexts, queries,
                               budgets, mode="context",
                               notes="stored path" + ("" if within else ", no doc_ids")))
    if corpus_wide:
        inside, wide = rows
        mean, se = paired_difference(wide["per_query"]["pr"], inside["per_query"]["pr"])
        ratio = wide["mean_pr"] / inside["mean_pr"] if inside["mean_pr"] else 0.0
        wide["corpus_wide"] = {"pr_ratio": ratio, "pr_difference": mean, "pr_se": se}
        wide["notes"] += (f"; mean char P x R under the budgets {ratio:.2f}x within "
                          f"({100 * mean:+.2f} +/- {100 * se:.2f}, paired)")
    return rows


def budget_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per row P, R and P x R per budget, mean P x R, spans per context; the
    ratio and paired difference of mean P x R to the better LanceDB baseline, and to the
    best leaves row (leaves or window: what the tree must beat)."""
    if not rows:
        return ""
    budgets = list(rows[0]["budgets"])
    anchors = [r for r in rows if str(r.get("mode", "")).startswith("lancedb")]
    leaves = [r for r in rows if r.get("mode") in ("leaves", "window")]
    best_anchor = max(anchors, key=lambda r: r["mean_pr"], default=None)
    best_leaves = max(leaves, key=lambda r: r["mean_pr"], default=None)
    head = ["context", *[f"{x}@{b}" for b in budgets for x in ("P", "R")], "mean P x R",
            *[f"spans@{b}" for b in budgets]]
    if best_leaves:
        head.append("- best leaves (paired)")
    if best_anchor:
        head += ["/ best LanceDB", "- best LanceDB (paired)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["name"], *[f"{100 * r['budgets'][b][x]:.1f}" for b in budgets
                              for x in ("p", "r")],
                 f"**{100 * r['mean_pr']:.2f}**",
                 *[f"{r['budgets'][b]['spans']:.1f}" for b in budgets]]
        if best_leaves:
            cells.append(_paired(r, best_leaves))
        if best_anchor:
            cells += [f"{r['mean_pr'] / max(best_anchor['mean_pr'], 1e-12):.3f}",
                      _paired(r, best_anchor)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _paired(row: dict[str, Any], ref: dict[str, Any]) -> str:
    a, b = row["per_query"], ref["per_query"]
    if a["qid"] != b["qid"]:
        return "-"
    mean, se = paired_difference(a["pr"], b["pr"])
    return f"{100 * mean:+.2f} +/- {100 * se:.2f}"


__all__ = ["BUDGETS", "Selection", "anchor_budget_rows", "budget_row", "budget_rows",
           "budget_table", "char_pr", "default_selections", "query_contexts",
           "retriever_budget_rows"]
