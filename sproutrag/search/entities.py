"""The names a question is about: its entities (a company, a party, a case, a trial).

A question about one of many look-alike documents names what it is about ("What does the
agreement with Wollaston School say about ...", "X's revenue in 2019");
`sproutrag.search.mentions` finds the documents that write those names. The entities are
the question's runs of capitalised words, as `words` writes them, stopwords trimmed from
their ends:

- a capital anywhere makes a word part of a run ("eBay", "3M"); "of", "the", "for", "&",
  "v." join two such words; initials join a run ("Richard A. Bearse") and a title opening
  it is dropped ("Dr. Jane Doe" is "jane doe"); "Grey's Anatomy" is "grey s anatomy";
- a run that joins two names is also each of them: a case's two sides ("Smith v. Jones"),
  a possessive's ("Pfizer's Comirnaty"), what follows an acronym's or a filing's "of" or
  "for" ("EBITDA of Netflix", "the 10-K of Procter & Gamble"; rules 38-39), a document's
  "of" ("the License Agreement of Cerence"; rule 40), the two sides of "for" beside a
  single acronym ("Keytruda for NSCLC"; rule 46);
- a run is also itself without a company's legal form ("Apple Inc."; rule 39), a period
  joined to its end ("Boeing for Q2 of FY2022"; rule 40), a role at its start
  ("Plaintiff John Doe"; rule 42), a document's title at its end ("the Acme Master
  Services Agreement", "the Apple 10-K"; rule 49), and with the number after it
  ("CheckMate 227"; rule 47) and the capitalised words after that ("Boeing 737 MAX";
  rule 55);
- no name: a period or a filing's form ("FY2018", "Q2 of FY22", "10-K", a month; rules
  36, 43, 47), a currency, a measure or a role ("USD", "EBITDA", "CEO"; rule 41, but
  "Roe" spelt as a name is one: rule 50), a filing's name or an officer's title alone
  ("Form 10-K", "Chairman"; rule 48), a document's part with its number ("Section 2.1";
  rule 44), a party's role or a contract's defined term ("Receiving Party"; rule 45), an
  acronym the question defines after lower-case words ("cash conversion cycle (CCC)") and
  a roman numeral alone ("phase III"; rule 47), dotted initials alone and a court
  reporter's abbreviation ("U.S.", "U.S.C.", "F.3d"; rule 50);
- a digit and a capital are a code ("3M"), a name though two characters, where "$3M" and
  "3m" are amounts; a slash joins a ratio ("P/E of Apple" also "apple"; rule 46);
- a capitalised word that opens a sentence may be an ordinary word: a run opening a
  sentence drops its first word when that is a function word or an instruction's verb
  ("Among PepsiCo" is "pepsico"), and a single such word is no entity ("Under") unless it
  is possessive ("Pfizer's"), has a capital after its first letter ("AMD") or is joined
  by "and" or "or" to a name ("Pfizer and Moderna"; rule 59);
- a person's age ("the 62-year-old patient") is an entity too: it names a case report
  (rule 51); a place hyphenated to "based", "sponsored" and the like is its place alone
  and ends its run ("the Boston-based Acme Holdings": "boston", "acme holdings"; rule 85);
- a title's lower-case words ("to", "by": `entity_words.TITLE_JOINERS`) join its
  capitalised words into one more name after the others ("Welcome to the Show" is also
  "welcome to the show"), when each piece it joins is a name (rule 56); "and" and "or"
  join none ("Apple and Microsoft" is two names; rule 58).

A run's name, its pieces and its shorter forms are `sproutrag.search.entity_forms`'; the
closed word lists are `sproutrag.search.entity_words`'. Pure functions over strings (no
model, no database).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

from sproutrag.names import folded
from sproutrag.search import entity_words as vocab
from sproutrag.search.entity_forms import run_name, run_parts, shorter_forms
from sproutrag.stopwords import STOPWORDS


def question_entities(query: str) -> list[str]:
    """The runs of capitalised words of QUERY (joined by `entity_words.JOINERS`; not one
    word opening a sentence, unless possessive, with a second capital or joined to a name
    by "and" or "or"), lower-cased, their words joined by one space, stopwords
    trimmed from both ends, each once, in order; only those of 3 characters or more, not
    only stopwords and digits; then the ages it writes, as "62 year old" and "62 years
    old"; then its titles, runs that `entity_words.TITLE_JOINERS` join too ("welcome to
    the show"). Computed once per question (the first stage, the read and the boosts of
    one search ask for them)."""
    return list(_entities(query))


@functools.lru_cache(maxsize=1024)
def place_pairs(query: str) -> frozenset[tuple[str, str]]:
    """(e, f) and (f, e) for each two entities of QUERY (`question_entities`) that it
    joins by a comma alone, as a place is written ("Lincoln, Nebraska", "Eau Claire,
    Wisconsin-based"): F is then followed by neither a comma nor "and", "or" or "&" (a
    list of names, "Apple, Microsoft and Google", joins none). Rule 88's two parties are
    never such a pair (rule 94). Computed once per question, as its entities are."""
    text = re.sub(r"[^a-z0-9,&]+", " ", folded(query).lower())
    text = " " + " ".join(re.sub(r"([,&])", r" \1 ", text).split()) + " "
    names = question_entities(query)
    pairs = {(e, f) for e in names for f in names if e != f and re.search(
        rf" {re.escape(folded(e))} , {re.escape(folded(f))} (?!, |and |or |& )", text)}
    return frozenset(pairs | {(f, e) for e, f in pairs})


@functools.lru_cache(maxsize=1024)
def _entities(query: str) -> tuple[str, ...]:
    tokens = list(_tokens(query))
    out: dict[str, None] = {}
    for opens, run, number, at in _runs(query, tokens):
        while run and run[-1].lower() in vocab.JOINERS:
            run.pop()
        if not run:  # "The" alone
            continue
        if opens and len(run) > 1 and run[0].lower() in vocab.OPENERS:
            run.pop(0)  # "Among PepsiCo": the sentence's opening word
        elif opens and len(run) == 1 and not (_names_alone(run[0])
                                              or _coordinated(tokens, at)):
            continue
        if len(run) > 1 and run[0] in vocab.TITLES:
            run.pop(0)  # "Dr. Jane Doe": a text may write "Jane Doe" or "Dr. Doe"
        if number and run_name(run) and not vocab.POSSESSIVE.search(run[-1]):
            for form in (number, number[:1]):  # "boeing 737 max", "boeing 737" (rule 55)
                while len(form) > 1 and form[-1].lower() in vocab.JOINERS:
                    form = form[:-1]
                with_number = run_name(run + form)  # "checkmate 227" before "checkmate"
                if with_number:  # not a term: "COVID 19"
                    out.setdefault(with_number)
        for part in run_parts(run):
            for form in shorter_forms(part):
                name = run_name(form)
                if name:
                    out.setdefault(name)
    for m in vocab.AGE.finditer(query):  # "the 62-year-old patient" (rule 51): a report may
        for form in ("year", "years"):  # write "62-year-old" or "62 years old"
            out.setdefault(f"{m.group(1)} {form} old")
    for title in _titles(query):  # "Welcome to the Show" after "welcome", "show" (rule 56)
        out.setdefault(title)
    return tuple(out)


def _runs(query: str, tokens: list[_Token]) -> list[tuple[bool, list[str], list[str], int]]:
    """The runs of capitalised words of QUERY, read from its TOKENS (`_tokens`), in order:
    whether each opens a sentence, its words (joiners inside it; an acronym the question
    defines after lower-case words starts none: rule 47), the number after them with the
    capitalised words after that ("CheckMate 227", "Boeing 737 MAX"; rules 47 and 55) and
    the position of its first token."""
    runs: list[tuple[bool, list[str], list[str], int]] = []
    current: list[str] = []
    numbered = False  # whether the word before was a name's number
    for at, (m, word, gap, joined, opens) in enumerate(tokens):
        after_number, numbered = numbered, False
        origin = vocab.ORIGIN.fullmatch(word)
        word = origin.group(1) if origin else word  # "Tulsa-based": "Tulsa" (rule 85)
        if any(c.isupper() for c in word):
            if current and joined:
                current.append(word)
            elif after_number and joined:
                current = runs[-1][2]  # "Boeing 737 MAX": the name goes on (rule 55)
                current.append(word)
            elif gap.strip() == "(" and _defined_acronym(word, query[:m.start()]):
                current = []  # "cash conversion cycle (CCC)": a measure (rule 47)
            else:
                current = [word]
                runs.append((opens, current, [], at))
            if origin:
                current = []  # "the Boston-based Acme Holdings": two names
        elif current and joined and word.lower() in vocab.JOINERS:
            current.append(word)
        else:
            if (current and current is runs[-1][1] and joined and word.isdigit()
                    and current[-1].lower() not in vocab.JOINERS):
                runs[-1][2].append(word)  # "CheckMate 227" (rule 47)
                numbered = run_name(current) is not None
            current = []
    return runs


def _titles(query: str) -> list[str]:
    """The titles of QUERY: runs of capitalised words that `entity_words.TITLE_JOINERS`
    join as well as `JOINERS` ("Welcome to the Show", "Escape from the Dark"), each as
    one name (`run_name`) when such a word is inside it; a sentence's opening word in
    `OPENERS` is dropped ("Is Welcome to the Show": "welcome to the show"). Their pieces
    are the names `_entities` reads as before (rules 56 and 58)."""
    out: list[str] = []
    run: list[str] = []
    run_opens = False
    for _, word, _, joined, opens in _tokens(query):
        if run and not joined:
            out += _title(run, run_opens)
            run = []
        if any(c.isupper() for c in word):
            if not run:
                run_opens = opens
            run.append(word)
        elif run and (word.lower() in vocab.JOINERS or word in vocab.TITLE_JOINERS):
            run.append(word)
        elif run:
            out += _title(run, run_opens)
            run = []
    return out + (_title(run, run_opens) if run else [])


class _Token(NamedTuple):
    """A word of a question (`entity_words.TOKEN`) with what the reading needs of it."""

    match: re.Match[str]
    word: str
    gap: str  # the text between the word before and this one
    joined: bool  # whether that gap is only spaces (or nothing)
    opens: bool  # whether the word opens a sentence


def _tokens(query: str) -> Iterator[_Token]:
    """The words of QUERY (`entity_words.TOKEN`), in order."""
    end = 0
    for m in vocab.TOKEN.finditer(query):
        word, gap = m.group(), query[end:m.start()]
        before = gap.rstrip() or (query[end - 1] if end else "")
        end = m.end()
        yield _Token(m, word, gap, not gap or vocab.GAP.fullmatch(gap) is not None,
                     not before or before[-1] in vocab.SENTENCE_END)


def _title(run: list[str], opens: bool) -> list[str]:
    """[RUN's name] when a title joiner is inside it and each piece it joins is a name
    (`run_name`; "USD to EUR" is none), after its joiners at the end and an opener at the
    start, when it OPENS a sentence, are dropped; else []."""
    while run and not any(c.isupper() for c in run[-1]):
        run = run[:-1]
    if opens and len(run) > 1 and run[0].lower() in vocab.OPENERS:
        run = run[1:]
    pieces: list[list[str]] = [[]]
    for w in run:
        if w in vocab.TITLE_JOINERS:
            pieces.append([])
        else:
            pieces[-1].append(w)
    if len(pieces) < 2 or not all(run_name(p) for p in pieces):
        return []  # no title joiner, or a piece that is no name ("USD to EUR")
    name = run_name(run)
    return [name] if name else []


def _defined_acronym(word: str, before: str) -> bool:
    """Whether WORD, an acronym in brackets after the text BEFORE, spells the initials of
    the lower-case words just before it, with or without their stopwords ("cash
    conversion cycle (CCC)", "return on assets (ROA)", "non-small cell lung cancer
    (NSCLC)"): a measure the question defines, no name (rule 47)."""
    if vocab.ACRONYM.fullmatch(word) is None:
        return False
    letters = word.lower()
    ws = re.findall(r"[^\W_]+", before)[-2 * len(letters):]
    for kept in (ws, [w for w in ws if w.lower() not in STOPWORDS]):
        tail = kept[-len(letters):]
        if (len(tail) == len(letters) and all(w.islower() for w in tail)
                and "".join(w[0] for w in tail) == letters):
            return True
    return False


def _coordinated(tokens: list[_Token], at: int) -> bool:
    """Whether the word of TOKENS (`_tokens`) at AT, opening a sentence alone, is a name
    because "and" or "or" joins it to one: the next two words, a space apart each, are the
    conjunction and a word that is a name itself ("Pfizer and Moderna", "Tesla or Ford's";
    not "Overall, Apple and ...", "Revenue and EBITDA"), and it is no opener ("Compare
    and ..."; rule 59); a title before the name is passed over ("Smith and Dr. Jones";
    rule 60)."""
    if at + 2 >= len(tokens) or tokens[at].word.lower() in vocab.OPENERS:
        return False
    conjunction, partner = tokens[at + 1], tokens[at + 2]
    if partner.word in vocab.TITLES and at + 3 < len(tokens) and tokens[at + 3].joined:
        partner = tokens[at + 3]  # "Dr. Jones": the name is the word after the title
    return (conjunction.joined and partner.joined and conjunction.word in ("and", "or")
            and partner.word[:1].isupper() and run_name([partner.word]) is not None)


def _names_alone(word: str) -> bool:
    """Whether WORD, capitalised and opening a sentence alone, is a name: possessive
    ("Pfizer's revenue") or with a capital after its first letter ("AMD", "PepsiCo"), and
    no function word."""
    return (word.lower() not in vocab.OPENERS
            and (vocab.POSSESSIVE.search(word) is not None or any(c.isupper() for c in word[1:])))


__all__ = ["place_pairs", "question_entities"]
