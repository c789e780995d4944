"""evaluate: score retrieval variants on a labelled corpus, encoded once.

`evaluate_corpus` featurizes the documents (`sproutrag.learn.features`, cached), encodes the
queries, runs every `Variant` (`sproutrag.learn.variants`: the served search composition over
features in memory) and scores the ranked units with `sproutrag.learn.metrics`, the paper's
measure. `retriever_runs` scores the stored path through a database `Retriever`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.ingest.index_identity import encoder_fields
from sproutrag.learn.datasets import (
    gold_spans,
    read_labelled,
    scorable_queries,
    sorted_scorable,
)
from sproutrag.learn.features import DocFeatures, attach_terms, feature_path, featurize_corpus
from sproutrag.learn.metrics import (
    QueryScores,
    average_over_k,
    gold_units,
    per_query_ie,
    score_query,
    summarize,
)
from sproutrag.learn.variants import NameFree, Variant, run_variant, variant_trees
from sproutrag.search.name_free import NAME_FREE_LEAVES
from sproutrag.trees.tree import Tree


def query_scores(
    runs: dict[int, list[list[tuple[str, int, int]]]], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]], units: dict[str, np.ndarray] | None = None,
) -> dict[int, list[QueryScores]]:
    """Per-k, per-query scores of ranked units. UNITS: each document's (start, end) units
    where the runs come from another chunking (the LanceDB baselines); else FEATS' spans
    (they define the gold units of unit recall)."""
    spans = units if units is not None else {d: f.spans for d, f in feats.items()}
    gus = [
        gold_units([(d, int(s), int(e)) for d in q["doc_ids"] for s, e in spans.get(d, ())],
                   gold_spans(q))
        for q in queries
    ]
    return {
        k: [score_query(u, gold_spans(q), g, k=k)
            for u, q, g in zip(runs[k], queries, gus, strict=True)]
        for k in sorted(runs)
    }


def result_row(
    name: str, runs: dict[int, list[list[tuple[str, int, int]]]],
    feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]],
    units: dict[str, np.ndarray] | None = None, **extra: Any,
) -> dict[str, Any]:
    """One report row: per-k summaries, their average and each query's IE and charIE
    (UNITS: see `query_scores`)."""
    scores = query_scores(runs, feats, queries, units)
    per_k = [summarize(scores[k], k) for k in sorted(scores)]
    ordered = [scores[k] for k in sorted(scores)]
    return {"name": name, **extra, "per_k": [s.to_dict() for s in per_k],
            "avg": average_over_k(per_k), "per_query": {
                "qid": [str(q.get("qid", n)) for n, q in enumerate(queries)],
                "ie": per_query_ie(ordered), "char_ie": per_query_ie(ordered, "char_ie"),
            }}


def evaluate_variants(
    variants: Sequence[Variant], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]], qvecs: np.ndarray, ks: Sequence[int],
    name_free: NameFree | None = None,
) -> list[dict[str, Any]]:
    """One result row per variant: per-k summaries, average over k, tree statistics
    (NAME_FREE: rules 62 and 80-82 in tree and leaves modes, `run_variant`)."""
    rows = []
    for v in variants:
        trees = variant_trees(feats, v) if v.mode == "tree" else None
        hits: dict[str, int] = {}
        runs = run_variant(v, feats, queries, qvecs, ks, trees, hits, name_free)
        rows.append(result_row(
            v.name, runs, feats, queries, mode=v.mode, beam=v.search.beam_width,
            delta=v.search.threshold, margin=v.search.margin,
            doc_weight=v.search.doc_weight, ancestor_weight=v.search.ancestor_weight,
            doc_diversity=v.search.doc_diversity,
            parent_embedding=v.parent_embedding, relation=v.relation,
            band=v.band, notes=v.notes,
            stats=tree_stats(trees, runs, feats, queries, hits) if trees else {},
        ))
    return rows


def anchor_rows(
    anchors: Sequence[str], docs: Sequence[dict[str, Any]], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]], qvecs: np.ndarray, ks: Sequence[int], encoder: Any,
) -> list[dict[str, Any]]:
    """One result row per LanceDB baseline (`sproutrag.learn.anchors.ANCHORS` keys)."""
    from sproutrag.learn.anchors import ANCHORS, AnchorTable

    unknown = [a for a in anchors if a not in ANCHORS]
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; choose from {sorted(ANCHORS)}")
    with AnchorTable(docs, encoder) as table:
        return [result_row(ANCHORS[a], table.runs(a, queries, qvecs, ks), feats, queries,
                           table.spans, mode=a, notes="LanceDB's own search", stats={})
                for a in anchors]


def tree_stats(
    trees: dict[str, Tree], runs: dict[int, list], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]], hits: dict[str, int],
) -> dict[str, float]:
    """Figures that explain a tree variant: depth, shape, how often internal nodes win,
    and how tightly a query's gold leaves sit together in the tree."""
    depth = np.asarray([float(t.height[t.root]) for t in trees.values()])
    n = np.asarray([t.n for t in trees.values()], np.float64)
    kmax = max(runs)
    lca_sizes = []
    for q in queries:
        for d in q["doc_ids"]:
            f, t = feats[d], trees[d]
            gold = [(s, e) for dd, s, e in gold_spans(q) if dd == d]
            leaves = [u for u, (s, e) in enumerate(f.spans)
                      if any(max(s, gs) < min(e, ge) for gs, ge in gold)]
            if len(leaves) >= 2:
                lca_sizes.append(_lca_size(t, leaves))
    return {
        "mean_leaves": float(n.mean()), "mean_depth": float(depth.mean()),
        "depth_over_log2n": float(np.mean(depth / np.maximum(np.log2(n), 1))),
        "mean_units_at_kmax": float(np.mean([len(u) for u in runs[kmax]])),
        "hits_per_query_at_kmax": hits.get("hits", 0) / max(len(queries), 1),
        "internal_hit_share_at_kmax": hits.get("internal_hits", 0) / max(hits.get("hits", 0), 1),
        "median_gold_subtree_leaves": float(np.median(lca_sizes)) if lca_sizes else 0.0,
    }


def _lca_size(t: Tree, leaves: Sequence[int]) -> int:
    """Leaves under the smallest subtree holding all `leaves` (walks parent links)."""
    anc: set[int] = set()
    node = int(leaves[0])
    while node >= 0:
        anc.add(node)
        node = int(t.parent[node])
    best = int(leaves[0])
    for leaf in leaves[1:]:
        node = int(leaf)
        while node not in anc:
            node = int(t.parent[node])
        if t.n_leaves[node] > t.n_leaves[best]:
            best = node
    return int(t.n_leaves[best])


def read_inputs(docs_path: str | Path, queries_path: str | Path, *, log: Any = print
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(documents, labelled queries) of an evaluation, checked before anything is encoded
    or indexed (`read_labelled`): `DatasetError` when no query can be scored (a document
    of blank text has no units: it cannot hold the evidence)."""
    docs, labelled = read_labelled(docs_path, queries_path, log=log)
    with_text = {str(d.get("doc_id")) for d in docs if str(d.get("text") or "").strip()}
    scorable_queries(labelled, with_text, queries_path=queries_path, docs_path=docs_path,
                     known={str(d.get("doc_id")) for d in docs})
    return docs, labelled


def evaluate_corpus(
    docs_path: str | Path, queries_path: str | Path, *,
    encoder: Any, chunking: dict[str, Any], variants: Sequence[Variant],
    ks: Sequence[int] = (1, 3, 5), cache_dir: str | Path | None = None,
    anchors: Sequence[str] = (), log: Any = print, budgets: Sequence[int] = (),
    search: Any = None,
    inputs: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
    name_free_leaves: int = NAME_FREE_LEAVES,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Featurize (cached), encode the queries, score every variant (tree and leaves
    modes with rule 62's name-free vectors as `Retriever` has them, `variants.NameFree`;
    NAME_FREE_LEAVES 0: off), then every LanceDB baseline of ANCHORS
    (`sproutrag.learn.anchors`). With BUDGETS (characters), contexts under each budget
    too (`sproutrag.learn.budgets`, over the trees of the variant SEARCH, default the
    first tree variant), in ``meta["budget_rows"]``. INPUTS: what `read_inputs` gave
    (read here when None). (rows, meta)."""
    t0 = time.perf_counter()
    docs, labelled = inputs or read_inputs(docs_path, queries_path, log=log)
    known = {str(d.get("doc_id")) for d in docs}
    feats = featurize_corpus(docs, encoder, chunking=chunking, cache_dir=cache_dir, log=log)
    attach_terms(feats, docs)
    t1 = time.perf_counter()
    queries, dropped = sorted_scorable(labelled, feats, queries_path=queries_path,
                                       docs_path=docs_path, known=known, log=log)
    qvecs = encoder.encode_texts([q["query"] for q in queries])
    name_free = NameFree.of(feats, docs, encoder.encode_texts, name_free_leaves)
    rows = evaluate_variants(variants, feats, queries, qvecs, ks, name_free)
    if anchors:
        rows += anchor_rows(anchors, docs, feats, queries, qvecs, ks, encoder)
    budget = (context_rows(docs, feats, queries, qvecs, budgets, variants, search, anchors,
                           encoder, name_free) if budgets else None)
    meta = {
        "docs": str(docs_path), "queries": str(queries_path), "n_docs": len(feats),
        "n_queries": len(queries), "n_queries_given": len(labelled),
        "not_scored": dropped, "ks": list(ks),
        "chunking": chunking,
        "encoder": encoder_fields(encoder),
        "name_free_leaves": name_free_leaves,
        "features": None if cache_dir is None else str(
            feature_path(cache_dir, docs, encoder, chunking)),
        "seconds": {"featurize": round(t1 - t0, 1),
                    "search_and_score": round(time.perf_counter() - t1, 1)},
    }
    if budget is not None:
        meta["budgets"], meta["budget_rows"] = list(budgets), budget
    return rows, meta


def context_rows(
    docs: Sequence[dict[str, Any]], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]], qvecs: np.ndarray, budgets: Sequence[int],
    variants: Sequence[Variant], search: Variant | None, anchors: Sequence[str], encoder: Any,
    name_free: NameFree | None = None,
) -> list[dict[str, Any]]:
    """`evaluate --budgets`: a row per context selection (`budgets.default_selections`)
    over the trees and scores of SEARCH (default: the first tree variant of VARIANTS, or
    the shipped tree), then a row per LanceDB baseline of ANCHORS filled the same way."""
    from sproutrag.learn.anchors import AnchorTable
    from sproutrag.learn.budgets import anchor_budget_rows, budget_rows

    v = search or next((x for x in variants if x.mode == "tree"), None)
    if v is None:
        raise ValueError("--budgets needs a tree variant among the modes (e.g. tree)")
    texts = {str(d["doc_id"]): d["text"] for d in docs}
    rows = budget_rows(feats, texts, queries, qvecs, variant_trees(feats, v), v.search,
                       budgets, name_free=name_free)
    if anchors:
        with AnchorTable(docs, encoder) as table:
            rows += anchor_budget_rows(anchors, table, queries, qvecs, texts, budgets)
    return rows


def filled_runs(
    within: dict[int, list[list[tuple]]], corpus: dict[int, list[list[tuple]]],
    queries: Sequence[dict[str, Any]],
) -> dict[int, list[list[tuple]]]:
    """Per k and query, WITHIN's units (the search within the query's doc_ids) followed
    by CORPUS's units from other documents, cut at k: an answer whose first stage and
    ranking did as well as within and that is then filled to k as corpus-wide answers
    are. Its char-IE against within's is the share a k-filled answer keeps, however well
    it ranks (within's answers are short where the query's documents hold fewer than k
    units); `corpus_wide_loss`'s ``filled_char_ie_ratio``."""
    out: dict[int, list[list[tuple]]] = {}
    for k in within:
        out[k] = []
        for q, own, wide in zip(queries, within[k], corpus[k], strict=True):
            scope = set(q["doc_ids"])
            out[k].append([*own, *(u for u in wide if u[0] not in scope)][:k])
    return out


def corpus_wide_loss(
    retriever: Any, queries: Sequence[dict[str, Any]], runs: dict[int, list[list[tuple]]],
    within: dict[str, Any], corpus: dict[str, Any], mode: str = "tree",
    filled: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Where corpus-wide search loses against search within each query's documents
    (`sproutrag evaluate --corpus-wide`): the share of gold documents (those of its gold
    spans) the first stage
    chose (`Retriever.choose_documents`, at the largest k) and the share searched once
    the documents named by the best unit or by the question's entities are added
    (`Retriever.searched_documents`),
    the share of queries with every gold document chosen, the share of the units at the
    largest k that come from other documents than the query's doc_ids (what the search
    within them searches), and the ratios of unit IE and
    char-IE (corpus-wide / within) of the result rows WITHIN and CORPUS, and those of the
    row FILLED (`filled_runs`) when given. MODE "flat" has no first stage (it ranks every
    leaf): only the units' share and the ratios."""
    k = max(runs)
    found = searched = every = other = units = 0.0
    for q, ranked in zip(queries, runs[k], strict=True):
        scope = set(q["doc_ids"])
        other += sum(d not in scope for d, _, _ in ranked)
        units += len(ranked)
        if mode == "flat":
            continue
        gold = {d for d, _, _ in gold_spans(q)}
        qvec = retriever._embed([q["query"]])[0]
        with retriever._one_view():
            first = retriever.choose_documents(qvec, None, k=k, query=q["query"])
            looked = set(retriever.searched_documents(q["query"], qvec, first))
        chosen = set(first)
        found += len(gold & chosen) / max(len(gold), 1)
        searched += len(gold & looked) / max(len(gold), 1)
        every += gold <= chosen
    n = max(len(queries), 1)
    ratio = {f"{m}_ratio": corpus["avg"][m] / within["avg"][m] if within["avg"][m] else 0.0
             for m in ("ie", "char_ie")}
    if filled is not None:
        ratio |= {f"filled_{m}_ratio": filled["avg"][m] / within["avg"][m]
                  if within["avg"][m] else 0.0 for m in ("ie", "char_ie")}
    first = ({} if mode == "flat" else {"gold_docs_chosen": found / n, "gold_docs_searched":
                                        searched / n, "all_gold_chosen": every / n})
    return {**first, "non_gold_units": other / max(units, 1), **ratio}


def describe_loss(loss: dict[str, float], n_docs: int, wide: Any, mode: str = "tree",
                  entity_ranking: bool = False) -> str:
    """`corpus_wide_loss` as the note of a report row of MODE (flat mode ranks every
    leaf of the database: it has no first stage, and its note says so); WIDE: the
    Retriever's `CorpusWideSettings`."""
    shares = (f"{loss['non_gold_units']:.0%} of the units from other documents; "
              f"{loss['ie_ratio']:.2f}x unit IE, {loss['char_ie_ratio']:.2f}x char-IE of "
              "within")
    if "filled_char_ie_ratio" in loss:
        shares += (f" (within's answers filled to k by other documents' units, as "
                   f"corpus-wide answers are: {loss['filled_ie_ratio']:.2f}x unit IE, "
                   f"{loss['filled_char_ie_ratio']:.2f}x char-IE)")
    if mode == "flat":
        return f"no first stage (flat ranks every leaf of the database); {shares}"
    searched = (f", {loss['gold_docs_searched']:.0%} searched with the documents fetched by "
                "name or mention")
    on = {True: "on", False: "off"}
    return (f"first stage (n_docs {n_docs}, anchor_leaves {wide.anchor_leaves}, link_weight "
            f"{wide.link_weight:g}, leader_weight {wide.leader_weight:g}, fetch_named "
            f"{wide.fetch_named}, mention_weight {wide.mention_weight:g} (long "
            f"{wide.long_mention_weight:g}), fetch_mentioned {wide.fetch_mentioned}, "
            f"mention_statistics {on[wide.mention_statistics]}, mention_alone "
            f"{on[wide.mention_alone]} (opening {wide.alone_opening_leaves}), dominant_ratio "
            f"{wide.dominant_ratio:g}, name_free_leaves {wide.name_free_leaves}, "
            f"entity_ranking {on[entity_ranking]}) chose "
            f"{loss['gold_docs_chosen']:.0%} of the gold "
            f"documents (all of a query's for {loss['all_gold_chosen']:.0%}){searched}; "
            f"{shares}")


def retriever_runs(
    retriever: Any, queries: Sequence[dict[str, Any]], ks: Sequence[int], mode: str, *,
    corpus_wide: bool = False,
) -> dict[int, list[list[tuple[str, int, int]]]]:
    """Ranked units per k per query through a database `Retriever` (the stored path):
    within each query's documents, or with CORPUS_WIDE over the whole database (no
    doc_ids: the Retriever's first stage chooses the documents, as `sproutrag query`
    without --doc-id does)."""
    out: dict[int, list] = {k: [] for k in ks}
    for q in queries:
        doc_ids = None if corpus_wide else q["doc_ids"]
        for k in ks:
            hits = retriever.search(q["query"], k=k, doc_ids=doc_ids, mode=mode)
            out[k].append([(h.doc_id, int(s), int(e)) for h in hits for s, e in h.spans])
    return out
