"""Leaf vectors that know their document (issue 29, rule 19 of docs/whole-corpus.md).

    PYTHONPATH=. .venv/bin/python bench/research/named_vectors.py [--splits train dev]
        [--variants name heading name+heading] [--pools ...]

Each leaf is encoded alone (`encoding.embedding_mode: alone`), so a sentence of a
paragraph about Hilarie Burton ("She starred as Sara Ellis on ...") carries no Burton,
and over the whole corpus it competes with every look-alike's sentence on equal terms.
Variant: each leaf encoded with its context written before it, as a passage retriever
encodes "title [SEP] text":
- "name": the document's name line (its title, else its first line when heading-like:
  what `names.document_name` reads, not normalised);
- "heading": the heading the leaf sits under (`chunking.section_headings`, the lexical
  side's heading);
- "name+heading": both (the heading left out where it is the name).
A part the leaf's own text already starts with is not written again. Internal nodes'
vectors are their leaves' mean again (`parent_embedding: size_weighted`), so the first
stage and the tree see the new vectors too.

Each variant is a copy of the pool's database (out/db-hierarchy-POOL-SPLIT, built by
`hierarchy.py`) with only `nodes.vector` rewritten (out/db-named-VARIANT-POOL-SPLIT), then
searched through the shipped `Retriever` within each query's documents and over the whole
corpus, tree mode, and compared with today's database, paired per query.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402 - the pools and their databases

VARIANTS = ("name", "heading", "name+heading")
KS = H.KS


def name_line(text: str, title: str | None) -> str:
    """The document's name as written: its title, else its first line when heading-like."""
    from sproutrag.ingest.chunking import _heading_line

    if title and title.strip():
        return title.strip()
    line = text.lstrip().split("\n", 1)[0]
    return line.strip() if _heading_line(line) and len(line.strip()) >= 4 else ""


def prefixed(leaf: str, parts: list[str]) -> str:
    """LEAF with PARTS written before it, one a line, leaving out a part LEAF starts with
    and repeats."""
    head = []
    for p in parts:
        if p and not leaf.lstrip().startswith(p) and p not in head:
            head.append(p)
    return "\n".join([*head, leaf])


def leaf_texts(text: str, title: str | None, spans: list[tuple[int, int]],
               variant: str) -> list[str]:
    from sproutrag.ingest.chunking import section_headings

    name = name_line(text, title)
    heads = section_headings(text, spans) if "heading" in variant else [""] * len(spans)
    out = []
    for (s, e), h in zip(spans, heads, strict=True):
        parts = ([name] if "name" in variant else []) + [h]
        if h and h.lower() == name.lower():
            parts = [name]
        out.append(prefixed(text[s:e], parts))
    return out


def build(src: Path, dst: Path, variant: str, encoder: Any) -> Path:
    """DST: a copy of the database SRC with its current trees' vectors re-encoded."""
    import lancedb
    import pyarrow as pa

    if (dst / ".complete").is_file():
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    db = lancedb.connect(str(dst))
    docs = db.open_table("documents").to_arrow().select(
        ["doc_id", "text", "title", "tree_id"]).to_pylist()
    nodes_t = db.open_table("nodes")
    nodes = nodes_t.to_arrow()
    cols = {c: nodes.column(c).to_numpy(zero_copy_only=False)
            for c in ("doc_id", "tree_id", "idx", "left", "right", "n_leaves", "start", "end")}
    vectors = np.stack(nodes.column("vector").to_numpy(zero_copy_only=False)).astype(np.float32)
    rows_of: dict[str, np.ndarray] = {}
    current = {d["doc_id"]: d["tree_id"] for d in docs}
    for d in current:
        rows_of[d] = np.flatnonzero((cols["doc_id"] == d) & (cols["tree_id"] == current[d]))
    texts, where = [], []
    for d in docs:
        rows = rows_of[d["doc_id"]]
        leaves = rows[cols["left"][rows] == -1]
        leaves = leaves[np.argsort(cols["idx"][leaves])]
        spans = [(int(cols["start"][r]), int(cols["end"][r])) for r in leaves]
        texts += leaf_texts(d["text"], d["title"], spans, variant)
        where += list(leaves)
    new = vectors.copy()
    new[where] = encoder.encode_texts(texts)
    for d in docs:  # internal nodes: the mean of their leaves, children before parents
        rows = rows_of[d["doc_id"]]
        by_idx = {int(cols["idx"][r]): r for r in rows}
        for i in sorted(by_idx):
            r = by_idx[i]
            if cols["left"][r] == -1:
                continue
            a, b = by_idx[int(cols["left"][r])], by_idx[int(cols["right"][r])]
            na, nb = cols["n_leaves"][a], cols["n_leaves"][b]
            new[r] = (na * new[a] + nb * new[b]) / (na + nb)
    dim = vectors.shape[1]
    table = nodes.set_column(nodes.schema.get_field_index("vector"), nodes.schema.field("vector"),
                             pa.FixedSizeListArray.from_arrays(pa.array(new.ravel()), dim))
    (nodes_t.merge_insert("node_id").when_matched_update_all().execute(table))
    nodes_t.optimize()
    (dst / ".complete").write_text(f"{variant}\n")
    print(f"{dst.name}: {len(texts)} leaves re-encoded", flush=True)
    return dst


def rows(db: Path, queries_file: Path, settings: Any, encoder: Any) -> dict[str, dict]:
    """Tree mode within and corpus-wide through the shipped Retriever over DB."""
    from sproutrag.learn.datasets import read_jsonl, usable_queries
    from sproutrag.learn.evaluation import result_row, retriever_runs
    from sproutrag.search.retriever import Retriever

    r = Retriever(str(db), encoder=encoder, **settings.search.retriever_options())
    with r._one_view():
        known = set(r._current().doc_ids.to_pylist())
    qs = usable_queries(read_jsonl(queries_file), known)
    gold = sorted({d for q in qs for d in q["doc_ids"]})
    spans = {d: st.spans for d, (_, st) in r.documents.load_trees(gold).items()}
    return {scope: result_row(scope, retriever_runs(r, qs, KS, "tree",
                                                    corpus_wide=scope == "wide"),
                              {}, qs, units=spans)
            for scope in ("within", "wide")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--splits", nargs="+", default=["train"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    for split in args.splits:
        for pool in args.pools:
            H.open_pool(pool, split, settings, encoder)  # today's database, built once
            src = H.OUT / f"db-hierarchy-{pool}-{split}"
            queries = H.pool_files(pool, split)[1]
            today = rows(src, queries, settings, encoder)
            print(f"{pool} {split}: today within IE {100 * today['within']['avg']['ie']:.2f}, "
                  f"corpus-wide {H.against(today['wide'], today['wide'], today['within'])}",
                  flush=True)
            for v in args.variants:
                db = build(src, H.OUT / f"db-named-{v}-{pool}-{split}", v, encoder)
                new = rows(db, queries, settings, encoder)
                for scope in ("wide", "within"):
                    change = H.against(new[scope], today[scope], today["within"])
                    print(f"  {v:13s} {scope:6s} {change}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
