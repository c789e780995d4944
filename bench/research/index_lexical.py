"""Can the full-text index's own BM25 replace the query-time BM25 of the second stage?

    PYTHONPATH=. .venv/bin/python bench/research/index_lexical.py [--sets ...] [--splits dev]

Issue 21 asks to keep the project's query-time BM25 over the chosen leaves only where it
measures better than the index's scores. Each query's leaves are ranked by
z(cosine) + w z(lexical), w the packaged lexical weight, with the lexical scores from:

* the project's BM25 (shipped: stems, stop words, the section heading counted twice,
  collection statistics over the query's documents' leaves);
* LanceDB's native full-text index over every leaf of the split with the index run's
  analyzer (`sproutrag.storage.store.TEXT_ANALYZER`), searched with a prefilter to the
  query's documents: what `nodes`' index gives (leaf text alone, corpus statistics; a
  leaf the index does not return scores 0);
* the same index over the leaf's text with its section heading written twice in front:
  what the index would give if `nodes` held the heading context.

Each is paired against the shipped fusion (unit IE and char-IE). docs/results.md, "The
index's BM25 in the second stage".
"""

from __future__ import annotations

import tempfile

import numpy as np
from labelled_sets import each_split, parse_args, query_leaves, ranked_runs, report_both, score, z

from sproutrag.search.lexical import LeafTerms, bm25_leaves


def _fts_table(folder: str, rows, heading_context: bool):
    """A LanceDB table of every leaf of the split ((doc id, leaf) keys, text) with the
    index run's full-text index."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from sproutrag.storage.store import TEXT_ANALYZER

    seen, docs, leaves, texts = set(), [], [], []
    for r in rows:
        for (d, u), text, heading in zip(r.keys, r.texts, r.headings, strict=True):
            if (d, u) in seen:
                continue
            seen.add((d, u))
            docs.append(d)
            leaves.append(u)
            texts.append(f"{heading} {heading} {text}" if heading_context and heading
                         else text)
    name = "with_heading" if heading_context else "leaf_text"
    tbl = lancedb.connect(folder).create_table(
        name, pa.table({"doc_id": docs, "leaf": pa.array(leaves, pa.int32()), "text": texts}))
    tbl.create_index("text", config=FTS(**TEXT_ANALYZER))
    return tbl


def _index_scores(tbl, r) -> np.ndarray:
    """The index's BM25 of every leaf of the query's documents (0: not returned)."""
    from sproutrag.storage.filters import doc_filter

    pos = {key: i for i, key in enumerate(r.keys)}
    out = np.zeros(len(r.keys), np.float64)
    hits = (tbl.search(r.query["query"], query_type="fts")
            .where(doc_filter(r.query["doc_ids"]), prefilter=True)
            .select(["doc_id", "leaf", "_score"]).limit(len(r.keys)).to_list())
    for h in hits:
        out[pos[(h["doc_id"], int(h["leaf"]))]] = float(h["_score"])
    return out


def main(argv: list[str] | None = None) -> int:
    from sproutrag.encoder.weights import load_default_weights

    args = parse_args(__doc__, argv)
    w = load_default_weights(None).search.lexical_weight
    print(f"lexical weight {w:g} (packaged)")
    for s in each_split(args):
        rows = query_leaves(s)
        keys = [r.keys for r in rows]
        shipped = []
        for r in rows:
            terms = LeafTerms.of(r.texts, r.headings)
            shipped.append(z(r.cosine) + w * z(bm25_leaves(r.query["query"], [terms])[0]))
        base = score(f"{s.name} project BM25 (shipped)", ranked_runs(s, keys, shipped), s)
        found = [base]
        with tempfile.TemporaryDirectory(prefix="index-lexical-") as folder:
            for heading in (False, True):
                tbl = _fts_table(folder, rows, heading)
                fused = [z(r.cosine) + w * z(_index_scores(tbl, r)) for r in rows]
                label = "index BM25, heading x2 in the text" if heading else "index BM25"
                found.append(score(f"{s.name} {label}", ranked_runs(s, keys, fused), s))
        for row in found:
            report_both(row, base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
