"""sentences: split a document into sentences, as exact character spans.

Every function returns character spans ``(start, end)`` (end exclusive) into the
text it was given, so ``text[start:end]`` is the sentence, exactly. Spans are trimmed
(never start or end with whitespace), in order, non-overlapping, and together cover
every non-whitespace character of the text. `sproutrag.ingest.chunking` groups them
into evidence units.

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

from sproutrag.graphemes import whole_character_cut

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
# with title and upper case variants, the second as written: "p. 45", "fig. 3").
_ABBREV_CASED_2 = """
    Approx. Gen. Gov. Sen. Rep. Hon. Capt. Col. Lt. Sgt. Messrs. Tab. Eq. Eqs. Ref. Refs.
    Fn. Nr. Pt. Pts.
""".split()
_ABBREV_EXACT_2 = """
    resp. incl. excl. ca. p. pg. fig. figs. tab. eq. eqs. ref. refs. vol. ch. para.
""".split()
#: The sentence rules: 1, the splitter before 0.11; 2, its abbreviations and joins.
SENTENCE_RULES = (1, 2)
# A period that ends one of these cannot end a sentence before a lower-case word: a
# short word ("bn.", "Mo.", "resp.", not a Roman numeral: "; ii. after" enumerates) or
# initials ("b.i.d.", "p.m."), after a space, a bracket or the start.
_ABBREV_END = re.compile(r"(?:^|[\s(\[/])(?:(?![ivxlcIVXLC]+\.)[A-Za-z]{2,5}"
                         r"|(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2})\.$")
# A lower-case short word's period before a number: "wk. 16", "no. 11".
_LOWER_END = re.compile(r"(?:^|[\s(\[/])[a-z]{2,5}\.$")
# Initials cut at a period with no space after it: "Ph.|D.", "f.o.|b.".
_INITIAL_END = re.compile(r"(?:^|[\s(\[/.])[A-Za-z]{1,3}\.$")
_INITIAL_NEXT = re.compile(r"[A-Za-z]{1,2}\.")
_CJK_STOPS = r"[。！？｡]"
_OPENERS = frozenset("“‘«([{\"'")  # quotes and brackets that open what follows

HARD_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (and the whitespace after it)
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
    for match in HARD_BREAK.finditer(text):
        yield pos, match.start()
        pos = match.end()
    yield pos, len(text)


def line_ends(text: str) -> str:
    """TEXT with every line end a "\\n" and the same length (so its offsets are TEXT's):
    "\\r\\n" becomes " \\n", a lone "\\r" (old Mac files) "\\n"."""
    return _CR.sub(lambda m: " \n" if len(m.group()) == 2 else "\n", text)


def blocks(text: str, lists: bool = False) -> Iterator[Span]:
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


def pieces(text: str, start: int, end: int, limit: int) -> Iterator[Span]:
    """Cut text[start:end] into trimmed pieces of at most `limit` chars, at whitespace
    where possible (preferring a newline in the second half of the window), else at the
    last position that splits no character (`sproutrag.graphemes`)."""
    while span := _trim(text, start, end):
        start, end = span
        if end - start <= limit:
            yield span
            return
        window = text[start : start + limit + 1]
        cut = window.rfind("\n", limit // 2)
        if cut <= 0:
            match = _LAST_SPACE.match(window)
            cut = match.end() - 1 if match else (
                whole_character_cut(text, start, start + limit) - start)
        if piece := _trim(text, start, start + cut):
            yield piece
        start += cut


def _spacy_sentences(text: str, spans: list[Span], rules: int = 2) -> Iterator[Span]:
    """Sentence spans inside each block span, by the spaCy pipeline; a sentence that
    is only an enumerator ("1.", "(a)") is joined to the next one in its block, and with
    RULES 2 a sentence is joined to the one before it where `_continues`."""
    docs = _nlp(rules).pipe(text[s:e] for s, e in spans)
    per_block = [list(_block_sentences(text, offset, doc, rules))
                 for (offset, _), doc in zip(spans, docs, strict=True)]
    if rules < 2:
        for block in per_block:
            yield from block
        return
    lower = _capitalised(text, per_block)  # a lower-case word after a period continues
    for block in per_block:
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
    if not any(text[end - 1] in _OPENERS for _, end in spans[:-1]):
        return spans  # most blocks: nothing to move
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


def _capitalised(text: str, per_block: list[list[Span]]) -> bool:
    """Does TEXT start its sentences with a capital? Then a lower-case word after a short
    word's period shows the period was no sentence end. No when no sentence starts with
    a capital, or more than one in ten of those that start with a letter start lower-case
    where no abbreviation explains it (after a block's start, a long word or a number):
    lower-case text ("the dog ran. the cat sat.") keeps every sentence."""
    upper = lower = 0
    for block in per_block:
        for k, (start, _) in enumerate(block):
            first = text[start]
            if first.isupper():
                upper += 1
            elif first.islower() and (k == 0 or not _ends(text, block[k - 1], _ABBREV_END)):
                lower += 1
    return upper > 0 and 10 * lower <= upper


def _continues(text: str, sentence: Span, start: int, lower: bool = True) -> bool:
    """Does the sentence at START go on SENTENCE, whose period was no sentence end? Yes
    when initials were cut at a period with no space after it ("Ph.|D."), or (with LOWER)
    when the period ends a short word or initials and START is a lower-case letter
    ("p.o. | for", "bn. | in"), or a lower-case short word and START a digit on the same
    line ("wk. | 16")."""
    end = sentence[1]
    if text[end - 1] != "." or start >= len(text):
        return False
    if start == end:
        return _INITIAL_NEXT.match(text, start) is not None and _ends(text, sentence,
                                                                      _INITIAL_END)
    if not lower:
        return False
    if text[start].isdigit():  # not a numbered line: "such order.\n8 Proprietary Rights"
        return "\n" not in text[end:start] and _ends(text, sentence, _LOWER_END)
    return text[start].islower() and _ends(text, sentence, _ABBREV_END)


def _ends(text: str, sentence: Span, pattern: re.Pattern[str]) -> bool:
    """Does SENTENCE end as PATTERN (anchored at its end) says? Only its last 12
    characters are read, so that "^" in PATTERN matches where a short sentence starts."""
    return pattern.search(text[max(sentence[0], sentence[1] - 12) : sentence[1]]) is not None


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
        for block in blocks(text, lists)
        for piece in pieces(text, block[0], block[1], _PIECE_CHARS)
    ]
    return list(_spacy_sentences(text, spans, sentence_rules))
