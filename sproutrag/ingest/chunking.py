"""chunk: split a document into sentences, then group sentences into chunks.

Every function returns character spans ``(start, end)`` (end exclusive) into the
text it was given, so ``text[start:end]`` is the sentence or chunk, exactly.
Spans are trimmed (never start or end with whitespace), in order, non-overlapping,
and together cover every non-whitespace character of the text.

Sentence splitting uses a blank multilingual spaCy pipeline (``spacy.blank("xx")``)
with the rule-based ``sentencizer`` (offline, no model download). On top of it:

* tokenizer special cases keep legal abbreviations whole ("Sec.", "U.S.", "Inc.",
  "No.", "e.g.", ...), so the sentencizer does not split at them;
* CJK sentence punctuation (。！？) is split off inside runs of unspaced text;
* hard boundaries (the text is split there before spaCy sees it): a blank line,
  and a single newline that ends a heading-like line (no lowercase letters, or
  ends with ":", or short without end punctuation and followed by a line that
  starts like a new sentence), or that precedes an enumerated line ("(a)", "1.",
  "2.1", "iv)");
* a "sentence" that is only an enumerator ("1.", "(a)") is joined to the next one;
* with sentence rules 2 (the default since 0.11): titles and references that precede a
  name or number ("Gen.", "Tab.", "Approx.") are kept whole too, and two sentences are
  joined again where a period cannot have ended the first: no space after it ("Ph.|D."),
  or a short word or initials before it and a lower-case word after it ("5 mg b.i.d. |
  p.o. for", "St. Louis, Mo. | were", "$1.2 bn. | in"): clinical, financial and academic
  abbreviations, which no list holds whole; and an opening quote or bracket after a
  period starts the sentence it opens ('1. “Agreement” means', not '1. “' and the rest).

See docs/decisions.md for why this pipeline rather than a trained English one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

Span = tuple[int, int]

# spaCy is never asked to tokenize more than this many characters at once.
_PIECE_CHARS = 100_000

# Abbreviations that must not end a sentence. Title case and upper case variants
# are added for the first group; the second group is used as written.
_ABBREV_CASED = """
    Sec. Secs. Cir. Esq. Inc. No. Nos. Co. Corp. Ltd. Art. Arts. Para. Paras. Cl. Ch. Vol.
    Fig. Dept. Pty. Reg. Regs. Stat. Supp. Rev. Ex. Exh. Sch. Admin. Civ. Crim. Fed. Jr. Sr.
    Bros. Assn. Int'l.
""".split()
_ABBREV_EXACT = """
    U.S. U.S.A. U.K. E.U. L.L.C. L.L.P. L.P. N.A. S.A. P.C. N.V. B.V. A.G. e.g. E.g. i.e.
    I.e. cf. Cf. viz. v. vs. approx. pp. Mr. Mrs. Ms. Dr. Prof. St. Id. id. al. Jan. Feb.
    Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec.
""".split()
# Sentence rules 2 also keeps these whole: titles and references that usually precede a
# name or a number, which the lower-case join below does not reach (the first group
# with title and upper case variants, the second as written).
_ABBREV_CASED_2 = """
    Approx. Gen. Gov. Sen. Rep. Hon. Capt. Col. Lt. Sgt. Messrs. Tab. Eq. Eqs. Ref. Refs.
    Fn. Nr. Pt. Pts.
""".split()
_ABBREV_EXACT_2 = "resp. incl. excl. ca.".split()
#: The sentence rules: 1, the splitter before 0.11; 2, its abbreviations and joins.
SENTENCE_RULES = (1, 2)
# A period that ends one of these cannot end a sentence before a lower-case word: a
# short word ("bn.", "Mo.", "resp.", not a Roman numeral: "; ii. after" enumerates) or
# initials ("b.i.d.", "p.m."), after a space, a bracket or the start.
_ABBREV_END = re.compile(r"(?:^|[\s(\[/])(?:(?![ivxlcIVXLC]+\.)[A-Za-z]{2,5}"
                         r"|(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2})\.$")
# Initials cut at a period with no space after it: "Ph.|D.", "f.o.|b.".
_INITIAL_END = re.compile(r"(?:^|[\s(\[/.])[A-Za-z]{1,3}\.$")
_INITIAL_NEXT = re.compile(r"[A-Za-z]{1,2}\.")
_CJK_STOPS = r"[。！？｡]"
_OPENERS = frozenset("“‘«([{\"'")  # quotes and brackets that open what follows

_HARD_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (and the whitespace after it)
_LINE = re.compile(r"[^\n]*\n")
_ENUM = r"(?:\(\w{1,6}\)|\w{1,6}\)|\d{1,3}(?:\.\d{1,3})+\.?|\d{1,3}\.|[A-Za-z]\.|[ivxIVX]{1,6}\.)"
_ENUM_LINE = re.compile(_ENUM + r"(?=\s)")
_ENUM_ONLY = re.compile(_ENUM + r"$")
_BULLET_LINE = re.compile(r"[-*\u2022\u2023\u25e6\u25aa\u2013\u2043]\s")  # - * • ‣ ◦ ▪ – ⁃
_CR = re.compile(r"\r\n?")
_SENTENCE_START = re.compile(r"[\W_]*[A-Z0-9]")
_LAST_SPACE = re.compile(r".+\s", re.DOTALL)  # up to the last whitespace


@functools.lru_cache(maxsize=2)
def _nlp(rules: int = 2) -> Any:
    """The sentence splitter: spaCy blank "xx" + sentencizer + legal/CJK rules (cached;
    RULES 2 keeps `_ABBREV_CASED_2` and `_ABBREV_EXACT_2` whole too)."""
    import spacy
    from spacy.attrs import ORTH
    from spacy.util import compile_infix_regex

    nlp = spacy.blank("xx")
    for abbrev in _ABBREV_CASED + (_ABBREV_CASED_2 if rules >= 2 else []):
        for form in {abbrev, abbrev.upper()}:
            nlp.tokenizer.add_special_case(form, [{ORTH: form}])
    for abbrev in _ABBREV_EXACT + (_ABBREV_EXACT_2 if rules >= 2 else []):
        nlp.tokenizer.add_special_case(abbrev, [{ORTH: abbrev}])
    infixes = [*nlp.Defaults.infixes, _CJK_STOPS]
    nlp.tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
    nlp.add_pipe("sentencizer")
    nlp.max_length = 2 * _PIECE_CHARS
    return nlp


def _trim(text: str, start: int, end: int) -> Span | None:
    """(start, end) shrunk to exclude leading/trailing whitespace; None if nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _heading_like(line: str, next_line: str, lists: bool = False) -> bool:
    """Does a single newline after `line` (followed by `next_line`) end a sentence? With
    LISTS a bulleted line ("- ", "* ", "• ") starts an item, as an enumerated one does."""
    line, next_line = line.strip(), next_line.strip()
    if not line or not next_line or line.endswith(":"):
        return True
    if _ENUM_LINE.match(next_line + " ") or (lists and _BULLET_LINE.match(next_line + " ")):
        return True
    if not any(c.islower() for c in line):  # upper case, or no letters; CJK lines excluded
        if any(c.isupper() for c in line) or not any(c.isalpha() for c in line):
            return True
    short = len(line) <= 60 and line[-1] not in ",;-([/&" and not line.endswith((" and", " or"))
    return short and _SENTENCE_START.match(next_line) is not None


def _paragraphs(text: str) -> Iterator[Span]:
    """Spans between blank lines (untrimmed)."""
    pos = 0
    for match in _HARD_BREAK.finditer(text):
        yield pos, match.start()
        pos = match.end()
    yield pos, len(text)


def line_ends(text: str) -> str:
    """TEXT with every line end a "\\n" and the same length (so its offsets are TEXT's):
    "\\r\\n" becomes " \\n", a lone "\\r" (old Mac files) "\\n"."""
    return _CR.sub(lambda m: " \n" if len(m.group()) == 2 else "\n", text)


def _blocks(text: str, lists: bool = False) -> Iterator[Span]:
    """Trimmed spans between hard boundaries (blank lines, heading-like line ends; with
    LISTS, bulleted lines too)."""
    for start, end in _paragraphs(text):
        line_start = start
        newline = text.find("\n", start, end)
        while newline != -1:
            after = text.find("\n", newline + 1, end)
            next_end = end if after == -1 else after
            if _heading_like(text[line_start:newline], text[newline + 1 : next_end], lists):
                if span := _trim(text, start, newline):
                    yield span
                start = newline + 1
            line_start, newline = newline + 1, after
        if span := _trim(text, start, end):
            yield span


def _pieces(text: str, start: int, end: int, limit: int) -> Iterator[Span]:
    """Cut text[start:end] into trimmed pieces of at most `limit` chars, at whitespace
    where possible (preferring a newline in the second half of the window)."""
    while span := _trim(text, start, end):
        start, end = span
        if end - start <= limit:
            yield span
            return
        window = text[start : start + limit + 1]
        cut = window.rfind("\n", limit // 2)
        if cut <= 0:
            match = _LAST_SPACE.match(window)
            cut = match.end() - 1 if match else limit
        if piece := _trim(text, start, start + cut):
            yield piece
        start += cut


def _spacy_sentences(text: str, spans: list[Span], rules: int = 2) -> Iterator[Span]:
    """Sentence spans inside each block span, by the spaCy pipeline; a sentence that
    is only an enumerator ("1.", "(a)") is joined to the next one in its block, and with
    RULES 2 a sentence is joined to the one before it where `_continues`."""
    blocks = [list(_block_sentences(text, offset, doc, rules))
              for (offset, _), doc in zip(spans, _nlp(rules).pipe(text[s:e] for s, e in spans),
                                          strict=True)]
    if rules < 2:
        for block in blocks:
            yield from block
        return
    lower = _capitalised(text, blocks)  # a lower-case word after a period continues
    for block in blocks:
        last: Span | None = None
        for span in block:
            if last is not None and _continues(text, last, span[0], lower):
                last = (last[0], span[1])
                continue
            if last is not None:
                yield last
            last = span
        if last is not None:
            yield last


def _block_sentences(text: str, offset: int, doc: Any, rules: int = 2) -> Iterator[Span]:
    """The sentences spaCy found in one block (DOC, at OFFSET in TEXT), trimmed; an
    enumerator alone ("1.", "(a)") joined to the sentence after it; with RULES 2 an
    opening quote or bracket moved to the sentence it opens (`_openers_moved`)."""
    spans = [span for sent in doc.sents
             if (span := _trim(text, offset + sent.start_char, offset + sent.end_char))]
    if rules >= 2:
        spans = _openers_moved(text, spans)
    pending: Span | None = None
    for span in spans:
        if pending is not None:
            span, pending = (pending[0], span[1]), None
        if _ENUM_ONLY.match(text, span[0], span[1]):
            pending = span
            continue
        yield span
    if pending is not None:
        yield pending


def _openers_moved(text: str, spans: list[Span]) -> list[Span]:
    """SPANS with the opening quotes and brackets that end a sentence moved to the next:
    the sentencizer keeps punctuation after a period in its sentence (right for a
    closing one: 'He said "Stop."'), so '1. “' and 'Agreement” means ...' were two
    sentences, and 'in 1953. "' ended one. A run of `_OPENERS` after a space is moved."""
    out: list[Span] = []
    carry: int | None = None  # where the next sentence starts instead
    for k, (start, end) in enumerate(spans):
        if carry is not None:
            start, carry = carry, None
        cut = end
        while cut > start and text[cut - 1] in _OPENERS:
            cut -= 1
        if k + 1 < len(spans) and cut < end and (cut == start or text[cut - 1].isspace()):
            carry = cut
            if (kept := _trim(text, start, cut)) is None:
                continue
            start, end = kept
        out.append((start, end))
    return out


def _capitalised(text: str, blocks: list[list[Span]]) -> bool:
    """Does TEXT start its sentences with a capital? Then a lower-case word after a short
    word's period shows the period was no sentence end. No when no sentence starts with
    a capital, or more than one in ten of those that start with a letter start lower-case
    where no abbreviation explains it (after a block's start, a long word or a number):
    lower-case text ("the dog ran. the cat sat.") keeps every sentence."""
    upper = lower = 0
    for block in blocks:
        for k, (start, _) in enumerate(block):
            first = text[start]
            if first.isupper():
                upper += 1
            elif first.islower() and (k == 0 or not _abbreviation_end(text, block[k - 1])):
                lower += 1
    return upper > 0 and 10 * lower <= upper


def _continues(text: str, sentence: Span, start: int, lower: bool = True) -> bool:
    """Does the sentence at START go on SENTENCE, whose period was no sentence end? Yes
    when initials were cut at a period with no space after it ("Ph.|D."), or (with LOWER)
    when the period ends a short word or initials and START is a lower-case letter
    ("p.o. | for", "bn. | in")."""
    end = sentence[1]
    if text[end - 1] != "." or start >= len(text):
        return False
    if start == end:
        return (_INITIAL_NEXT.match(text, start) is not None
                and _INITIAL_END.search(_tail(text, sentence)) is not None)
    return lower and text[start].islower() and _abbreviation_end(text, sentence)


def _tail(text: str, sentence: Span) -> str:
    """The last 12 characters of SENTENCE (all of it when shorter)."""
    return text[max(sentence[0], sentence[1] - 12) : sentence[1]]


def _abbreviation_end(text: str, sentence: Span) -> bool:
    """Does SENTENCE end with a short word's or initials' period (`_ABBREV_END`)?"""
    return _ABBREV_END.search(_tail(text, sentence)) is not None


def split_sentences(text: str, *, lists: bool = False, sentence_rules: int = 2) -> list[Span]:
    """Sentence character spans of `text` (end exclusive, trimmed, ordered, covering).

    Works offline and on any length: the text is split at hard boundaries (blank
    lines, heading-like line ends; with LISTS bulleted lines, and line ends of any
    convention: `line_ends`) and pieces of at most 100,000 characters before spaCy sees
    it, so offsets stay exact and spaCy's max_length is never reached. SENTENCE_RULES 1
    is the splitter before 0.11, 2 adds its abbreviations and joins (module docstring).
    """
    if sentence_rules not in SENTENCE_RULES:
        raise ValueError(f"sentence_rules must be one of {SENTENCE_RULES}, got "
                         f"{sentence_rules!r}")
    if lists:
        text = line_ends(text)
    spans = [
        piece
        for block in _blocks(text, lists)
        for piece in _pieces(text, block[0], block[1], _PIECE_CHARS)
    ]
    return list(_spacy_sentences(text, spans, sentence_rules))


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
    see `_blocks`), and is it a heading (a block of one short line: no sentence end
    punctuation, or title-like words, or ending with ":")?"""
    blocks = list(_blocks(line_ends(text) if lists else text, lists))
    starts, ends = {s for s, _ in blocks}, {e for _, e in blocks}
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
            chunks += _pieces(text, s, e, max_chunk_chars)
            units = []
            continue
        if within_paragraphs and units and _paragraph_break(text, units, s):
            chunks += _group(units, sentences_per_chunk, join_cap)
            units = []
        units.append((s, e))
    return chunks + _group(units, sentences_per_chunk, join_cap)


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
            chunks += _pieces(text, s, e, max_chunk_chars)
        else:
            run.append(i)
    flush()
    return chunks


def _paragraph_break(text: str, run: list[Span], start: int) -> bool:
    """Does a blank line separate the run (current paragraph) from the sentence at
    `start`? A run that is one short line without end punctuation (a heading) never ends."""
    if not _HARD_BREAK.search(text, run[-1][1], start):
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
    breaks = [(m.start(), m.end()) for m in _HARD_BREAK.finditer(text)]
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
