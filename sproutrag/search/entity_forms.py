"""A run of a question's capitalised words as names: its name, its pieces, its shorter forms.

`sproutrag.search.entities` reads a question's runs of capitalised words; this module
tells what names each run gives. `run_name` writes a run as `words` writes text
(lower-cased, one space between words), or None where it is no name (a period or a
filing's form, a term, a role, a legal form alone, a part with its number); `run_parts`
splits a run that joins names (a case's two sides, a possessive's, what follows a
filing's "of"); `shorter_forms` adds the run without a role at its start, a document's
title, a period or a legal form at its end. The rules are those the module docstring of
`sproutrag.search.entities` lists; the closed word lists are `entity_words`'.

Pure functions over lists of words (no model, no database).
"""

from __future__ import annotations

import re

from sproutrag.search import entity_words as vocab
from sproutrag.stopwords import STOPWORDS


def shorter_forms(run: list[str]) -> list[list[str]]:
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


def run_parts(run: list[str]) -> list[list[str]]:
    """RUN, then its pieces when it joins names: a case's two sides ("Smith v. Jones"),
    the two sides of a possessive ("Pfizer's Comirnaty": "Pfizer's", "Comirnaty") and what
    follows an acronym's or a filing's "of" or "for" ("EBITDA of Netflix": "Netflix"; "Form
    10-K of Abbott": "Abbott"), and the two sides of a "for" before a single acronym
    ("Keytruda for NSCLC": "Keytruda", "NSCLC"; rule 46)."""
    after = _after_filing(run)
    if after:
        return [run] + run_parts(after)
    for i in range(1, len(run) - 1):
        if run[i].lower() == "for" and (_acronym_alone(run[:i]) or _acronym_alone(run[i + 1:])):
            return [run] + run_parts(run[:i]) + run_parts(run[i + 1:])  # "Keytruda for NSCLC"
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
    through its pieces (`run_parts`: "Pfizer's Annual Report" is "Pfizer's" and "Annual
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


def run_name(run: list[str]) -> str | None:
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


__all__ = ["run_name", "run_parts", "shorter_forms"]
