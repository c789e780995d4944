"""Bulleted lists, heading runs and line ends: do the units that respect them score as
well as before?

    PYTHONPATH=. .venv/bin/python bench/research/list_units.py [--sets ...] [--splits dev]

`chunking.lists` (issue 31): bulleted lines ("- ", "* ", "• ") start list items, runs of
heading-like lines obey the join cap and a list of them (3 or more) does not join the
sentence after it, and lone "\\r" line ends count as line ends. The units with and
without it, each embedded alone and ranked by the packaged leaves mode, paired against
the units without (unit IE and char-IE). Decision rule, fixed before the run: `lists`
becomes the default when no set loses more than 1 SE on either metric. docs/results.md,
"Units of structured text".
"""

from __future__ import annotations

from labelled_sets import each_split, embed_spans, leaves_mode_row, parse_args, report_both

from sproutrag.ingest.chunking import chunk_text
from sproutrag.learn.metrics import paired_difference


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights

    args = parse_args(__doc__, argv, lambda p: p.set_defaults(splits=["dev"]))
    settings = load_settings(args.config)
    weights = load_default_weights(settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    chunking = {**settings.chunking.model_dump(), "lists": False}
    for s in each_split(args):
        base_spans = {d: chunk_text(s.texts[d], **chunking) for d in s.feats}
        base = leaves_mode_row(f"{s.name} without lists", s, base_spans,
                               embed_spans(encoder, s, base_spans), weights.search)
        report_both(base)
        spans = {d: chunk_text(s.texts[d], **{**chunking, "lists": True}) for d in s.feats}
        changed = sum(spans[d] != base_spans[d] for d in spans)
        row = leaves_mode_row(f"{s.name} lists ({changed} documents' units differ)", s,
                              spans, embed_spans(encoder, s, spans), weights.search)
        report_both(row, base)
        for key in ("ie", "char_ie"):
            m, se = paired_difference(row["per_query"][key], base["per_query"][key])
            print(f"  {key}: {100 * m:+.3f} +/- {100 * se:.3f} ({m / se if se else 0:+.2f} SE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
