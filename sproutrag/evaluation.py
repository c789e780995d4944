"""evaluate: encode a labelled corpus once, then score many retrieval variants in memory.

The expensive part (encoder forward passes) runs once per document: chunk embeddings
plus, for every chunk pair that shares a window, the window-averaged symmetrised block
attention of every (layer, head) (`DocFeatures.heads`, float32 (E, L*H)). Relations are
linear in these: for weights w, ``m = heads @ w.ravel()`` equals what
`Encoder.encode_documents` computes with that mix. So a variant (other alpha, a relation
band, parent embedding, beam width, threshold) costs only tree building and search.
Features are cached on disk (npz) keyed by the corpus and the encoder settings.

Retrieval here uses the library's pure functions (`build_tree`, `beam_search`,
`select_evidence`) exactly as `Retriever` does; scoring uses `sproutrag.metrics`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.chunking import chunk_text
from sproutrag.lexical import LeafTerms, bm25_leaves
from sproutrag.metrics import (
    QueryScores,
    Summary,
    average_over_k,
    gold_units,
    per_query_ie,
    score_query,
    summarize,
)
from sproutrag.search import SearchParams, cosine_scores, fuse, node_scores, search_trees
from sproutrag.tree import Tree, build_tree

CACHE_VERSION = "features/1"


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@dataclass
class DocFeatures:
    """One document's chunks, embeddings and per-head pair relations (i < j)."""

    doc_id: str
    spans: np.ndarray  # int64 (n, 2)
    emb: np.ndarray  # float32 (n, d), L2-normalised
    pair_i: np.ndarray  # int32 (E,)
    pair_j: np.ndarray  # int32 (E,)
    heads: np.ndarray  # float32 (E, L*H): mean over windows of (B + B^T) / 2 per head
    terms: LeafTerms | None = None  # leaf term counts (lexical scores); not cached

    @property
    def n(self) -> int:
        return len(self.spans)


def pair_heads(
    windows: Iterable[Any], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-head symmetric relations averaged over the windows holding each pair.

    `windows`: `WindowBlocks` (start, stop, blocks (LH, c, c)). Returns (i, j, heads) with
    i < j sorted; pairs whose chunks have no tokens are all-zero rows.
    """
    keys, vals = [], []
    for w in windows:
        c = w.stop - w.start
        if c < 2:
            continue
        iu, ju = np.triu_indices(c, 1)
        b = w.blocks
        keys.append((iu + w.start).astype(np.int64) * n + ju + w.start)
        vals.append(((b[:, iu, ju] + b[:, ju, iu]) / 2).T.astype(np.float64))
    if not keys:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((0, 0), np.float32)
    allk = np.concatenate(keys)
    allv = np.concatenate(vals)
    uniq, inv = np.unique(allk, return_inverse=True)
    sums = np.zeros((len(uniq), allv.shape[1]))
    np.add.at(sums, inv, allv)
    counts = np.bincount(inv, minlength=len(uniq))[:, None]
    return (
        (uniq // n).astype(np.int32),
        (uniq % n).astype(np.int32),
        (sums / counts).astype(np.float32),
    )


def featurize_document(encoder: Any, doc_id: str, text: str, spans: np.ndarray) -> DocFeatures:
    """Embeddings (as the index computes them) and per-head pair relations of one document."""
    sp = [tuple(int(x) for x in s) for s in spans]
    emb = encoder.encode_texts([text[s:e] for s, e in sp])
    i, j, h = pair_heads(encoder.window_blocks(text, sp), len(sp))
    return DocFeatures(doc_id, np.asarray(spans, np.int64).reshape(-1, 2), emb, i, j, h)


#: Chunking options added after the cache format: at these (old-behaviour) values they
#: are left out of the cache key, so features cached before the option existed stay valid.
_KEY_DEFAULTS = {"within_paragraphs": False}


def _cache_key(docs: Sequence[dict[str, Any]], encoder: Any, chunking: dict[str, Any]) -> str:
    fields = {k: v for k, v in encoder.fingerprint_fields().items() if k != "weights"}
    chunking = {k: v for k, v in chunking.items() if _KEY_DEFAULTS.get(k, object()) != v}
    h = hashlib.sha256(json.dumps([CACHE_VERSION, fields, chunking], sort_keys=True).encode())
    for d in docs:
        h.update(str(d["doc_id"]).encode() + b"\0" + d["text"].encode() + b"\0")
    return h.hexdigest()[:16]


def feature_path(cache_dir: str | Path, docs: Sequence[dict[str, Any]], encoder: Any,
                 chunking: dict[str, Any]) -> Path:
    """The cache file of these documents' features (keyed by the corpus, the encoder's
    content identity and settings, and the chunking)."""
    return Path(cache_dir) / f"features-{_cache_key(docs, encoder, chunking)}.npz"


def featurize_corpus(
    docs: Sequence[dict[str, Any]],
    encoder: Any,
    *,
    chunking: dict[str, Any],
    cache_dir: str | Path | None = None,
    log: Any = print,
) -> dict[str, DocFeatures]:
    """Features of every document (chunked with `chunking` kwargs), cached as one npz."""
    path = None
    if cache_dir is not None:
        path = feature_path(cache_dir, docs, encoder, chunking)
        if path.is_file():
            return load_features(path)
    t0, out = time.perf_counter(), {}
    for n, d in enumerate(docs, start=1):
        spans = np.asarray(chunk_text(d["text"], **chunking), np.int64).reshape(-1, 2)
        if len(spans):
            out[str(d["doc_id"])] = featurize_document(encoder, str(d["doc_id"]), d["text"], spans)
        if n % 10 == 0 or n == len(docs):
            log(f"encoded {n}/{len(docs)} documents in {time.perf_counter() - t0:.0f} s")
    if path is not None:
        save_features(out, path)
    return out


def save_features(feats: dict[str, DocFeatures], path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {"doc_ids": np.asarray(list(feats), dtype=str)}
    for k, f in enumerate(feats.values()):
        for name in ("spans", "emb", "pair_i", "pair_j", "heads"):
            arrays[f"{k}.{name}"] = getattr(f, name)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)


def load_features(path: str | Path) -> dict[str, DocFeatures]:
    with np.load(path) as z:
        ids = [str(x) for x in z["doc_ids"]]
        return {
            d: DocFeatures(d, *(z[f"{k}.{name}"] for name in
                                ("spans", "emb", "pair_i", "pair_j", "heads")))
            for k, d in enumerate(ids)
        }


# ----------------------------------------------------------------------------- variants


@dataclass(frozen=True)
class Variant:
    """One row of the evaluation table: how relations, trees and search are made."""

    name: str
    mode: str = "tree"  # "tree" | "flat"
    mix: np.ndarray | None = None  # (L, H) aggregation weights; None = uniform
    delta: float = 0.0
    margin: float | None = None  # relative cutoff below the best leaf (None: off)
    beam: int = 5
    parent_embedding: str = "mean_of_children"
    relation: str = "attention"  # "attention" | "embedding"
    band: int = 0  # drop pairs with |i - j| <= band (0: keep all)
    lexical_weight: float = 0.0  # w: rank by z(cosine) + w z(BM25) (tree and flat)
    size_penalty: float = 0.0  # g: internal nodes rank at score - g log2(leaves)
    seed_leaves: bool = False  # the k best leaves are always candidates
    notes: str = field(default="", compare=False)

    def search_params(self) -> SearchParams:
        return SearchParams(beam_width=self.beam, threshold=self.delta, margin=self.margin,
                            lexical_weight=self.lexical_weight,
                            size_penalty=self.size_penalty, seed_leaves=self.seed_leaves)


def relations(f: DocFeatures, v: Variant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, m) of one document for a variant."""
    i, j = f.pair_i, f.pair_j
    if v.relation == "embedding":
        m = (1.0 + np.einsum("ed,ed->e", f.emb[i], f.emb[j])) / 2
    elif v.relation == "attention":
        w = (np.full(f.heads.shape[1], 1.0 / max(f.heads.shape[1], 1)) if v.mix is None
             else np.asarray(v.mix, np.float64).ravel())
        m = f.heads.astype(np.float64) @ w if len(i) else np.zeros(0)
    else:
        raise ValueError(f"relation must be 'attention' or 'embedding', got {v.relation!r}")
    keep = np.abs(j.astype(np.int64) - i) > v.band
    return i[keep], j[keep], np.maximum(m[keep], 0).astype(np.float32)


def build_trees(feats: dict[str, DocFeatures], v: Variant) -> dict[str, Tree]:
    return {
        d: build_tree(f.emb, *relations(f, v), parent_embedding=v.parent_embedding)
        for d, f in feats.items()
    }


def attach_terms(feats: dict[str, DocFeatures], docs: Sequence[dict[str, Any]]) -> None:
    """Give every document's features the term counts of its leaves (lexical scores)."""
    texts = {str(d["doc_id"]): d["text"] for d in docs}
    for doc_id, f in feats.items():
        if f.terms is None and doc_id in texts:
            f.terms = LeafTerms.of_document(texts[doc_id], f.spans.tolist())


def _terms(feats: dict[str, DocFeatures], doc_ids: Sequence[str]) -> dict[str, LeafTerms]:
    missing = [d for d in doc_ids if feats[d].terms is None]
    if missing:
        raise ValueError(f"no leaf terms for {missing[:3]}: call attach_terms(feats, docs)")
    return {d: feats[d].terms for d in doc_ids}


def retrieve_tree(
    trees: dict[str, Tree], feats: dict[str, DocFeatures], qvec: np.ndarray,
    doc_ids: Sequence[str], *, k: int, params: SearchParams, query: str = "",
    stats: dict | None = None, scores: dict | None = None,
) -> list[tuple[str, int, int]]:
    """Ranked evidence units: `search_trees`, exactly what `Retriever` runs in tree mode.

    `stats` (optional) counts hits and internal-node hits; `scores` may hold the query's
    node scores (`query_node_scores`) to share them between budgets."""
    lexical = _terms(feats, doc_ids) if params.lexical_weight > 0 else None
    chosen = search_trees({d: trees[d] for d in doc_ids}, qvec, k=k, params=params,
                          query=query, lexical=lexical, scores=scores)
    if stats is not None:
        stats["hits"] = stats.get("hits", 0) + len(chosen)
        stats["internal_hits"] = stats.get("internal_hits", 0) + sum(
            len(c.leaves) > 1 for c in chosen)
    return [
        (c.doc_id, int(feats[c.doc_id].spans[u, 0]), int(feats[c.doc_id].spans[u, 1]))
        for c in chosen for u in c.leaves
    ]


def query_node_scores(
    trees: dict[str, Tree], feats: dict[str, DocFeatures], q: dict[str, Any], qvec: np.ndarray,
    v: Variant,
) -> dict:
    """`node_scores` of one query over its documents' trees, for a variant's lexical weight."""
    docs = q["doc_ids"]
    return node_scores({d: trees[d] for d in docs}, qvec, query=q.get("query", ""),
                       lexical=_terms(feats, docs) if v.lexical_weight > 0 else None,
                       lexical_weight=v.lexical_weight)


def retrieve_flat(
    feats: dict[str, DocFeatures], qvec: np.ndarray, doc_ids: Sequence[str], *, k: int,
    delta: float | None = None, margin: float | None = None, lexical_weight: float = 0.0,
    query: str = "",
) -> list[tuple[str, int, int]]:
    """Top-k leaves of `doc_ids` by cosine (optionally only cosine >= delta, and within
    `margin` of the best leaf); with `lexical_weight` ranked by z(cosine) + w z(BM25)."""
    cos = {d: cosine_scores(feats[d].emb, qvec) for d in doc_ids}
    rank = dict(cos)
    if lexical_weight > 0:
        lexical = _terms(feats, doc_ids)
        lex = bm25_leaves(query, [lexical[d] for d in doc_ids])
        fused = fuse([cos[d] for d in doc_ids], lex, [len(cos[d]) for d in doc_ids],
                     lexical_weight)
        rank = dict(zip(doc_ids, fused))
    rows = [(-float(rank[d][u]), d, u) for d in doc_ids for u in range(len(cos[d]))
            if delta is None or cos[d][u] >= delta]
    rows.sort()
    if margin is not None and rows:
        best = max(float(cos[d][u]) for _, d, u in rows)
        rows = [r for r in rows if cos[r[1]][r[2]] >= best - margin]
    return [(d, int(feats[d].spans[u, 0]), int(feats[d].spans[u, 1])) for _, d, u in rows[:k]]


def _gold(q: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(str(g["doc_id"]), int(g["start"]), int(g["end"])) for g in q.get("gold", [])]


def usable_queries(
    queries: Sequence[dict[str, Any]], feats: dict[str, DocFeatures]
) -> list[dict[str, Any]]:
    """Queries with gold evidence whose documents were all featurized."""
    out = []
    for q in queries:
        docs = [str(d) for d in q.get("doc_ids") or sorted({g[0] for g in _gold(q)})]
        if _gold(q) and docs and all(d in feats for d in docs):
            out.append({**q, "doc_ids": docs})
    return out


def run_variant(
    v: Variant, feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]],
    qvecs: np.ndarray, ks: Sequence[int], trees: dict[str, Tree] | None = None,
    stats: dict | None = None,
) -> dict[int, list[list[tuple[str, int, int]]]]:
    """Ranked units per k per query (`stats`: hit counts at the largest k)."""
    if v.mode == "tree" and trees is None:
        trees = build_trees(feats, v)
    out: dict[int, list] = {k: [] for k in ks}
    for q, qv in zip(queries, qvecs, strict=True):
        scores = query_node_scores(trees, feats, q, qv, v) if v.mode == "tree" else None
        for k in ks:
            if v.mode == "flat":
                units = retrieve_flat(feats, qv, q["doc_ids"], k=k,
                                      delta=v.delta if v.delta > 0 else None, margin=v.margin,
                                      lexical_weight=v.lexical_weight, query=q.get("query", ""))
            else:
                units = retrieve_tree(trees, feats, qv, q["doc_ids"], k=k,
                                      params=v.search_params(), query=q.get("query", ""),
                                      stats=stats if k == max(ks) else None, scores=scores)
            out[k].append(units)
    return out


def query_scores(
    runs: dict[int, list[list[tuple[str, int, int]]]], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]],
) -> dict[int, list[QueryScores]]:
    """Per-k, per-query scores of ranked units."""
    gus = [
        gold_units([(d, int(s), int(e)) for d in q["doc_ids"] for s, e in feats[d].spans],
                   _gold(q))
        for q in queries
    ]
    return {
        k: [score_query(u, _gold(q), g, k=k)
            for u, q, g in zip(runs[k], queries, gus, strict=True)]
        for k in sorted(runs)
    }


def score_runs(
    runs: dict[int, list[list[tuple[str, int, int]]]], feats: dict[str, DocFeatures],
    queries: Sequence[dict[str, Any]],
) -> tuple[list[Summary], dict[str, float]]:
    """Per-k summaries and their average over k."""
    scores = query_scores(runs, feats, queries)
    sums = [summarize(scores[k], k) for k in sorted(scores)]
    return sums, average_over_k(sums)


def result_row(
    name: str, runs: dict[int, list[list[tuple[str, int, int]]]],
    feats: dict[str, DocFeatures], queries: Sequence[dict[str, Any]], **extra: Any,
) -> dict[str, Any]:
    """One report row: per-k summaries, their average and each query's IE and charIE."""
    scores = query_scores(runs, feats, queries)
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
) -> list[dict[str, Any]]:
    """One result row per variant: per-k summaries, average over k, tree statistics."""
    rows = []
    for v in variants:
        trees = build_trees(feats, v) if v.mode == "tree" else None
        hits: dict[str, int] = {}
        runs = run_variant(v, feats, queries, qvecs, ks, trees, hits)
        rows.append(result_row(
            v.name, runs, feats, queries, mode=v.mode, beam=v.beam, delta=v.delta,
            margin=v.margin, parent_embedding=v.parent_embedding, relation=v.relation,
            band=v.band, notes=v.notes,
            stats=tree_stats(trees, runs, feats, queries, hits) if trees else {},
        ))
    return rows


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
            gold = [(s, e) for dd, s, e in _gold(q) if dd == d]
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


def with_name(v: Variant, name: str, **changes: Any) -> Variant:
    return replace(v, name=name, **changes)


# ----------------------------------------------------------------------------- the run

#: Rows of the paper's ablation table (Table 3) plus this project's search ablations.
PAPER_MODES = ("flat", "tree", "untrained", "embedding", "b1", "b3", "b10")
SEARCH_MODES = ("flat_lexical", "tree_paper", "tree_cosine", "tree_nocalib", "tree_noseed",
                "untrained_search")
EXTRA_MODES = ("flat_delta", "flat_cutoffs", "nomargin", "size_weighted",
               "untrained_size_weighted", "noband", "b5")


def make_variants(
    modes: Sequence[str], weights: Any, parent_embedding: str
) -> list[Variant]:
    """Variants by key; 'tree' is the shipped method: `weights`' alpha and every learned
    search parameter (delta, margin, lexical weight, size penalty, seeds), b = 5."""
    mix, delta, margin = weights.mix(), float(weights.delta), weights.margin
    search = {"lexical_weight": weights.lexical_weight, "size_penalty": weights.size_penalty,
              "seed_leaves": weights.seed_leaves}
    tree = Variant("tree (trained)", mix=mix, delta=delta, margin=margin,
                   parent_embedding=parent_embedding, **search,
                   notes=f"weights {weights.source} ({weights.fingerprint()})")
    paper = {"lexical_weight": 0.0, "size_penalty": 0.0, "seed_leaves": False}
    other = "size_weighted" if parent_embedding != "size_weighted" else "mean_of_children"
    w = weights.lexical_weight
    table = {
        "flat": Variant("flat (leaf only)", mode="flat"),
        "flat_lexical": Variant(f"flat, cosine + {w:g} x BM25 (leaves)", mode="flat",
                                lexical_weight=w),
        "flat_delta": Variant(f"flat, scores >= delta {delta:g}", mode="flat", delta=delta),
        "flat_cutoffs": Variant(f"flat, the tree's cutoffs (delta {delta:g}, margin {margin})",
                                mode="flat", delta=delta, margin=margin),
        "nomargin": with_name(tree, "tree (trained), no margin", margin=None),
        "tree": tree,
        "tree_paper": with_name(tree, "tree, the paper's search (cosine, no seeds or "
                                "calibration)", **paper),
        "tree_cosine": with_name(tree, "tree (trained), cosine only (no BM25)",
                                 lexical_weight=0.0),
        "tree_nocalib": with_name(tree, "tree (trained), no size calibration",
                                  size_penalty=0.0),
        "tree_noseed": with_name(tree, "tree (trained), no leaf seeds", seed_leaves=False),
        "untrained": Variant("tree (not trained: uniform, paper's search, delta 0)",
                             parent_embedding=parent_embedding),
        "untrained_search": with_name(tree, "tree, uniform alpha, trained search", mix=None),
        "untrained_size_weighted": Variant(f"tree (not trained), {other} parents",
                                           parent_embedding=other),
        "embedding": with_name(tree, "tree, embedding-similarity relations",
                               relation="embedding"),
        "b1": with_name(tree, "tree (trained), greedy b = 1", beam=1),
        "b3": with_name(tree, "tree (trained), b = 3", beam=3),
        "b5": with_name(tree, "tree (trained), b = 5", beam=5),
        "b10": with_name(tree, "tree (trained), b = 10", beam=10),
        "size_weighted": with_name(tree, f"tree (trained), {other} parents",
                                   parent_embedding=other),
        "noband": with_name(tree, "tree (trained), without the |i-j|<=1 band", band=1),
    }
    unknown = [m for m in modes if m not in table]
    if unknown:
        raise ValueError(f"unknown modes {unknown}; choose from {sorted(table)}")
    return [table[m] for m in modes]


def evaluate_corpus(
    docs_path: str | Path,
    queries_path: str | Path,
    *,
    encoder: Any,
    chunking: dict[str, Any],
    variants: Sequence[Variant],
    ks: Sequence[int] = (1, 3, 5),
    cache_dir: str | Path | None = None,
    log: Any = print,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Featurize (cached), encode the queries, score every variant. (rows, meta)."""
    t0 = time.perf_counter()
    docs = read_jsonl(docs_path)
    feats = featurize_corpus(docs, encoder, chunking=chunking, cache_dir=cache_dir, log=log)
    attach_terms(feats, docs)
    t1 = time.perf_counter()
    queries = usable_queries(read_jsonl(queries_path), feats)
    qvecs = encoder.encode_texts([q["query"] for q in queries])
    rows = evaluate_variants(variants, feats, queries, qvecs, ks)
    meta = {
        "docs": str(docs_path), "queries": str(queries_path), "n_docs": len(feats),
        "n_queries": len(queries), "ks": list(ks), "chunking": chunking,
        "encoder": {k: v for k, v in encoder.fingerprint_fields().items() if k != "weights"},
        "features": None if cache_dir is None else str(
            feature_path(cache_dir, docs, encoder, chunking)),
        "seconds": {"featurize": round(t1 - t0, 1),
                    "search_and_score": round(time.perf_counter() - t1, 1)},
    }
    return rows, meta


def retriever_runs(
    retriever: Any, queries: Sequence[dict[str, Any]], ks: Sequence[int], mode: str
) -> dict[int, list[list[tuple[str, int, int]]]]:
    """Ranked units per k per query through a database `Retriever` (the stored path)."""
    out: dict[int, list] = {k: [] for k in ks}
    for q in queries:
        for k in ks:
            hits = retriever.search(q["query"], k=k, doc_ids=q["doc_ids"], mode=mode)
            out[k].append([(h.doc_id, int(s), int(e)) for h in hits for s, e in h.spans])
    return out
