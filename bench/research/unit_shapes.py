"""Which evidence units score best on both metrics: headings, line ends, length caps?

    PYTHONPATH=. .venv/bin/python bench/research/unit_shapes.py [--sets ...] [--splits dev]
        [--shapes body lines join300 ...]

Issue 20 asks for units that score at least 1.10x LanceDB's baselines on unit IE and
char-IE. The shipped units are structured (`chunking.respect_structure`): two sentences,
a unit ends where a block ends, a heading starts a unit. Shapes tried, each derived from
the shipped units or their sentences of the same document:

* `body`: the shipped units without the heading lines they start with (the heading
  stays the leaf's BM25 context, `section_headings`; a unit of headings only is kept);
* `lines`: the shipped units cut at every line end (what the regex chunks of the
  baselines do);
* `joinN`: two sentences joined into one unit only when the two together are at most N
  characters (a long sentence stays a unit of its own and is never cut);
* `body+joinN`: both.

Every shape is embedded alone (the shipped embedding mode) and ranked by the packaged
leaves mode (z(cosine) + w z(BM25), the heading counted twice, the packaged cutoffs),
then paired against the shipped units (unit IE and char-IE). docs/results.md, "Unit
shapes".
"""

from __future__ import annotations

import re

import numpy as np
from labelled_sets import each_split, embed_spans, leaves_mode_row, parse_args, report_both

from sproutrag.ingest.chunking import _group_structured, _structure, split_sentences

Span = tuple[int, int]


def _headings(text: str) -> list[Span]:
    sentences = split_sentences(text)
    _, heading = _structure(text, sentences)
    return [sp for sp, h in zip(sentences, heading, strict=True) if h]


def body(text: str, spans: list[Span]) -> list[Span]:
    """SPANS without the heading sentences they start with (headings-only units kept)."""
    heads = _headings(text)
    out = []
    for s, e in spans:
        start = s
        for hs, he in heads:
            if hs == start and he < e:
                rest = text[he:e]
                start = he + len(rest) - len(rest.lstrip())
        out.append((start, e) if start < e else (s, e))
    return out


def lines(text: str, spans: list[Span]) -> list[Span]:
    """SPANS cut at every line end (trimmed, no empty piece)."""
    out = []
    for s, e in spans:
        for m in re.finditer(r"[^\n]+", text[s:e]):
            piece = m.group()
            a = s + m.start() + len(piece) - len(piece.lstrip())
            b = s + m.end() - (len(piece) - len(piece.rstrip()))
            if a < b:
                out.append((a, b))
    return out


def joined(text: str, cap: int) -> list[Span]:
    """Structured units of up to two sentences, joined only within CAP characters (a
    sentence over the cap is a unit of its own, whole, up to the 1,000-character cut of
    the shipped chunking)."""
    from sproutrag.ingest.sentences import pieces as _pieces

    sentences = split_sentences(text)
    first, heading = _structure(text, sentences)
    out: list[Span] = []
    run: list[int] = []

    def flush() -> None:
        group = _group_structured([sentences[i] for i in run], [first[i] for i in run],
                                  [heading[i] for i in run], 2, cap, cap)
        out.extend(group)
        run.clear()

    for i, (s, e) in enumerate(sentences):
        if e - s > 1000:
            flush()
            out.extend(_pieces(text, s, e, 1000))
        elif e - s > cap:  # whole, alone: `_group_structured` joins nothing over the cap
            flush()
            out.append((s, e))
        else:
            run.append(i)
    flush()
    return out


def shape(name: str, text: str, shipped: list[Span]) -> list[Span]:
    """The units of shape NAME ("body", "lines", "joinN" or such parts joined by "+"):
    the joined units (or the shipped ones), then body and lines applied."""
    parts = name.split("+")
    caps = [int(p[4:]) for p in parts if p.startswith("join")]
    spans = joined(text, caps[0]) if caps else shipped
    for part in parts:
        if part == "body":
            spans = body(text, spans)
        elif part == "lines":
            spans = lines(text, spans)
        elif not part.startswith("join"):
            raise SystemExit(f"unknown shape {part!r} in {name!r}")
    return spans


def main(argv: list[str] | None = None) -> int:
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import encoder_from_settings
    from sproutrag.encoder.weights import load_default_weights

    args = parse_args(__doc__, argv, lambda p: p.add_argument(
        "--shapes", nargs="+", default=["body", "lines", "join300", "join400",
                                        "body+join400"]))
    settings = load_settings(args.config)
    weights = load_default_weights(settings.encoding.weights)
    encoder = encoder_from_settings(settings.encoding, weights)
    for s in each_split(args):
        shipped = {d: [tuple(map(int, x)) for x in f.spans] for d, f in s.feats.items()}
        base = leaves_mode_row(f"{s.name} shipped", s, shipped,
                               {d: f.emb for d, f in s.feats.items()}, weights.search)
        report_both(base, label=_median(shipped))
        for name in args.shapes:
            spans = {d: shape(name, s.texts[d], shipped[d]) for d in shipped}
            row = leaves_mode_row(f"{s.name} {name}", s, spans, embed_spans(encoder, s, spans),
                                  weights.search)
            report_both(row, base, label=_median(spans))
    return 0


def _median(spans: dict[str, list[Span]]) -> str:
    return f" units {int(np.median([b - a for v in spans.values() for a, b in v])):4d} ch"


if __name__ == "__main__":
    raise SystemExit(main())
