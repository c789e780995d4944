"""chunk: group a document's sentences (`sproutrag.ingest.sentences`) into evidence
units, as exact character spans.

Every function returns character spans ``(start, end)`` (end exclusive) into the text it
was given, so ``text[start:end]`` is the chunk, exactly: trimmed, in order,
non-overlapping, together covering every non-whitespace character of the text. A unit
holds up to `sentences_per_chunk` sentences within a character cap; with
`respect_structure` it also ends where a block ends and a heading starts one
(`chunk_text`). `section_headings` gives each unit the heading it sits under.
"""

from __future__ import annotations

import re

from sproutrag.ingest.sentences import (
    HARD_BREAK,
    Span,
    blocks,
    line_ends,
    pieces,
    split_sentences,
)

__all__ = ["LIST_LINES", "Span", "chunk_text", "line_ends", "section_headings",
           "split_sentences"]


def _group(sentences: list[Span], sentences_per_chunk: int, max_chunk_chars: int) -> list[Span]:
    """Consecutive sentences grouped into chunks of at most `sentences_per_chunk`
    sentences and `max_chunk_chars` characters (a sentence over the limit stays alone)."""
    chunks: list[Span] = []
    start, end, count = -1, -1, 0
    for s, e in sentences:
        if count and count < sentences_per_chunk and e - start <= max_chunk_chars:
            end, count = e, count + 1
            continue
        if count:
            chunks.append((start, end))
        start, end, count = s, e, 1
    if count:
        chunks.append((start, end))
    return chunks


def _structure(text: str, sentences: list[Span], lists: bool = False
               ) -> tuple[list[bool], list[bool]]:
    """Per sentence: does it start a block (blank line, heading-like line end, list item:
    see `sentences.blocks`), and is it a heading (a block of one short line: no sentence end
    punctuation, or title-like words, or ending with ":")?"""
    found = list(blocks(line_ends(text) if lists else text, lists))
    starts, ends = {s for s, _ in found}, {e for _, e in found}
    first = [s in starts for s, _ in sentences]
    heading = [f and e in ends and _heading_text(text[s:e])
               for f, (s, e) in zip(first, sentences, strict=True)]
    return first, heading


_MINOR_WORDS = frozenset("a an and as at by for from in of on or the to with".split())


def _heading_text(line: str) -> bool:
    """A one-line block that reads as a heading: "9.8 Incident Costs.", "ARTICLE 5",
    "Definitions", "The Recipient shall:"."""
    if "\n" in line or len(line) > 100:
        return False
    if line[-1] not in ".!?;,。！？":
        return True
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", line) if w.lower() not in _MINOR_WORDS]
    return bool(words) and len(words) <= 8 and all(w[0].isupper() for w in words)


#: With `lists`, a run of this many heading-like lines is a list (or a table of
#: contents), not a stack of headings: it is a unit of its own.
LIST_LINES = 3


def _group_structured(sentences: list[Span], first: list[bool], heading: list[bool],
                      sentences_per_chunk: int, max_chunk_chars: int,
                      join_cap: int, lists: bool = False) -> list[Span]:
    """`_group`, where a unit also ends before a sentence that starts a block (a section,
    paragraph, list item or line that ends a block), unless the unit so far holds only
    headings: a heading starts a unit and never ends one (it does not count as a
    sentence). Sentences join while the unit stays within `join_cap` characters; a
    heading joins its sentence within `max_chunk_chars`. With LISTS, headings join each
    other only within `join_cap`, and a run of `LIST_LINES` of them does not join the
    sentence after it."""
    chunks: list[Span] = []
    start, end, count, only_headings, heads = -1, -1, 0, True, 0
    for (s, e), new_block, head in zip(sentences, first, heading, strict=True):
        cap = join_cap if lists and head else max_chunk_chars
        listed = lists and not head and heads >= LIST_LINES
        joins = start >= 0 and (
            (only_headings and not listed and e - start <= cap)
            or (not new_block and count < sentences_per_chunk and e - start <= join_cap))
        if joins:
            end = e
        else:
            if start >= 0:
                chunks.append((start, end))
            start, end, count, only_headings, heads = s, e, 0, True, 0
        if head:
            heads += 1
        else:
            count, only_headings = count + 1, False
    if start >= 0:
        chunks.append((start, end))
    return chunks


def chunk_text(
    text: str, *, sentences_per_chunk: int = 2, max_chunk_chars: int = 1000,
    within_paragraphs: bool = False, respect_structure: bool = False,
    join_max_chars: int | None = None, lists: bool = False, sentence_rules: int = 2,
) -> list[Span]:
    """Chunk character spans of `text`: consecutive sentences, at most
    `sentences_per_chunk` per chunk and `max_chunk_chars` characters per chunk.

    ``text[start:end]`` is the chunk. A sentence longer than `max_chunk_chars` is cut
    into pieces (at whitespace where possible, else a hard cut), each its own chunk.
    With `join_max_chars`, sentences join into one chunk only while it stays within that
    many characters (a longer sentence is a chunk of its own, whole).
    With `within_paragraphs`, a chunk never spans a blank line, except that a paragraph
    that is only a short heading line joins the paragraph after it (so the end of one
    section is not glued to the title of the next). With `respect_structure`, a unit
    also ends where a block ends (a blank line, a list item, a heading-like line end) and
    a heading starts a unit and never ends one (`_group_structured`): no unit carries the
    next section's heading. With `lists` (and `respect_structure`) bulleted lines are
    list items, runs of heading-like lines obey `join_max_chars` and a list of them does
    not join the sentence after it, and lone "\\r" line ends count as line ends.
    SENTENCE_RULES is `split_sentences`'. Empty or whitespace-only text gives [].
    """
    _check_sizes(sentences_per_chunk, max_chunk_chars, join_max_chars)
    join_cap = max_chunk_chars if join_max_chars is None else min(join_max_chars,
                                                                  max_chunk_chars)
    if respect_structure:
        return _chunk_structured(text, sentences_per_chunk, max_chunk_chars, join_cap,
                                 lists, sentence_rules)
    units: list[Span] = []
    chunks: list[Span] = []
    for s, e in split_sentences(text, sentence_rules=sentence_rules):
        if e - s > max_chunk_chars:
            chunks += _group(units, sentences_per_chunk, max_chunk_chars)
            chunks += pieces(text, s, e, max_chunk_chars)
            units = []
            continue
        if within_paragraphs and units and _paragraph_break(text, units, s):
            chunks += _group(units, sentences_per_chunk, join_cap)
            units = []
        units.append((s, e))
    return chunks + _group(units, sentences_per_chunk, join_cap)


def _check_sizes(sentences_per_chunk: int, max_chunk_chars: int,
                 join_max_chars: int | None) -> None:
    """`chunk_text`'s size arguments checked: TypeError when SENTENCES_PER_CHUNK or
    MAX_CHUNK_CHARS is no int (a bool is none), ValueError when SENTENCES_PER_CHUNK < 1,
    MAX_CHUNK_CHARS < 16 or JOIN_MAX_CHARS is neither None nor an int >= 16."""
    if isinstance(sentences_per_chunk, bool) or not isinstance(sentences_per_chunk, int):
        raise TypeError(f"sentences_per_chunk must be an int, got {sentences_per_chunk!r}")
    if isinstance(max_chunk_chars, bool) or not isinstance(max_chunk_chars, int):
        raise TypeError(f"max_chunk_chars must be an int, got {max_chunk_chars!r}")
    if sentences_per_chunk < 1:
        raise ValueError(f"sentences_per_chunk must be >= 1, got {sentences_per_chunk}")
    if max_chunk_chars < 16:
        raise ValueError(f"max_chunk_chars must be >= 16, got {max_chunk_chars}")
    if join_max_chars is not None and (isinstance(join_max_chars, bool)
                                       or not isinstance(join_max_chars, int)
                                       or join_max_chars < 16):
        raise ValueError(f"join_max_chars must be None or an int >= 16, got {join_max_chars!r}")


def _chunk_structured(text: str, sentences_per_chunk: int, max_chunk_chars: int,
                      join_cap: int, lists: bool = False, sentence_rules: int = 2
                      ) -> list[Span]:
    """`chunk_text` with `respect_structure`: sentences longer than the cap are cut into
    pieces (each a unit); runs between them are grouped by `_group_structured`."""
    sentences = split_sentences(text, lists=lists, sentence_rules=sentence_rules)
    first, heading = _structure(text, sentences, lists)
    chunks: list[Span] = []
    run: list[int] = []

    def flush() -> None:
        chunks.extend(_group_structured([sentences[i] for i in run], [first[i] for i in run],
                                        [heading[i] for i in run], sentences_per_chunk,
                                        max_chunk_chars, join_cap, lists))
        run.clear()

    for i, (s, e) in enumerate(sentences):
        if e - s > max_chunk_chars:
            flush()
            chunks += pieces(text, s, e, max_chunk_chars)
        else:
            run.append(i)
    flush()
    return chunks


def _paragraph_break(text: str, run: list[Span], start: int) -> bool:
    """Does a blank line separate the run (current paragraph) from the sentence at
    `start`? A run that is one short line without end punctuation (a heading) never ends."""
    if not HARD_BREAK.search(text, run[-1][1], start):
        return False
    heading = text[run[0][0]:run[0][1]]
    return not (len(run) == 1 and len(heading) <= 80 and heading[-1] not in ".!?;:。！？")


_HEADING_END = ".!?;,:。！？"


def _heading_line(line: str) -> bool:
    line = line.strip()
    return 0 < len(line) <= 100 and line[-1] not in _HEADING_END


def section_headings(text: str, spans: list[Span]) -> list[str]:
    """The heading each chunk sits under ("" for none), for lexical context.

    A chunk's heading is the first line of its paragraph (blank-line delimited) when that
    line is heading-like (at most 100 characters, no sentence punctuation at the end) and
    the chunk does not itself hold it; or, when its paragraph has none, a paragraph of one
    heading-like line right before it ("ARTICLE 5" above its clause). In HotpotQA every
    paragraph starts with its title: "He is best known for ..." then carries the name.
    """
    breaks = [(m.start(), m.end()) for m in HARD_BREAK.finditer(text)]
    starts = [0] + [e for _, e in breaks]
    out = []
    for s, _ in spans:
        k = _bisect_right(starts, s) - 1
        p = starts[k]
        line = text[p : (text.find("\n", p) + 1 or len(text) + 1) - 1]
        if s > p + len(line.rstrip()) - 1 and _heading_line(line):
            out.append(line.strip())
            continue
        if k > 0:  # the previous paragraph: one heading-like line?
            prev = text[starts[k - 1] : breaks[k - 1][0]].strip()
            if "\n" not in prev and _heading_line(prev):
                out.append(prev)
                continue
        out.append("")
    return out


def _bisect_right(values: list[int], x: int) -> int:
    import bisect

    return bisect.bisect_right(values, x)
