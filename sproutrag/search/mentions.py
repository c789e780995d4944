"""Documents the question names in their text: a company, a party, a case (a mention).

A question about one of many look-alike documents names what it is about ("What does the
agreement with Wollaston School say about ...", "X's revenue in 2019"). The name is
rarely a document's title (the titles of look-alikes are alike: "Non-disclosure
agreement"), but it is written in the document's text and in no other searched one's.
Leaves are scored alone, so the look-alikes' leaves that answer the question's words
compete with the named document's on equal terms; search within the named document does
not have that loss (issue 29; docs/whole-corpus.md, rule 23).

The question's entities are its runs of capitalised words (a capital anywhere: "eBay",
"3M"; with "of", "the", "for", "&", "v." between them; initials such as "A." in "Richard A.
Bearse" join the run, a title opening it is dropped: "Dr. Jane Doe" is "jane doe"), as
`words` writes them ("Grey's Anatomy" is "grey s anatomy"), stopwords trimmed from their
ends; a run that joins two names is also each of them ("Smith v. Jones" also "smith" and
"jones", "Pfizer's Comirnaty" also "pfizer" and "comirnaty"), and a run that opens with an
acronym or a filing and "of" or "for" is also what follows ("EBITDA of Netflix" also
"netflix", "the 10-K of Procter & Gamble" also "procter gamble"), and a run that ends with
a company's legal form is also the run without it ("Apple Inc." also "apple"; a legal
form alone, "Inc", is no entity: rule 39). A document's "of" splits too ("the License
Agreement of Cerence" also "cerence"), and a run joined to a period is also what comes
before it ("Boeing for Q2 of FY2022" also "boeing"; rule 40), and a run that opens
with a role is also the name after it ("Plaintiff John Doe" also "john doe"; rule 42), and a
run with "for" before a single acronym is also its two sides ("Keytruda for NSCLC" also
"keytruda" and "nsclc"; rule 46). A digit and a capital are a code ("3M", not an amount:
"$3M" and "3m" are), a name though two characters; a slash joins a ratio ("P/E of
Apple" also "apple"; rule 46). A number after a run is also part of it ("CheckMate 227"
also "checkmate 227"); a month, an acronym the question defines in brackets after
lower-case words ("cash conversion cycle (CCC)") and a roman numeral alone ("phase III")
are no name (rule 47), nor a filing's name or an officer's title alone ("Form 10-K",
"Chairman": rule 48). A run that ends with a document's title is also the name before it
("the Acme Master Services Agreement" also "acme", "the Apple 10-K" also "apple"; rule
49). Dotted initials alone ("U.S.", "U.S.C."), a court reporter's abbreviation ("F.3d",
"Cir.") and "Rule" with its number are no name, and a measure's code spelt as a name
("Roe", not "ROE") is one (rule 50). A capitalised word that opens a sentence may be an ordinary word: a run opening a sentence
drops its first word when that is a function word or an instruction's verb ("Among
PepsiCo" is "pepsico", "Consider the Annual Report" "annual report"), and a
single such word is no entity ("Under", "Some") unless it is possessive ("Pfizer's") or
has a capital after its first letter ("AMD"). A run whose every word holds a digit (the
joiners aside) is a period or a form, no name ("FY2018", "Q4", "Q2 of FY22", "10-K"),
and so is a currency, a measure or a role ("USD", "EBITDA", "MRI", "CEO": rule 41).
A searched document is mentioned when it is the only searched document whose text
writes one of them (as whole words): an entity two searched documents write ("Receiving
Party", "Agreement") names neither.

Pure functions over strings (no model, no database).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from sproutrag.stopwords import STOPWORDS

#: Lower-case words that may join two capitalised words of one name.
_JOINERS = frozenset({"of", "the", "for", "&", "de", "du", "la", "von", "van", "v.", "vs."})
#: A word; or, before a capitalised word, initials ("Richard A. Bearse", "J.K. Rowling"), a
#: title ("Dr. Smith") or a case's "v." ("Smith v. Jones"): their dots end no sentence.
_TOKEN = re.compile(r"(?:[A-Z]\.)+(?=\s+[A-Z])|\b(?:Mrs|Mr|Ms|Dr|Prof|St|vs|v)\.(?=\s+[A-Z])"
                    r"|[$€£]?\w+(?:['’.&/-]\w+)*|&")
#: The joiners of a case's two sides, and titles a name drops from its start ("St. Louis"
#: keeps its "St.").
_CASE_JOINERS = frozenset({"v.", "vs."})
_TITLES = frozenset({"Mr.", "Mrs.", "Ms.", "Dr.", "Prof."})
#: Words that open a sentence capitalised without being a name: a run opening a sentence
#: drops its first word when it is one of these ("Among PepsiCo", "According to",
#: an instruction's "Consider the ...": rule 40).
_OPENERS = frozenset("""
    a about above according across after against all along although among an and any are
    around as assuming at based because before behind below beneath beside besides between
    beyond both but by can compared considering could despite did do does during each either
    every except excluding following for from given had has have he her his how i if in
    including inside into is it its like may might must near neither no of off on onto or
    our out outside over past per regarding she should since so some than that the their
    these they this those though through throughout to toward towards under unless until
    up upon using via was we were what when where whether which while who whom whose why
    will with within without would
    calculate compare consider describe explain find identify list summarise summarize
""".split())
#: What may separate two words of one run: spaces, or nothing else.
_GAP = re.compile(r"\s+")
#: The shortest entity ("IBM", "Eli"): shorter ones ("GE", "US") name too much by chance,
#: but for a digit and a capital ("3M": rule 46).
MIN_ENTITY_CHARS = 3
#: A word of a digit and a capital ("3M", "F1"), an entity though under the floor.
_SHORT_CODE = re.compile(r"\d[A-Z]|[A-Z]\d")
#: A roman numeral of I, V and X ("III", "XIV"): alone, a phase's or a class's number.
_ROMAN = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})")
_POSSESSIVE = re.compile(r"['’]s$")
#: Dotted initials, the last dot perhaps left out ("U.S.", "U.S.C", "S.D.N.Y.").
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]?")
#: A word of capitals only ("EBITDA", "CEO"), or of capitals joined by a slash ("P/E",
#: "EV/EBITDA": rule 46): a measure or a role, not a name's start.
_ACRONYM = re.compile(r"[A-Z]{2,}|[A-Z]+(?:/[A-Z]+)+")
#: The shapes of a word that is a period or a filing's form, not a code that may name
#: something (rule 43): a number, an amount, a percentage, an ordinal or a decade ("1,200",
#: "$3.5M", "21st", "1990s"; a scale's capital only with a currency sign or a decimal
#: point: "3M" is a code, rule 46); a fiscal year, a quarter or a half ("FY2018", "Q4",
#: "Q2-2020", "1Q19", "H1", "FY2019-20"); a filing ("10-K", "10-Ks", "20-F", "10-K405",
#: "14A", "S-1", a form's letter after a number: "10K", "13D", "5G"); a date or a range
#: ("2019-12-31", "2019-20", "31-Dec-2019", "Dec-2019"). Every shape holds a digit.
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_PERIOD = re.compile(rf"""
      [$€£]\d[\d,.]*(?:%|[kmb]n?)?
    | \d[\d,.]*(?:%|(?-i:[kmb])n?|st|nd|rd|th|s)?
    | \d[\d,]*\.\d+[kmb]n?
    | (?:fy|cy)(?:['’-]?\d{{2,4}}(?:-\d{{2,4}})?)?
    | [qh][1-4](?:['’-]?(?:fy)?\d{{2,4}})?
    | [1-4][qh]['’-]?\d{{2,4}}
    | \d{{1,2}}-[a-z]\d{{0,3}}s? | \d{{1,3}}[abdfgkq] | [sf]-(?:1|3|4|8|11)
    | \d{{1,4}}(?:[-/.]\d{{1,4}})+
    | \d{{1,2}}-{_MONTH}(?:-\d{{1,4}})? | {_MONTH}(?:-\d{{1,4}})?
""", re.IGNORECASE | re.VERBOSE)
#: A filing's form ("10-K", "20-F", "S-1", "10K"), which makes the words before it a
#: title's (rule 49).
_FILING = re.compile(r"\d{1,2}-[a-z]\d{0,3}s?|[sf]-\d{1,2}|\d{1,3}[abdfgkq]", re.IGNORECASE)
#: What ends a sentence: a capitalised word after it (or first) opens the next.
_SENTENCE_END = ".!?:;"
#: A company's legal form at the end of its name, dots left out ("Inc.", "S.A."): a name
#: is also itself without it, as reports write it ("General Electric"; rule 39).
_LEGAL_FORMS = frozenset("""
    inc incorporated corp corporation co company ltd limited llc plc ag sa nv se gmbh lp llp
""".split())
#: Terms every report of a kind may write, no document's name, as `_name` writes them: a
#: currency's code, an accounting standard or measure, a clinical measure or test, a
#: corporate role (rule 41), a code every report of a kind writes (rule 43), an officer's
#: or a board's title (rule 48). An entity that is one of them as a whole is none.
#: Rule 41's one-word codes and measures: none when written in capitals ("ROE"), a name
#: when written as one ("Roe v. Wade": rule 50).
_CAPITALS_TERMS = frozenset("""
    usd eur gbp jpy cny rmb chf cad aud inr krw hkd sgd sek nok dkk brl mxn zar rub
    gaap ifrs ebitda ebit eps cogs roe roa roi roic fcf dpo dso dio capex opex yoy ttm ltm
    cagr npv irr wacc mri ecg ekg eeg bmi icu cbc ceo cfo coo cto
""".split())
_TERMS = _CAPITALS_TERMS | frozenset([
    "sg a", "r d", "pp e", "p l",
    # a court reporter's or a circuit's abbreviation (rule 50)
    "f 2d", "f 3d", "f 4th", "f supp", "s ct", "l ed", "cir",
    "covid", "covid 19", "sars cov 2", "h1n1", "h5n1", "hba1c", "co2", "pm2 5", "pm10",
    "p e", "ev ebitda", "2d", "3d", "4k", "4g", "5g",
    # an officer's or a board's title (rule 48)
    "chairman", "chairwoman", "chairperson", "chair", "president", "vice president",
    "director", "directors", "board", "board of directors", "secretary", "treasurer",
    "general counsel", "auditor", "auditors", "management", "shareholders", "stockholders",
])
#: A document's parts, stages and classes: with only a number, a letter or a roman numeral
#: after it ("Section 2.1", "Schedule B", "Item 7A", "Phase 3", "Class A", "Tier 1") such
#: a word names no document, most of its kind write it (rule 44).
_PARTS = frozenset("""
    section article clause schedule exhibit appendix annex chapter paragraph item note page
    table figure part phase stage step grade type class series tier level rule
""".split())
_PART_NUMBER = re.compile(r"\d+[a-z]?|[a-z]|[ivxlc]+")
#: A party's role and a contract's defined terms, as `_name` writes them: every document
#: of its kind writes them, so alone they name none (rule 45).
_ROLE_TERMS = frozenset("""
    party parties recipient discloser licensee licensor buyer seller purchaser parent target
    borrower lender tenant landlord lessee lessor employee employer contractor consultant
    customer client supplier vendor distributor provider franchisee franchisor guarantor
    trustee issuer investor plaintiff defendant appellant appellee petitioner respondent
    claimant debtor creditor patient agreement information term territory services products
    affiliates representatives
""".split()) | {"receiving party", "disclosing party", "merger sub", "confidential information",
                "effective date", "intellectual property"}
#: Roles written before a party's or a person's name: "Plaintiff John Doe" is also "John
#: Doe" (rule 42).
_ROLES = frozenset("""
    plaintiff defendant appellant appellee petitioner respondent claimant debtor creditor
    judge justice patient senator governor president
""".split())
#: Kinds of documents: "the Software License Agreement of Cerence" is also "Cerence"
#: (rule 40).
_DOCUMENT_KINDS = frozenset("""
    agreement contract license licence lease policy report statement filing plan amendment
    memorandum letter prospectus
""".split())
#: What a document's title after a name is made of (rule 49): kinds of documents (one of
#: them, or a filing's form, makes the words a title) and the words that qualify a kind
#: in titles ("the Acme Master Services Agreement", "the Merck Annual Report", "the Spotify
#: Terms of Use"), lower-cased; ordinals and generic adjectives among them, so that a
#: title alone ("the First Amendment", "the Global Services Agreement") is no name.
_TITLE_KINDS = _DOCUMENT_KINDS | frozenset("""
    nda mou loi msa sow eula sla terms conditions charter bylaws indenture addendum deed
    label trial study
""".split())
_TITLE_WORDS = frozenset("""
    master services service software license licence licensing supply distribution
    distributor franchise employment merger acquisition purchase sale sales stock share
    asset assets credit loan security securities pledge guaranty guarantee annual quarterly
    interim sustainability esg proxy privacy cookie confidentiality non-disclosure
    nondisclosure mutual reseller resale marketing affiliate joint venture development
    collaboration consulting consultancy manufacturing hosting sponsorship endorsement
    outsourcing maintenance support cooperation strategic alliance agency promotion
    co-branding transportation settlement separation operating partnership subscription
    registration rights underwriting investment advisory escrow sublease transition
    commercial research clinical use amended restated final
    first second third fourth fifth new general global standard corporate customer
    international national model basic comprehensive
""".split())


def question_entities(query: str) -> list[str]:
    """The runs of capitalised words of QUERY (joined by `_JOINERS`; not one word opening a
    sentence), lower-cased, their words joined by one space, stopwords trimmed from both
    ends, each once, in order; only those of 3 characters or more, not only stopwords
    and digits. Computed once per question (the first stage, the read and the boosts of
    one search ask for them)."""
    return list(_entities(query))


@functools.lru_cache(maxsize=1024)
def _entities(query: str) -> tuple[str, ...]:
    runs: list[tuple[bool, list[str], list[str]]] = []  # opens, words, a number after them
    current: list[str] = []
    end = 0
    for m in _TOKEN.finditer(query):
        word, gap = m.group(), query[end:m.start()]
        before = gap.rstrip() or (query[end - 1] if end else "")
        end = m.end()
        joined = not gap or _GAP.fullmatch(gap) is not None
        opens = not before or before[-1] in _SENTENCE_END
        if any(c.isupper() for c in word):
            if current and joined:
                current.append(word)
            elif gap.strip() == "(" and _defined_acronym(word, query[:m.start()]):
                current = []  # "cash conversion cycle (CCC)": a measure (rule 47)
            else:
                current = [word]
                runs.append((opens, current, []))
        elif current and joined and word.lower() in _JOINERS:
            current.append(word)
        else:
            if current and joined and word.isdigit() and current[-1].lower() not in _JOINERS:
                runs[-1][2].append(word)  # "CheckMate 227" (rule 47)
            current = []
    out: dict[str, None] = {}
    for opens, run, number in runs:
        while run and run[-1].lower() in _JOINERS:
            run.pop()
        if not run:  # "The" alone
            continue
        if opens and len(run) > 1 and run[0].lower() in _OPENERS:
            run.pop(0)  # "Among PepsiCo": the sentence's opening word
        elif opens and len(run) == 1 and not _names_alone(run[0]):
            continue
        if len(run) > 1 and run[0] in _TITLES:
            run.pop(0)  # "Dr. Jane Doe": a text may write "Jane Doe" or "Dr. Doe"
        if number and _name(run) and not _POSSESSIVE.search(run[-1]):
            numbered = _name(run + number[:1])  # "checkmate 227" before "checkmate"
            if numbered:  # not a term: "COVID 19"
                out.setdefault(numbered)
        for part in _parts(run):
            for form in _shorter_forms(part):
                name = _name(form)
                if name:
                    out.setdefault(name)
    return tuple(out)


def _defined_acronym(word: str, before: str) -> bool:
    """Whether WORD, an acronym in brackets after the text BEFORE, spells the initials of
    the lower-case words just before it, with or without their stopwords ("cash
    conversion cycle (CCC)", "return on assets (ROA)", "non-small cell lung cancer
    (NSCLC)"): a measure the question defines, no name (rule 47)."""
    if _ACRONYM.fullmatch(word) is None:
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
    if len(run) > 1 and run[0].lower() in _ROLES and run[1][:1].isupper():
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
        if w.lower() in _CASE_JOINERS:
            pieces.append(piece)
            piece = []
            continue
        piece.append(w)
        if _POSSESSIVE.search(w):
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
            if w.lower() == "of" and head and head[-1].lower() in _DOCUMENT_KINDS:
                return run[i + 1:]
            return []
    return []


def _acronym_alone(side: list[str]) -> bool:
    """Whether SIDE, one side of a run's "for", is a single acronym ("NSCLC", "MGM")."""
    return len(side) == 1 and _ACRONYM.fullmatch(side[0]) is not None


def _without_period(run: list[str]) -> list[str]:
    """RUN before a joiner that only periods or forms (`_period`) and joiners follow
    ("Boeing for Q2 of FY2022": "Boeing"); else nothing (rule 40)."""
    for j in range(1, len(run)):
        tail = run[j:]
        if (run[j].lower() in _JOINERS and any(_period(w) for w in tail)
                and all(_period(w) or w.lower() in _JOINERS for w in tail)):
            return run[:j]
    return []


def _without_title(run: list[str]) -> list[str]:
    """RUN before the document's title that ends it: from its end, the title's words
    (`_TITLE_KINDS`, `_TITLE_WORDS`), periods and forms ("2022", "10-K", "Form") and
    joiners, when one of them is a kind of document or a filing's form and a word is left
    ("the Acme Master Services Agreement": "Acme"; "the Apple 10-K": "Apple"); else
    nothing (rule 49). A run that joins names by a possessive gets it through its pieces
    (`_parts`: "Pfizer's Annual Report" is "Pfizer's" and "Annual Report")."""
    if any(_POSSESSIVE.search(w) for w in run[:-1]):
        return []
    j, titled = len(run), False
    while j > 0:
        w = _POSSESSIVE.sub("", run[j - 1]).lower()
        if w in _TITLE_KINDS or _FILING.fullmatch(w):
            titled = True
        elif not (w in _TITLE_WORDS or w in _JOINERS or w == "form" or _period(w)):
            break
        j -= 1
    while j > 0 and run[j - 1].lower() in _JOINERS:
        j -= 1
    return run[:j] if titled and j > 0 else []


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _period(word: str) -> bool:
    """Whether WORD (its possessive aside) is a period or a filing's form ("FY2018's",
    "Q4", "10-K"), not a code that may be a name ("KEYNOTE-189", "BNT162b2"; rule 43)."""
    return _PERIOD.fullmatch(_POSSESSIVE.sub("", word)) is not None


def _filing_word(word: str) -> bool:
    """An acronym ("EBITDA") or a form or period that holds a digit ("10-K", "Q4")."""
    return _ACRONYM.fullmatch(word) is not None or _has_digit(word)


def _without_legal_form(run: list[str]) -> list[str]:
    """RUN without its last word when that is a company's legal form ("Inc.", "S.A.";
    `_LEGAL_FORMS`) and something precedes it; else nothing (rule 39)."""
    if len(run) > 1 and _legal_form(run[-1]):
        return run[:-1]
    return []


def _legal_form(word: str) -> bool:
    return word.replace(".", "").lower() in _LEGAL_FORMS


def _name(run: list[str]) -> str | None:
    """RUN's words lower-cased and joined by one space as `words` writes them (a
    possessive's "s" a word of its own, "Grey's Anatomy" -> "grey s anatomy"; dropped from
    the last word: "Pfizer's" -> "pfizer"), stopwords and joiners trimmed from both ends;
    None when shorter than `MIN_ENTITY_CHARS`, only stopwords and digits, every word is
    a period or a form, the joiners aside (rules 36 and 43: "Q2 of FY22", not "KEYNOTE-189"),
    it is a legal form alone ("Inc", "Company": rule 39), a term of `_TERMS` ("USD",
    "EBITDA", "COVID-19": rules 41 and 43), a part with its number ("Section 2.1": rule
    44) or a party's role or a contract's defined term alone ("Receiving Party": rule
    45)."""
    if all(_period(w) for w in run if w.lower() not in _JOINERS):
        return None  # a period or a form ("FY2018", "Q2 of FY22", "10-K", "March"): no name
    if len(run) == 1 and _ROMAN.fullmatch(run[0]):
        return None  # "phase III": a numeral alone (rule 47)
    if len(run) > 1 and run[0].lower() == "form" and all(_period(w) for w in run[1:]):
        return None  # "Form 10-K": every annual report's (rule 48)
    if all(_legal_form(w) or _trimmed(w) for w in run):
        return None  # a legal form alone ("Acme, Inc.": "Inc"), every company's: rule 39
    if all(_INITIALS.fullmatch(w) for w in run):
        return None  # "U.S.", "U.S.C.", "S.D.N.Y.": an abbreviation (rule 50)
    run = run[:-1] + [_POSSESSIVE.sub("", run[-1])]
    while run and _trimmed(run[0]):
        run = run[1:]
    while run and _trimmed(run[-1]):
        run = run[:-1]
    ws = re.findall(r"\w+", " ".join(run).lower())
    name = " ".join(ws)
    short_code = len(run) == 1 and _SHORT_CODE.fullmatch(run[0]) is not None  # "3M"
    spelt_as_name = len(run) == 1 and run[0][:1].isupper() and run[0][1:].islower()
    if ((len(name) >= MIN_ENTITY_CHARS or short_code)
            and (name not in _TERMS or (name in _CAPITALS_TERMS and spelt_as_name))
            and name not in _ROLE_TERMS
            and not _part(ws)
            and not all(w in STOPWORDS or w.isdigit() for w in ws)):
        return name
    return None


def _part(ws: list[str]) -> bool:
    """Whether the words WS are a document's part, a stage or a class with at most its
    number ("section 2 1", "schedule b", "part ii", "phase"; rule 44)."""
    return bool(ws) and ws[0] in _PARTS and all(_PART_NUMBER.fullmatch(w) for w in ws[1:])


def _trimmed(word: str) -> bool:
    """Whether WORD, at an end of a run, is left out of its name: a stopword or a joiner
    as a whole word ("The Hague"), not a piece of one ("AT&T" is "at t")."""
    w = word.lower()
    return w in _JOINERS or w.rstrip(".") in STOPWORDS


def _names_alone(word: str) -> bool:
    """Whether WORD, capitalised and opening a sentence alone, is a name: possessive
    ("Pfizer's revenue") or with a capital after its first letter ("AMD", "PepsiCo"), and
    no function word."""
    return (word.lower() not in _OPENERS
            and (_POSSESSIVE.search(word) is not None or any(c.isupper() for c in word[1:])))


def entity_holders(entities: list[str], word_texts: Mapping[str, str]
                   ) -> dict[str, list[str]]:
    """entity -> the documents of WORD_TEXTS (doc_id -> its text as
    `sproutrag.names.words` gives it) that write it as whole words, for each of ENTITIES
    (`question_entities`: words joined by one space), in their order."""
    return {e: [d for d, text in word_texts.items() if f" {e} " in text] for e in entities}


def mentioned_documents(entities: list[str], word_texts: Mapping[str, str]) -> list[str]:
    """The documents of WORD_TEXTS (doc_id -> its text as `sproutrag.names.words` gives
    it) that are the only one to write one of ENTITIES (`question_entities`: words joined
    by one space) as whole words, in the order of the entities."""
    return named_by(entity_holders(entities, word_texts))


def named_by(holders: Mapping[str, list[str]], dominant: Mapping[str, str] | None = None
             ) -> list[str]:
    """The documents that are an entity's only holder in HOLDERS (`entity_holders`), or
    the DOMINANT writer of an entity two or more hold (`dominant_writers`), each once, in
    the order of the entities."""
    out: dict[str, None] = {}
    for entity, docs in holders.items():
        if len(docs) == 1:
            out.setdefault(docs[0])
        elif dominant and entity in dominant:
            out.setdefault(dominant[entity])
    return list(out)


def dominant_writers(holders: Mapping[str, list[str]], word_texts: Mapping[str, str],
                     ratio: float) -> dict[str, str]:
    """entity -> the document that writes it at least RATIO times as often per word of
    its text as every other holder, for the entities of HOLDERS (`entity_holders` over
    WORD_TEXTS) that two or more documents write: a report is about the company it names
    on every page, not the ones it cites (docs/whole-corpus.md, rule 35)."""
    out = {}
    for entity, docs in holders.items():
        if len(docs) < 2:
            continue
        written = re.compile(rf"(?<= ){re.escape(entity)}(?= )")  # "x x": twice
        rates = sorted(((len(written.findall(word_texts[d]))
                         / max(1, word_texts[d].count(" ") - 1), d) for d in docs),
                       reverse=True)
        if rates[0][0] >= ratio * rates[1][0]:
            out[entity] = rates[0][1]
    return out


__all__ = ["MIN_ENTITY_CHARS", "dominant_writers", "entity_holders", "mentioned_documents",
           "named_by", "question_entities"]
