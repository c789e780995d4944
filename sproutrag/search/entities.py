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
  (rule 51);
- a title's lower-case words ("to", "by": `entity_words.TITLE_JOINERS`) join its
  capitalised words into one more name after the others ("Welcome to the Show" is also
  "welcome to the show"), when each piece it joins is a name (rule 56); "and" and "or"
  join none ("Apple and Microsoft" is two names; rule 58).

Pure functions over strings (no model, no database).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

from sproutrag.search import entity_words as vocab
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
def _entities(query: str) -> tuple[str, ...]:
    # opens, words, a number after them and the capitalised words after that (rule 55)
    runs: list[tuple[bool, list[str], list[str], int]] = []  # ... and its first token
    current: list[str] = []
    numbered = False  # whether the word before was a name's number
    tokens = list(_tokens(query))
    for at, (m, word, gap, joined, opens) in enumerate(tokens):
        after_number, numbered = numbered, False
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
        elif current and joined and word.lower() in vocab.JOINERS:
            current.append(word)
        else:
            if (current and current is runs[-1][1] and joined and word.isdigit()
                    and current[-1].lower() not in vocab.JOINERS):
                runs[-1][2].append(word)  # "CheckMate 227" (rule 47)
                numbered = _name(current) is not None
            current = []
    out: dict[str, None] = {}
    for opens, run, number, at in runs:
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
        if number and _name(run) and not vocab.POSSESSIVE.search(run[-1]):
            for form in (number, number[:1]):  # "boeing 737 max", "boeing 737" (rule 55)
                while len(form) > 1 and form[-1].lower() in vocab.JOINERS:
                    form = form[:-1]
                with_number = _name(run + form)  # "checkmate 227" before "checkmate"
                if with_number:  # not a term: "COVID 19"
                    out.setdefault(with_number)
        for part in _parts(run):
            for form in _shorter_forms(part):
                name = _name(form)
                if name:
                    out.setdefault(name)
    for m in vocab.AGE.finditer(query):  # "the 62-year-old patient" (rule 51): a report may
        for form in ("year", "years"):  # write "62-year-old" or "62 years old"
            out.setdefault(f"{m.group(1)} {form} old")
    for title in _titles(query):  # "Welcome to the Show" after "welcome", "show" (rule 56)
        out.setdefault(title)
    return tuple(out)


def _titles(query: str) -> list[str]:
    """The titles of QUERY: runs of capitalised words that `entity_words.TITLE_JOINERS`
    join as well as `JOINERS` ("Welcome to the Show", "Escape from the Dark"), each as
    one name (`_name`) when such a word is inside it; a sentence's opening word in
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
    (`_name`; "USD to EUR" is none), after its joiners at the end and an opener at the
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
    if len(pieces) < 2 or not all(_name(p) for p in pieces):
        return []  # no title joiner, or a piece that is no name ("USD to EUR")
    name = _name(run)
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


def _shorter_forms(run: list[str]) -> list[list[str]]:
    """RUN, then itself without a role at its start ("Plaintiff John Doe": "John Doe"; rule
    42), then those without a document's title at their end ("Acme Corp NDA": "Acme
    Corp"; rule 49), then those without a period joined to their end ("Boeing for Q2 of FY2022":
    "Boeing"; rule 40), then all of those without a legal form at their end ("Apple Inc.":
    "Apple"; rule 39). Each is a part of RUN, so a text that writes RUN writes it too."""
    forms = [run]
    if len(run) > 1 and run[0].lower() in vocab.ROLES and run[1][:1].isupper():
        forms.append(run[1:])  # "Plaintiff John Doe": "John Doe" (rule 42)
    forms += [f for f in map(_without_title, forms) if f]
    forms += [f for f in map(_without_period, forms) if f]
    return forms + [f for f in map(_without_legal_form, forms) if f]


def _parts(run: list[str]) -> list[list[str]]:
    """RUN, then its pieces when it joins names: a case's two sides ("Smith v. Jones"),
    the two sides of a possessive ("Pfizer's Comirnaty": "Pfizer's", "Comirnaty") and what
    follows an acronym's or a filing's "of" or "for" ("EBITDA of Netflix": "Netflix"; "Form
    10-K of Abbott": "Abbott"), and the two sides of a "for" before a single acronym
    ("Keytruda for NSCLC": "Keytruda", "NSCLC"; rule 46)."""
    after = _after_filing(run)
    if after:
        return [run] + _parts(after)
    for i in range(1, len(run) - 1):
        if run[i].lower() == "for" and (_acronym_alone(run[:i]) or _acronym_alone(run[i + 1:])):
            return [run] + _parts(run[:i]) + _parts(run[i + 1:])  # "Keytruda for NSCLC"
    pieces: list[list[str]] = []
    piece: list[str] = []
    for w in run:
        if w.lower() in vocab.CASE_JOINERS:
            pieces.append(piece)
            piece = []
            continue
        piece.append(w)
        if vocab.POSSESSIVE.search(w):
            pieces.append(piece)
            piece = []
    pieces = [p for p in pieces + [piece] if p]
    return [run] + pieces if len(pieces) > 1 else [run]


def _after_filing(run: list[str]) -> list[str]:
    """What follows the first "of" or "for" of RUN when every word before it is an acronym
    ("EBITDA"), a form that holds a digit ("10-K", "FY2020"), "Form" or a stopword ("the"),
    one of them an acronym or a form (rules 38 and 39), or when that is an "of" after a
    kind of document ("the License Agreement of Cerence": rule 40); else nothing."""
    for i, w in enumerate(run):
        if w.lower() in ("of", "for"):
            head = run[:i]
            if i + 1 == len(run):
                return []
            if (any(_filing_word(x) for x in head)
                    and all(_filing_word(x) or x == "Form" or _trimmed(x) for x in head)):
                return run[i + 1:]
            if w.lower() == "of" and head and head[-1].lower() in vocab.DOCUMENT_KINDS:
                return run[i + 1:]
            return []
    return []


def _acronym_alone(side: list[str]) -> bool:
    """Whether SIDE, one side of a run's "for", is a single acronym ("NSCLC", "MGM")."""
    return len(side) == 1 and vocab.ACRONYM.fullmatch(side[0]) is not None


def _without_period(run: list[str]) -> list[str]:
    """RUN before a joiner that only periods or forms (`_period`) and joiners follow
    ("Boeing for Q2 of FY2022": "Boeing"); else nothing (rule 40)."""
    for j in range(1, len(run)):
        tail = run[j:]
        if (run[j].lower() in vocab.JOINERS and any(_period(w) for w in tail)
                and all(_period(w) or w.lower() in vocab.JOINERS for w in tail)):
            return run[:j]
    return []


def _without_title(run: list[str]) -> list[str]:
    """RUN before the document's title that ends it: from its end, the title's words
    (`entity_words.TITLE_KINDS`, `entity_words.TITLE_WORDS`), periods and forms ("2022",
    "10-K", "Form") and joiners, when one of them is a kind of document or a filing's form
    and a word is left ("the Acme Master Services Agreement": "Acme"; "the Apple 10-K":
    "Apple"); else nothing (rule 49). A run that joins names by a possessive gets it
    through its pieces (`_parts`: "Pfizer's Annual Report" is "Pfizer's" and "Annual
    Report")."""
    if any(vocab.POSSESSIVE.search(w) for w in run[:-1]):
        return []
    j, titled = len(run), False
    while j > 0:
        w = vocab.POSSESSIVE.sub("", run[j - 1]).lower()
        if w in vocab.TITLE_KINDS or vocab.FILING.fullmatch(w):
            titled = True
        elif not (w in vocab.TITLE_WORDS or w in vocab.JOINERS or w == "form" or _period(w)):
            break
        j -= 1
    while j > 0 and run[j - 1].lower() in vocab.JOINERS:
        j -= 1
    return run[:j] if titled and j > 0 else []


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _period(word: str) -> bool:
    """Whether WORD (its possessive aside) is a period or a filing's form ("FY2018's",
    "Q4", "10-K"), not a code that may be a name ("KEYNOTE-189", "BNT162b2"; rule 43)."""
    return vocab.PERIOD.fullmatch(vocab.POSSESSIVE.sub("", word)) is not None


def _filing_word(word: str) -> bool:
    """An acronym ("EBITDA") or a form or period that holds a digit ("10-K", "Q4")."""
    return vocab.ACRONYM.fullmatch(word) is not None or _has_digit(word)


def _without_legal_form(run: list[str]) -> list[str]:
    """RUN without its last word when that is a company's legal form ("Inc.", "S.A.";
    `entity_words.LEGAL_FORMS`) and something precedes it; else nothing (rule 39)."""
    if len(run) > 1 and _legal_form(run[-1]):
        return run[:-1]
    return []


def _legal_form(word: str) -> bool:
    return word.replace(".", "").lower() in vocab.LEGAL_FORMS


def _name(run: list[str]) -> str | None:
    """RUN's words lower-cased and joined by one space as `words` writes them (a
    possessive's "s" a word of its own, "Grey's Anatomy" -> "grey s anatomy"; dropped from
    the last word: "Pfizer's" -> "pfizer"), stopwords and joiners trimmed from both ends;
    None when shorter than `entity_words.MIN_ENTITY_CHARS`, only stopwords and digits, every word is
    a period or a form, the joiners aside (rules 36 and 43: "Q2 of FY22", not "KEYNOTE-189"),
    it is a legal form alone ("Inc", "Company": rule 39), a term of `entity_words.TERMS` ("USD",
    "EBITDA", "COVID-19": rules 41 and 43), a part with its number ("Section 2.1": rule
    44) or a party's role or a contract's defined term alone ("Receiving Party": rule
    45)."""
    if all(_period(w) for w in run if w.lower() not in vocab.JOINERS):
        return None  # a period or a form ("FY2018", "Q2 of FY22", "10-K", "March"): no name
    if len(run) == 1 and vocab.ROMAN.fullmatch(run[0]):
        return None  # "phase III": a numeral alone (rule 47)
    if len(run) > 1 and run[0].lower() == "form" and all(_period(w) for w in run[1:]):
        return None  # "Form 10-K": every annual report's (rule 48)
    if all(_legal_form(w) or _trimmed(w) for w in run):
        return None  # a legal form alone ("Acme, Inc.": "Inc"), every company's: rule 39
    if all(vocab.INITIALS.fullmatch(w) for w in run):
        return None  # "U.S.", "U.S.C.", "S.D.N.Y.": an abbreviation (rule 50)
    run = run[:-1] + [vocab.POSSESSIVE.sub("", run[-1])]
    while run and _trimmed(run[0]):
        run = run[1:]
    while run and _trimmed(run[-1]):
        run = run[:-1]
    ws = re.findall(r"\w+", " ".join(run).lower())
    name = " ".join(ws)
    short_code = len(run) == 1 and vocab.SHORT_CODE.fullmatch(run[0]) is not None  # "3M"
    spelt_as_name = len(run) == 1 and run[0][:1].isupper() and run[0][1:].islower()
    if ((len(name) >= vocab.MIN_ENTITY_CHARS or short_code)
            and (name not in vocab.TERMS or (name in vocab.CAPITALS_TERMS and spelt_as_name))
            and name not in vocab.ROLE_TERMS
            and not _part(ws)
            and not all(w in STOPWORDS or w.isdigit() for w in ws)):
        return name
    return None


def _part(ws: list[str]) -> bool:
    """Whether the words WS are a document's part, a stage or a class with at most its
    number ("section 2 1", "schedule b", "part ii", "phase"; rule 44)."""
    return bool(ws) and ws[0] in vocab.PARTS and all(vocab.PART_NUMBER.fullmatch(w) for w in ws[1:])


def _trimmed(word: str) -> bool:
    """Whether WORD, at an end of a run, is left out of its name: a stopword or a joiner
    as a whole word ("The Hague"), not a piece of one ("AT&T" is "at t")."""
    w = word.lower()
    return w in vocab.JOINERS or w.rstrip(".") in STOPWORDS


def _coordinated(tokens: list[_Token], at: int) -> bool:
    """Whether the word of TOKENS (`_tokens`) at AT, opening a sentence alone, is a name
    because "and" or "or" joins it to one: the next two words, a space apart each, are the
    conjunction and a word that is a name itself ("Pfizer and Moderna", "Tesla or Ford's";
    not "Overall, Apple and ...", "Revenue and EBITDA"), and it is no opener ("Compare
    and ..."; rule 59)."""
    if at + 2 >= len(tokens) or tokens[at].word.lower() in vocab.OPENERS:
        return False
    conjunction, partner = tokens[at + 1], tokens[at + 2]
    return (conjunction.joined and partner.joined and conjunction.word in ("and", "or")
            and partner.word[:1].isupper() and _name([partner.word]) is not None)


def _names_alone(word: str) -> bool:
    """Whether WORD, capitalised and opening a sentence alone, is a name: possessive
    ("Pfizer's revenue") or with a capital after its first letter ("AMD", "PepsiCo"), and
    no function word."""
    return (word.lower() not in vocab.OPENERS
            and (vocab.POSSESSIVE.search(word) is not None or any(c.isupper() for c in word[1:])))


__all__ = ["question_entities"]
