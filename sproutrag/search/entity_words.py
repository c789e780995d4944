"""The closed word lists and shapes that `sproutrag.search.entities` and
`sproutrag.search.entity_forms` read a question's names with: joiners, titles and
openers, periods and filings' forms, terms every report of a kind writes, parts, roles,
and the words of documents' titles. Each list cites the rule of docs/whole-corpus.md
that brought it; all are lower-case as `words` writes them unless said."""

from __future__ import annotations

import re

#: Lower-case words that may join two capitalised words of one name.
JOINERS = frozenset({"of", "the", "for", "&", "de", "du", "la", "von", "van", "v.", "vs."})
#: Lower-case words inside a title ("Welcome to the Show", "Wonderland by Night"): two
#: capitalised runs they join are also one name, the whole title (rule 56). Not "and" or
#: "or": "Apple and Microsoft" is two names, and a third report that writes them together
#: is not the question's (rule 58).
TITLE_JOINERS = frozenset({"a", "an", "at", "by", "from", "in", "into", "on", "to", "with"})
#: A word; or, before a capitalised word, initials ("Richard A. Bearse", "J.K. Rowling"), a
#: title ("Dr. Smith") or a case's "v." ("Smith v. Jones"): their dots end no sentence.
TOKEN = re.compile(r"(?:[A-Z]\.)+(?=\s+[A-Z])|\b(?:Mrs|Mr|Ms|Dr|Prof|St|vs|v)\.(?=\s+[A-Z])"
                   r"|[$€£]?\w+(?:['’.&/-]\w+)*|&")
#: The joiners of a case's two sides, and titles a name drops from its start ("St. Louis"
#: keeps its "St.").
CASE_JOINERS = frozenset({"v.", "vs."})
TITLES = frozenset({"Mr.", "Mrs.", "Ms.", "Dr.", "Prof."})
#: Words that open a sentence capitalised without being a name: a run opening a sentence
#: drops its first word when it is one of these ("Among PepsiCo", "According to",
#: an instruction's "Consider the ...": rule 40).
OPENERS = frozenset("""
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
GAP = re.compile(r"\s+")
#: The shortest entity ("IBM", "Eli"): shorter ones ("GE", "US") name too much by chance,
#: but for a digit and a capital ("3M": rule 46).
MIN_ENTITY_CHARS = 3
#: A word of a digit and a capital ("3M", "F1"), an entity though under the floor.
SHORT_CODE = re.compile(r"\d[A-Z]|[A-Z]\d")
#: A roman numeral of I, V and X ("III", "XIV"): alone, a phase's or a class's number.
ROMAN = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})")
POSSESSIVE = re.compile(r"['’]s$")
#: A capitalised word hyphenated to where its subject is based: "Tulsa-based",
#: "Toronto-sponsored". The place is the name, and its run ends there (rule 85).
ORIGIN = re.compile(r"(\S*[A-Z]\S*)-(?:based|headquartered|sponsored|owned|listed|registered"
                    r"|born)")
#: A person's age ("62-year-old", "62 year old", "62-years-old"): it names a case report
#: (rule 51).
AGE = re.compile(r"\b([1-9]\d{0,2})[\s-]+years?[\s-]+old\b", re.IGNORECASE)
#: Dotted initials, the last dot perhaps left out ("U.S.", "U.S.C", "S.D.N.Y.").
INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]?")
#: A word of capitals only ("EBITDA", "CEO"), or of capitals joined by a slash ("P/E",
#: "EV/EBITDA": rule 46): a measure or a role, not a name's start.
ACRONYM = re.compile(r"[A-Z]{2,}|[A-Z]+(?:/[A-Z]+)+")
#: The shapes of a word that is a period or a filing's form, not a code that may name
#: something (rule 43): a number, an amount, a percentage, an ordinal or a decade ("1,200",
#: "$3.5M", "21st", "1990s"; a scale's capital only with a currency sign or a decimal
#: point: "3M" is a code, rule 46); a fiscal year, a quarter or a half ("FY2018", "Q4",
#: "Q2-2020", "1Q19", "H1", "FY2019-20"); a filing ("10-K", "10-Ks", "20-F", "10-K405",
#: "14A", "S-1", a form's letter after a number: "10K", "13D", "5G"); a date or a range
#: ("2019-12-31", "2019-20", "31-Dec-2019", "Dec-2019"). Every shape holds a digit.
MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
PERIOD = re.compile(rf"""
      [$€£]\d[\d,.]*(?:%|[kmb]n?)?
    | \d[\d,.]*(?:%|(?-i:[kmb])n?|st|nd|rd|th|s)?
    | \d[\d,]*\.\d+[kmb]n?
    | (?:fy|cy)(?:['’-]?\d{{2,4}}(?:-\d{{2,4}})?)?
    | [qh][1-4](?:['’-]?(?:fy)?\d{{2,4}})?
    | [1-4][qh]['’-]?\d{{2,4}}
    | \d{{1,2}}-[a-z]\d{{0,3}}s? | \d{{1,3}}[abdfgkq] | [sf]-(?:1|3|4|8|11)
    | \d{{1,4}}(?:[-/.]\d{{1,4}})+
    | \d{{1,2}}-{MONTH}(?:-\d{{1,4}})? | {MONTH}(?:-\d{{1,4}})?
""", re.IGNORECASE | re.VERBOSE)
#: A filing's form ("10-K", "20-F", "S-1", "10K"), which makes the words before it a
#: title's (rule 49).
FILING = re.compile(r"\d{1,2}-[a-z]\d{0,3}s?|[sf]-\d{1,2}|\d{1,3}[abdfgkq]", re.IGNORECASE)
#: What ends a sentence: a capitalised word after it (or first) opens the next.
SENTENCE_END = ".!?:;"
#: A company's legal form at the end of its name, dots left out ("Inc.", "S.A."): a name
#: is also itself without it, as reports write it ("General Electric"; rule 39).
LEGAL_FORMS = frozenset("""
    inc incorporated corp corporation co company ltd limited llc plc ag sa nv se gmbh lp llp
""".split())
#: Terms every report of a kind may write, no document's name, as `entity_forms.run_name`
#: writes them: a currency's code, an accounting standard or measure, a clinical measure or
#: test, a corporate role (rule 41), a code every report of a kind writes (rule 43), an
#: officer's or a board's title (rule 48). An entity that is one of them as a whole is none.
#: Rule 41's one-word codes and measures: none when written in capitals ("ROE"), a name
#: when written as one ("Roe v. Wade": rule 50).
CAPITALS_TERMS = frozenset("""
    usd eur gbp jpy cny rmb chf cad aud inr krw hkd sgd sek nok dkk brl mxn zar rub
    gaap ifrs ebitda ebit eps cogs roe roa roi roic fcf dpo dso dio capex opex yoy ttm ltm
    cagr npv irr wacc mri ecg ekg eeg bmi icu cbc ceo cfo coo cto
""".split())
TERMS = CAPITALS_TERMS | frozenset([
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
PARTS = frozenset("""
    section article clause schedule exhibit appendix annex chapter paragraph item note page
    table figure part phase stage step grade type class series tier level rule
""".split())
PART_NUMBER = re.compile(r"\d+[a-z]?|[a-z]|[ivxlc]+")
#: A party's role and a contract's defined terms, as `entity_forms.run_name` writes them:
#: every document of its kind writes them, so alone they name none (rule 45).
ROLE_TERMS = frozenset("""
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
ROLES = frozenset("""
    plaintiff defendant appellant appellee petitioner respondent claimant debtor creditor
    judge justice patient senator governor president
""".split())
#: Kinds of documents: "the Software License Agreement of Cerence" is also "Cerence"
#: (rule 40).
DOCUMENT_KINDS = frozenset("""
    agreement contract license licence lease policy report statement filing plan amendment
    memorandum letter prospectus
""".split())
#: What a document's title after a name is made of (rule 49): kinds of documents (one of
#: them, or a filing's form, makes the words a title) and the words that qualify a kind
#: in titles ("the Acme Master Services Agreement", "the Merck Annual Report", "the Spotify
#: Terms of Use"), lower-cased; ordinals and generic adjectives among them, so that a
#: title alone ("the First Amendment", "the Global Services Agreement") is no name.
TITLE_KINDS = DOCUMENT_KINDS | frozenset("""
    nda mou loi msa sow eula sla terms conditions charter bylaws indenture addendum deed
    label trial study
""".split())
TITLE_WORDS = frozenset("""
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
