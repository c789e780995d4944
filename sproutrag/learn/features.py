"""Per-head features of a labelled corpus, and their cache (evaluation and training).

The expensive part of evaluating or training (encoder forward passes) runs once per
document: chunk embeddings plus, for every chunk pair that shares a window, the
window-averaged symmetrised block attention of every (layer, head) (`DocFeatures.heads`,
float32 (E, L*H)). Relations are linear in these: for weights w, ``m = heads @
w.ravel()`` equals what `Encoder.encode_documents` computes with that mix, so another
alpha costs only tree building and search. Features are cached on disk (npz) keyed by
the corpus, the chunking and the encoder's settings and content hash.
"""

from __future__ import annotations

import hashlib
import json
import time
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sproutrag.ingest.chunking import chunk_text
from sproutrag.ingest.index_identity import CHUNKING_ADDED, encoder_fields
from sproutrag.search.lexical import LeafTerms

CACHE_VERSION = "features/1"


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
    if getattr(encoder, "embedding_mode", "alone") == "context":  # window-pooled states
        emb = encoder.encode_document(text, sp).embeddings
    else:
        emb = encoder.encode_texts([text[s:e] for s, e in sp])
    i, j, h = pair_heads(encoder.window_blocks(text, sp), len(sp))
    return DocFeatures(doc_id, np.asarray(spans, np.int64).reshape(-1, 2), emb, i, j, h)


#: Chunking options added after the cache format (within_paragraphs, then the index
#: identity's `CHUNKING_ADDED`): at these (old-behaviour) values they are left out of the
#: cache key, so features cached before the option existed stay valid.
_KEY_DEFAULTS = {"within_paragraphs": False, **CHUNKING_ADDED}


def _cache_key(docs: Sequence[dict[str, Any]], encoder: Any, chunking: dict[str, Any]) -> str:
    """The encoder's part of the index identity (`index_identity.encoder_fields`) and the
    chunking, but not the rest of the index fingerprint: features hold every attention
    head (alpha does not change them) and no tree; plus the cache's version and the
    documents themselves (the index fingerprint has no corpus in it)."""
    fields = encoder_fields(encoder)
    if fields.get("embedding_mode") == "context":  # before this, context features held
        fields = {**fields, "context_embeddings": "window"}  # chunk-alone embeddings
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


#: What reading a damaged cache file raises (truncated, overwritten, not an npz).
UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error)


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
            try:
                return load_features(path)
            except UNREADABLE as exc:  # damaged outside (writes are atomic): encode again
                log(f"feature cache {path} cannot be read ({type(exc).__name__}: {exc}); "
                    "encoding the documents again")
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


def attach_terms(feats: dict[str, DocFeatures], docs: Sequence[dict[str, Any]]) -> None:
    """Give every document's features the term counts of its leaves (lexical scores)."""
    texts = {str(d["doc_id"]): d["text"] for d in docs}
    for doc_id, f in feats.items():
        if f.terms is None and doc_id in texts:
            f.terms = LeafTerms.of_document(texts[doc_id], f.spans.tolist())
