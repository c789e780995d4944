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
"Unit shapes".
"""

from __future__ import annotations

from labelled_sets import each_split, embed_spans, leaves_mode_row, parse_args, report_both
from unit_shapes import body

from sproutrag.ingest.chunking import section_headings


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights

    args = parse_args(__doc__, argv)
    settings = load_settings(args.config)
    weights = load_default_weights(settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    for s in each_split(args):
        shipped = {d: [tuple(map(int, x)) for x in f.spans] for d, f in s.feats.items()}
        bodies = {d: body(s.texts[d], shipped[d]) for d in shipped}
        moved = sum(a != b for d in shipped for a, b in zip(shipped[d], bodies[d], strict=True))
        print(f"{s.name}: {moved} of {sum(map(len, shipped.values()))} units start with "
              "a heading", flush=True)
        heads = {d: section_headings(s.texts[d], bodies[d]) for d in bodies}
        base = leaves_mode_row(f"{s.name} shipped", s, shipped,
                               {d: f.emb for d, f in s.feats.items()}, weights.search)
        report_both(base)
        alone = embed_spans(encoder, s, bodies)
        context = embed_spans(encoder, s, bodies,
                              lambda d, k, h=heads: h[d][k] + "\n" if h[d][k] else "")
        for name, emb in (("body", alone), ("body + heading", context)):
            report_both(leaves_mode_row(f"{s.name} {name}", s, bodies, emb, weights.search),
                        base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
