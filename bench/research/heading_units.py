"""Should a section heading be part of an evidence unit, or only its context?

    PYTHONPATH=. .venv/bin/python bench/research/heading_units.py [--sets ...] [--splits dev]

With structured units (`chunking.respect_structure`) a heading starts the unit after it
("9.7 Security Incidents. Provider shall notify ..."). Headings are rarely gold, so the
heading's characters cost char precision; but they name what the unit is about, which
helps the vector (HotpotQA's paragraph titles name the entity a question asks about).
Variants, each query's leaves ranked by the packaged leaves mode (z(cosine) + w z(BM25),
the leaf's heading counted twice in BM25, the packaged cutoffs):

* shipped: the structured units, each embedded alone (its heading inside);
* body: the same units without their leading heading lines (a unit that is only
  headings stays), embedded alone;
* body + heading: the body units, each embedded as "heading\\n" + body (the heading as
  the embedding's context, not part of the unit's span).

Each is paired against the shipped units (unit IE and char-IE). docs/results.md,
"Headings as context".
"""

from __future__ import annotations

import numpy as np
from labelled_sets import KS, each_split, parse_args

from sproutrag.ingest.chunking import _structure, section_headings, split_sentences
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.tree_search import leaves_mode


def body_spans(text: str, spans: np.ndarray) -> list[tuple[int, int]]:
    """SPANS without the heading sentences they start with (a unit of headings only is
    kept whole)."""
    sentences = split_sentences(text)
    _, heading = _structure(text, sentences)
    heads = sorted((s, e) for (s, e), h in zip(sentences, heading, strict=True) if h)
    out = []
    for s, e in spans.tolist():
        start = s
        for hs, he in heads:
            if hs == start and he < e:
                rest = text[he:e]
                start = he + len(rest) - len(rest.lstrip())
        out.append((start, e) if start < e else (s, e))
    return out


def _paired(row, base, key: str) -> str:
    from sproutrag.learn.metrics import paired_difference

    m, se = paired_difference(row["per_query"][key], base["per_query"][key])
    return f"{100 * m:+5.1f} +/- {100 * se:4.1f}"


def main(argv: list[str] | None = None) -> int:
    from schemas.settings import load_settings
    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights
    from sproutrag.learn.evaluation import result_row

    args = parse_args(__doc__, argv)
    settings = load_settings(args.config)
    weights = load_default_weights(settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    params = weights.search
    for s in each_split(args):
        variants = {}
        shipped = {d: [tuple(map(int, x)) for x in f.spans] for d, f in s.feats.items()}
        body = {d: body_spans(s.texts[d], f.spans) for d, f in s.feats.items()}
        moved = sum(a != b for d in shipped for a, b in zip(shipped[d], body[d], strict=True))
        print(f"{s.name}: {moved} of {sum(map(len, shipped.values()))} units start with "
              "a heading", flush=True)
        heads = {d: section_headings(s.texts[d], body[d]) for d in body}
        variants["shipped"] = (shipped, {d: f.emb for d, f in s.feats.items()})
        flat = [(d, k) for d in body for k in range(len(body[d]))]
        alone = encoder.encode_texts([s.texts[d][a:b] for d, k in flat
                                      for a, b in [body[d][k]]])
        context = encoder.encode_texts([
            (heads[d][k] + "\n" if heads[d][k] else "") + s.texts[d][a:b]
            for d, k in flat for a, b in [body[d][k]]])
        for name, vecs in (("body", alone), ("body + heading", context)):
            emb, at = {}, 0
            for d in body:
                emb[d] = np.asarray(vecs[at: at + len(body[d])], np.float32)
                at += len(body[d])
            variants[name] = (body, emb)
        rows = {}
        for name, (spans, emb) in variants.items():
            terms = {d: LeafTerms.of([s.texts[d][a:b] for a, b in spans[d]],
                                     section_headings(s.texts[d], spans[d])) for d in spans}
            runs = {k: [] for k in KS}
            for q, v in zip(s.queries, s.qvecs, strict=True):
                docs = list(q["doc_ids"])
                ranked = leaves_mode({d: emb[d] for d in docs}, v, k=max(KS), params=params,
                                     query=q["query"], lexical={d: terms[d] for d in docs})
                units = [(d, *spans[d][u]) for d, u, _ in ranked]
                for k in KS:
                    runs[k].append(units[:k])
            units = {d: np.asarray(v, np.int64) for d, v in spans.items()}
            rows[name] = result_row(f"{s.name} {name}", runs, s.feats, s.queries, units)
        base = rows["shipped"]
        for row in rows.values():
            a = row["avg"]
            line = (f"{row['name']:45s} IE {100 * a['ie']:5.1f} cIE {100 * a['char_ie']:5.1f}"
                    f" cP {100 * a.get('char_precision', 0):5.1f}")
            if row is not base:
                line += (f"  d IE {_paired(row, base, 'ie')}  d cIE "
                         f"{_paired(row, base, 'char_ie')}")
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
