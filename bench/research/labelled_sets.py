"""What the research scripts share: the development sets' features and query vectors,
each query's leaves, and the paper's scores of ranked runs.

A set is loaded through the library as `sproutrag evaluate` and `bench/quality.py` load
it (the same chunking, encoder and feature cache, `.eval-cache/`: the first run encodes
the set, about 25 minutes for all four on 2 cores; warm, seconds). Set names are
`bench/quality.py`'s; the long sets are built under `out/data/` on first use.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(ROOT / "bench"))
from quality import SETS, dev_files  # noqa: E402 - the sets as bench/quality.py defines them

KS = (1, 3, 5)
Unit = tuple[str, int, int]  # (doc id, start, end)


@dataclass
class Split:
    """One split of a set: features (with leaf terms), usable queries, their vectors and
    the documents' texts."""

    name: str
    feats: dict[str, Any]
    queries: list[dict[str, Any]]
    qvecs: np.ndarray
    texts: dict[str, str]


@dataclass
class QueryLeaves:
    """One query over its documents' leaves, in document order."""

    query: dict[str, Any]
    qvec: np.ndarray
    keys: list[tuple[str, int]]  # (doc id, leaf)
    cosine: np.ndarray  # float64
    texts: list[str]
    headings: list[str]  # each leaf's section heading ("" when none)


def parse_args(doc: str, argv: Sequence[str] | None = None,
               add: Callable[[argparse.ArgumentParser], None] | None = None
               ) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--splits", nargs="+", default=["train", "dev"])
    p.add_argument("--config", help="YAML settings (chunking, encoder) as for evaluate")
    p.add_argument("--data", default=str(ROOT / "out" / "data"), help="long sets' folder")
    p.add_argument("--cache", default=str(ROOT / ".eval-cache"), help="feature cache")
    p.add_argument("--limit", type=int, default=0,
                   help="only the first N documents of each split (a quick check)")
    if add is not None:
        add(p)
    return p.parse_args(argv)


def split_files(name: str, split: str, data_dir: Path) -> tuple[Path, Path]:
    """(docs, queries) of a set's split; a long set is built on first use."""
    return dev_files(name, data_dir, split)


def each_split(args: argparse.Namespace) -> Iterator[Split]:
    """Every (set, split) of the command line, loaded in turn (one encoder)."""
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights

    settings = load_settings(args.config)
    encoder = encoder_from_settings(
        settings.encoding, load_default_weights(settings.encoding.weights))
    for name in args.sets:
        for split in args.splits:
            yield load_split(name, split, encoder, settings.chunking.model_dump(), args)


def load_split(name: str, split: str, encoder: Any, chunking: dict[str, Any],
               args: argparse.Namespace) -> Split:
    from sproutrag.learn.datasets import read_jsonl, usable_queries
    from sproutrag.learn.features import attach_terms, featurize_corpus

    docs_path, queries_path = split_files(name, split, Path(args.data))
    docs = read_jsonl(docs_path)
    if args.limit:
        docs = docs[: args.limit]
    feats = featurize_corpus(docs, encoder, chunking=chunking, cache_dir=args.cache,
                             log=lambda *_: None)
    attach_terms(feats, docs)
    queries = usable_queries(read_jsonl(queries_path), feats)
    qvecs = encoder.encode_texts([q["query"] for q in queries])
    texts = {str(d["doc_id"]): d["text"] for d in docs}
    return Split(f"{name}-{split}", feats, queries, qvecs, texts)


def query_leaves(s: Split) -> list[QueryLeaves]:
    """Per query: its documents' leaves with their cosines, texts and headings."""
    from sproutrag.ingest.chunking import section_headings
    from sproutrag.search.tree_search import cosine_scores

    heads = {d: section_headings(s.texts[d], [(int(a), int(b)) for a, b in f.spans])
             for d, f in s.feats.items()}
    out = []
    for q, v in zip(s.queries, s.qvecs, strict=True):
        keys, cos, texts, hs = [], [], [], []
        for d in q["doc_ids"]:
            f = s.feats[d]
            keys += [(d, u) for u in range(f.n)]
            cos.append(cosine_scores(f.emb, v))
            texts += [s.texts[d][a:b] for a, b in f.spans]
            hs += heads[d]
        out.append(QueryLeaves(q, v, keys, np.concatenate(cos).astype(np.float64), texts, hs))
    return out


def z(x: np.ndarray) -> np.ndarray:
    """Standardised scores, as the fusion standardises them."""
    return (x - x.mean()) / max(float(x.std()), 1e-9)


def ranked_runs(s: Split, keys: Sequence[list[tuple[str, int]]],
                scores: Sequence[np.ndarray]) -> dict[int, list[list[Unit]]]:
    """Each query's leaves by descending score (ties: document order), cut at each k."""
    runs: dict[int, list[list[Unit]]] = {k: [] for k in KS}
    for ks, sc in zip(keys, scores, strict=True):
        top = np.argsort(-sc, kind="stable")[: max(KS)]
        units = [(ks[i][0], *map(int, s.feats[ks[i][0]].spans[ks[i][1]])) for i in top]
        for k in KS:
            runs[k].append(units[:k])
    return runs


def score(name: str, runs: dict[int, list[list[Unit]]], s: Split) -> dict[str, Any]:
    """The paper's scores of ranked runs (`result_row`: per k, average, per query)."""
    from sproutrag.learn.evaluation import result_row

    return result_row(name, runs, s.feats, s.queries)


def report(row: dict[str, Any], ref: dict[str, Any] | None = None) -> None:
    """One line: IE avg [IE@1 IE@3 IE@5], P, R, charIE and, against `ref`, the paired
    per-query difference of IE with its standard error."""
    from sproutrag.learn.metrics import paired_difference

    a = row["avg"]
    line = (f"{row['name']:60s} IE {100 * a['ie']:5.1f} ["
            + " ".join(f"{100 * k['ie']:5.1f}" for k in row["per_k"])
            + f"] P {100 * a['precision']:5.1f} R {100 * a['recall']:5.1f}"
            f" cIE {100 * a['char_ie']:5.1f}")
    if ref is not None:
        m, se = paired_difference(row["per_query"]["ie"], ref["per_query"]["ie"])
        line += f"  d {100 * m:+5.1f} +/- {100 * se:4.1f}"
    print(line, flush=True)


def paired(row: dict[str, Any], ref: dict[str, Any], key: str = "ie") -> str:
    """The per-query difference of KEY ("ie" or "char_ie") to `ref`, with its SE."""
    from sproutrag.learn.metrics import paired_difference

    m, se = paired_difference(row["per_query"][key], ref["per_query"][key])
    return f"{100 * m:+5.1f} +/- {100 * se:4.1f}"


def report_both(row: dict[str, Any], ref: dict[str, Any] | None = None,
                label: str = "") -> None:
    """One line: IE and charIE and, against `ref`, both paired differences."""
    a = row["avg"]
    line = f"{row['name']:45s}{label} IE {100 * a['ie']:5.1f} cIE {100 * a['char_ie']:5.1f}"
    if ref is not None and row is not ref:
        line += f"  d IE {paired(row, ref)}  d cIE {paired(row, ref, 'char_ie')}"
    print(line, flush=True)


def embed_spans(encoder: Any, s: Split, spans: dict[str, list[tuple[int, int]]],
                prefix: Callable[[str, int], str] | None = None) -> dict[str, np.ndarray]:
    """Each document's units embedded alone (with PREFIX(doc, unit) in front when given)."""
    flat = [(d, k) for d in spans for k in range(len(spans[d]))]
    texts = [(prefix(d, k) if prefix else "") + s.texts[d][slice(*spans[d][k])]
             for d, k in flat]
    vecs = encoder.encode_texts(texts)
    out, at = {}, 0
    for d in spans:
        out[d] = np.asarray(vecs[at: at + len(spans[d])], np.float32)
        at += len(spans[d])
    return out


def leaves_mode_row(name: str, s: Split, spans: dict[str, list[tuple[int, int]]],
                    emb: dict[str, np.ndarray], params: Any) -> dict[str, Any]:
    """The packaged leaves mode (z(cosine) + w z(BM25), heading x2, the cutoffs) over the
    units SPANS with embeddings EMB, scored against those units."""
    from sproutrag.ingest.chunking import section_headings
    from sproutrag.learn.evaluation import result_row
    from sproutrag.search.lexical import LeafTerms
    from sproutrag.search.tree_search import leaves_mode

    terms = {d: LeafTerms.of([s.texts[d][a:b] for a, b in spans[d]],
                             section_headings(s.texts[d], spans[d])) for d in spans}
    runs: dict[int, list[list[Unit]]] = {k: [] for k in KS}
    for q, v in zip(s.queries, s.qvecs, strict=True):
        docs = list(q["doc_ids"])
        ranked = leaves_mode({d: emb[d] for d in docs}, v, k=max(KS), params=params,
                             query=q["query"], lexical={d: terms[d] for d in docs})
        units = [(d, *spans[d][u]) for d, u, _ in ranked]
        for k in KS:
            runs[k].append(units[:k])
    units_by_doc = {d: np.asarray(v, np.int64) for d, v in spans.items()}
    return result_row(name, runs, s.feats, s.queries, units_by_doc)
