"""A question's entities (`sproutrag.search.entities`; docs/whole-corpus.md, rules 23 and
33-51): the forms names take in questions, and the documents each form names among
look-alikes (`sproutrag.search.mentions.mentioned_documents`)."""

from __future__ import annotations

import pytest

from sproutrag.search.entities import question_entities
from sproutrag.search.mentions import mentioned_documents


@pytest.mark.parametrize(("query", "entities"), [
    ("Under the agreement with Canadian Pacific Railway: Some obligations survive.",
     ["canadian pacific railway"]),  # "Under", "Some": one word opening a sentence
    ("Were Scott Derrickson and Ed Wood of the same nationality?",
     ["scott derrickson", "ed wood"]),  # "and" separates two names (rule 58)
    ("In the agreements with the University of Bristol and with Add-X Biotech: x",
     ["university of bristol", "add x biotech"]),  # joiners inside, stopwords trimmed
    ("What was IBM's revenue in 2019, Procter & Gamble's?", ["ibm", "procter gamble"]),
    ("Did Acme, Inc. report it?", ["acme"]),  # punctuation ends a run; "Inc" alone: none
    ("what does the contract say about payment?", []),
    ("The Hague", ["hague"]),
    ("Is it GE's?", []),  # shorter than 3 characters
    ("In the Richard A. Bearse agreement, may it?", ["richard a bearse"]),  # an initial
    ("Is Jon L. Luther older than J.K. Rowling?", ["jon l luther", "j k rowling"]),
    # "A." ends a sentence, no initial; "U.S." alone is an abbreviation (rule 50)
    ("Was it in the U.S. or in Block A. What then?", ["block"]),
    # rule 34: the forms names take in reports' questions
    ("Pfizer's revenue in 2020?", ["pfizer"]),  # a possessive opening a sentence
    ("AMD reported what? Some said", ["amd"]),  # a capital after the first letter
    ("Among PepsiCo and Coca-Cola, which?", ["pepsico", "coca cola"]),  # "Among" opens
    ("According to Amazon's filing, what?", ["amazon"]),
    ("What is eBay's net revenue?", ["ebay"]),  # a capital anywhere
    ("What is Amcor's FY2021 revenue?", ["amcor s fy2021", "amcor"]),  # rule 36: no "fy2021"
    ("A role on Grey's Anatomy?", ["grey s anatomy", "grey", "anatomy"]),  # as texts write it
    ("Was Mrs. Smith seen by Dr. Jane Doe?", ["smith", "jane doe"]),  # titles dropped
    ("Who lives in St. Louis?", ["st louis"]),  # "St." is no title
    ("In Smith v. Jones, what?", ["smith v jones", "smith", "jones"]),  # a case's sides
    ("What was the EBITDA of Netflix?", ["ebitda of netflix", "netflix"]),  # an acronym's "of"
    ("The EPS for Bank of America?", ["eps for bank of america", "bank of america"]),
    ("How much did AT&T spend?", ["at t"]),  # "at" is a piece of a word, not a stopword
    ("In the University of Bristol's case?", ["university of bristol"]),  # no acronym
    # rule 36: a period or a form is no name
    ("What was the FY2018 capital expenditure in Q4 2019?", []),
    ("Is AMD's quick ratio healthy for Q2 of FY22?", ["amd"]),  # joiners between forms
    ("Did COVID-19 hurt Pfizer's FY2021 revenue?", ["pfizer s fy2021", "pfizer"]),
    ("According to Amazon's 10-K, what?", ["amazon s 10 k", "amazon"]),
    # rule 39: a company's legal form, and a filing's "of"
    ("How many employees did General Electric Company have?",
     ["general electric company", "general electric"]),
    ("What was Apple Inc.'s revenue, and Nestlé S.A.'s?", ["apple inc", "apple", "nestlé s a",
                                                          "nestlé"]),
    ("Is Wells Fargo & Company solvent?", ["wells fargo company", "wells fargo"]),
    ("What does the 10-K of Procter & Gamble say?", ["10 k of procter gamble",
                                                     "procter gamble"]),
    ("In the Form 10-K of Abbott Laboratories, what?",
     ["form 10 k of abbott laboratories", "abbott laboratories"]),
    ("What did the Company of Merchants and the Company say?", ["company of merchants"]),
    ("In the Form of Government, what?", ["form of government"]),  # no filing before "of"
    # rule 40: the forms of benchmark-style report and contract questions
    ("Consider the Software License Agreement of Cerence Inc.; is there a cap?",
     ["software license agreement of cerence inc", "software license agreement of cerence",
      "cerence inc", "cerence"]),
    ("Compare Pfizer and Merck.", ["pfizer", "merck"]),  # an instruction's verb opens
    ("What is the quick ratio for Boeing for Q2 of FY2022?", ["boeing for q2 of fy2022",
                                                              "boeing"]),
    ("What were the sales of Bank of America for FY2020?", ["bank of america for fy2020",
                                                           "bank of america"]),
    ("What does the Statement of Cash Flows say?", ["statement of cash flows", "cash flows"]),
    ("Did the Department of Justice act?", ["department of justice"]),  # no document's "of"
    # rule 41: a currency, a measure or a role is no name
    ("What is the capital expenditure (in USD millions) for 3M?", ["3m"]),  # rule 46
    ("Was the CEO of Acme paid in EUR? Its EBITDA, ROIC and R&D?", ["ceo of acme", "acme"]),
    ("Did the MRI at Mayo Clinic show it?", ["mayo clinic"]),
    # rule 42: a role before a name
    ("What did Plaintiff John Doe allege against Defendant Acme Corp?",
     ["plaintiff john doe", "john doe", "defendant acme corp", "acme corp", "defendant acme",
      "acme"]),
    ("What did Justice Ginsburg write?", ["justice ginsburg", "ginsburg"]),
    ("Did the Judge rule?", ["judge"]),  # a role alone stays what it was
    # rule 43: a code is a name, a period is none
    ("What was the response rate in KEYNOTE-189?", ["keynote 189"]),
    ("Was BNT162b2 or mRNA-1273 safer in NCT04368728?", ["bnt162b2", "mrna 1273",
                                                          "nct04368728"]),
    ("Did the A320neo sell in Q2-2020, 1Q19, H1 or FY22?", ["a320neo"]),
    ("Who flew the F-16 in the 1990s?", ["f 16"]),
    ("What did the 20-F, the S-1 and the 10-K405 say on 2019-12-31?", []),
    ("What did the 10-Ks say on 31-Dec-2019, in Sept-2020 and in FY2019-20?", []),
    ("Did Blink-182's album chart?", ["blink 182"]),  # a code with a possessive
    ("Did COVID-19 or SARS-CoV-2 raise HbA1c or CO2?", []),  # codes every report writes
    # rule 44: a document's part, a stage or a class with its number is no name
    ("What does Section 2.1 of the Merger Agreement require?", ["merger agreement"]),
    ("Did Item 7A or Note 12 value Class A shares, Tier 1 capital or Level 3 assets?", []),
    ("In the Phase 3 trial of Keytruda, how many Grade 3 events in Type 2 diabetes?",
     ["keytruda"]),
    ("What did Part II and Appendix C show?", []),
    ("What does Schedule B of the Supply Agreement say?", ["schedule b of the supply agreement"]),
    ("Where is Table Mountain?", ["table mountain"]),  # a part's word before a name
    # rule 45: a party's role or a contract's defined term alone is no name
    ("In the Acme agreement, may the Receiving Party share Confidential Information?",
     ["acme"]),
    ("Did Parent pay Target? Did the Licensee, the Plaintiff or the Patient?", []),
    ("Under the Agreement, what is the Effective Date and the Territory?", []),
    ("What did Plaintiff John Doe claim?", ["plaintiff john doe", "john doe"]),  # a name
    # rule 46: a short code, a ratio's slash, an acronym's "for"
    ("Is 3M a capital-intensive business? What of 3M's debt?", ["3m"]),
    ("What is the year end FY2018 net PPNE for 3M?", ["ppne for 3m", "3m"]),
    ("Did GE, $3M, 500m, 3.5B, 10K, 5G or 3D matter?", []),  # amounts, forms, terms
    ("What is the P/E of Apple? And the EV/EBITDA of Merck?", ["p e of apple", "apple",
                                                               "ev ebitda of merck", "merck"]),
    ("Did the FDA approve Keytruda for NSCLC?", ["fda", "keytruda for nsclc", "keytruda",
                                                 "nsclc"]),
    ("Which region had the Highest EBITDAR Contribution for MGM?",
     ["highest ebitdar contribution for mgm", "highest ebitdar contribution", "mgm"]),
    ("What did the Bank for International Settlements say?",
     ["bank for international settlements"]),  # no acronym beside "for": one name
    # rule 47: a name's number, a month, a defined acronym, a roman numeral
    ("In the CheckMate 227 trial, how did Windows 10 and Boeing's 737 do?",
     ["checkmate 227", "checkmate", "windows 10", "windows", "boeing"]),
    ("What did Q4 2022, FY 2021 and Section 4 of the Supply Agreement say?",
     ["supply agreement"]),
    ("Did COVID 19 slow Boeing 737 deliveries?", ["boeing 737", "boeing"]),
    ("What does the Agreement dated March 3, 2020 with Acme say? And in Sept. 2019?",
     ["acme"]),
    ("Did June Carter sing in May?", ["june carter"]),  # a month beside a name
    ("What was the cash conversion cycle (CCC) and return on assets (ROA) for Nike?",
     ["nike"]),
    ("How did non-small cell lung cancer (NSCLC) respond to Amazon Web Services (AWS)?",
     ["amazon web services", "aws"]),  # initials of capitalised words: the name's
    ("What did the phase III trial show for Henry III and the XYZ Fund (XYZ)?",
     ["henry iii", "xyz fund", "xyz"]),
    # rule 48: a filing's name or an officer's title alone is no name
    ("Which auditor signed Tesla, Inc.'s 2022 Form 10-K and its Form S-1?", ["tesla"]),
    ("What did the Chairman, the Board of Directors and the General Counsel say?", []),
    ("What did President Lincoln sign?", ["president lincoln", "lincoln"]),
    ("What does the Form of Proxy say?", ["form of proxy"]),  # no filing's form
    # rule 49: a document's title after its name
    ("What is the term of the Acme Master Services Agreement?",
     ["acme master services agreement", "acme"]),
    ("Does the Globex NDA or the Acme Corp NDA permit reverse engineering?",
     ["globex nda", "globex", "acme corp nda", "acme corp", "acme"]),
    ("What did the Merck Annual Report 2022 and the Apple 10-K say?",
     ["merck annual report 2022", "merck annual report", "merck", "apple 10 k", "apple"]),
    ("What does the Spotify Terms of Use say?", ["spotify terms of use", "spotify"]),
    ("Under the Birch First Global Investments Marketing Affiliate Agreement, who pays?",
     ["birch first global investments marketing affiliate agreement",
      "birch first global investments"]),
    ("What do the First Amendment and the Global Services Agreement say?",
     ["first amendment", "global services agreement"]),  # a title alone: no name left
    ("What did Pfizer's Annual Report say?", ["pfizer s annual report", "pfizer",
                                              "annual report"]),
    # rule 50: a case's citation, dotted initials, a name spelt like a measure
    ("What did Smith v. Jones, 123 F.3d 456 (9th Cir. 1997) hold?",
     ["smith v jones", "smith", "jones"]),
    ("Under 42 U.S.C. § 1983 and Rule 10b-5, what did Roe v. Wade, 410 U.S. 113 hold?",
     ["roe v wade", "roe", "wade"]),
    ("Did Acme v. Beta, 55 F. Supp. 2d 100 (S.D.N.Y. 1999) cite the S. Ct.?",
     ["acme v beta", "acme", "beta"]),
    ("What did the U.K. unit of U.S. Steel report as ROE and EPS?", ["u s steel"]),
    # rule 55: capitalised words after a name's number continue the name
    ("How many Boeing 737 MAX jets, iPhone 14 Pro phones and Windows 11 Pro seats?",
     ["boeing 737 max", "boeing 737", "boeing", "iphone 14 pro", "iphone 14", "iphone",
      "windows 11 pro", "windows 11", "windows"]),
    ("What did the Tesla 2022 Sustainability Report and Q4 2022 Revenue show?",
     ["tesla 2022 sustainability report", "tesla 2022", "tesla", "revenue"]),
    # rule 51: a patient's age
    ("What dosage was given to the 62-year-old patient?", ["62 year old", "62 years old"]),
    ("A 7 years old boy in the Smith report: was he 0 years old then?",
     ["smith", "7 year old", "7 years old"]),
])
def test_the_entities_of_a_question_are_its_runs_of_capitalised_words(query, entities):
    assert question_entities(query) == entities


def test_a_name_with_initials_is_found_as_its_document_writes_it():
    """The question's entity and the document's word text normalise initials alike, so
    "the Richard A. Bearse agreement" names the agreement "made with Richard A. Bearse"
    and not one made with another Richard (rule 33)."""
    from sproutrag.names import words

    texts = {"bearse": words("This Agreement is made with Richard A. Bearse."),
             "roe": words("This Agreement is made with Richard Roe.")}
    entities = question_entities("In the Richard A. Bearse agreement, may it?")
    assert mentioned_documents(entities, texts) == ["bearse"]


def test_the_names_of_reports_questions_name_their_documents():
    """Rule 34: a company opening the question as a possessive, a name after "Among", a
    possessive inside a title and a case's name find the document that writes them; with
    stop 50's entities none of these questions named its document alone."""
    from sproutrag.names import words

    texts = {d: words(t) for d, t in {
        "pfizer": "Pfizer Inc. annual report. Revenue grew in 2020.",
        "merck": "Merck & Co. annual report. Revenue grew in 2020 as in FY2018.",
        "grey": "Grey's Anatomy is a medical drama. Ellen Pompeo stars.",
        "house": "House is a medical drama. Hugh Laurie stars.",
        "case": "In Smith v. Jones the court held that damages were owed.",
        "other": "In Smith v. Board the court held otherwise."}.items()}
    for query, doc in (("Pfizer's revenue in 2020 grew by how much?", "pfizer"),
                       ("Among Pfizer's products, which grew?", "pfizer"),
                       ("Who stars in Grey's Anatomy?", "grey"),
                       ("In Smith v. Jones, what did the court hold?", "case"),
                       # rule 36: Merck's report alone writes "FY2018", but it is no name
                       ("What was Pfizer's FY2018 revenue?", "pfizer"),
                       # rule 39: the report writes "Pfizer Inc." and Merck's "Merck & Co."
                       ("What did the 10-K of Merck & Co., Inc. say?", "merck"),
                       ("What was the revenue of Pfizer Incorporated?", "pfizer"),
                       # rule 40: an instruction, a document's "of", a trailing period
                       ("Consider the Annual Report of Pfizer Inc.; what grew?", "pfizer"),
                       ("What was the quick ratio for Merck for Q2 of FY2018?", "merck"),
                       # rule 42: the judgment writes "Jones", not "Plaintiff Jones"
                       ("What did Plaintiff Jones claim in damages?", "case")):
        assert mentioned_documents(question_entities(query), texts) == [doc], query


def test_a_currency_in_the_question_names_no_report_that_writes_it():
    """Rule 41: a FinanceBench-style question writes its unit in capitals; the one report
    that writes "USD" is not the question's (it named that report before)."""
    from sproutrag.names import words

    texts = {"mmm": words("3M Company annual report. Capital expenditures were $1.6 billion."),
             "bayer": words("Bayer AG annual report. Figures in USD millions."),
             "pfizer": words("Pfizer Inc. annual report. Capital expenditures rose.")}
    query = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"
    assert question_entities(query) == ["3m"]  # rule 46: 3M is a name, not an amount
    assert mentioned_documents(question_entities(query), texts) == ["mmm"]
    assert mentioned_documents(["usd"], texts) == ["bayer"]  # what "usd" named


def test_a_filing_s_name_or_an_officer_s_title_names_no_report_that_writes_it():
    """Rule 48: the one report that writes "Form 10-K" or "Chairman" is not the question's
    (both named it beside the company's own before)."""
    from sproutrag.names import words

    texts = {"tesla": words("Tesla, Inc. annual report. Our auditor is PwC."),
             "ford": words("Ford Motor Company. Annual report on Form 10-K. The Chairman "
                           "writes to shareholders.")}
    for query in ("Which auditor signed Tesla's 2022 Form 10-K?",
                  "What did the Chairman say about Tesla?"):
        assert mentioned_documents(question_entities(query), texts) == ["tesla"], query
    assert mentioned_documents(["form 10 k", "chairman"], texts) == ["ford"]


def test_a_case_s_citation_names_no_opinion_that_writes_it():
    """Rule 50: the one opinion that writes "F.3d" and "U.S.C." is not the question's
    (both named it beside the case's own before); "Roe" names the case, no measure."""
    from sproutrag.names import words

    texts = {"roe": words("Roe v. Wade. The Court held that the statute was void."),
             "smith": words("Smith v. Jones, 123 F.3d 456. Under 42 U.S.C. 1983 it held."),
             "doe": words("Doe v. Bolton. The Court held the same that day.")}
    for query in ("What did Roe v. Wade hold, as cited in 123 F.3d 456?",
                  "Under 42 U.S.C. § 1983, what did Roe hold?"):
        assert mentioned_documents(question_entities(query), texts) == ["roe"], query
    assert mentioned_documents(["f 3d", "u s c"], texts) == ["smith"]  # what they named


def test_a_trial_s_code_names_the_report_of_that_trial():
    """Rule 43: a clinical report is named by its trial's or its drug's code, which holds a
    digit; before, every word that held one was taken for a period and named nothing. A
    period the other report alone writes still names none."""
    from sproutrag.names import words

    texts = {"keynote": words("KEYNOTE-189 enrolled 616 patients in FY2018 on pembrolizumab."),
             "checkmate": words("CheckMate 227 enrolled 1,739 patients on nivolumab in Q4."),
             "covid": words("In COVID-19 the BNT162b2 vaccine was 95% effective.")}
    for query, docs in (("How many patients did KEYNOTE-189 enroll?", ["keynote"]),
                        ("How effective was BNT162b2 in COVID-19?", ["covid"]),
                        ("How many patients were enrolled in Q4 of FY2018?", [])):
        assert mentioned_documents(question_entities(query), texts) == docs, query


def test_a_part_of_a_document_names_no_report_that_writes_it():
    """Rule 44: "Section 2.1" gave the entity "section", which named the one report that
    writes "Section"; the question is about the agreements, which both write
    "Agreement", so none is named now."""
    from sproutrag.names import words

    texts = {"nda": words("This Agreement keeps Confidential Information secret."),
             "msa": words("This Agreement sets the services and the fees."),
             "report": words("Section 2 of this annual report covers revenue.")}
    query = "What does Section 2.1 of the Agreement require?"
    assert mentioned_documents(question_entities(query), texts) == []
    assert mentioned_documents(["section"], texts) == ["report"]  # what "section" named


def test_a_role_the_other_agreements_write_otherwise_names_none():
    """Rule 45: the one agreement that writes "Receiving Party" where the others write
    "Recipient" was named by a question about another agreement; now only the agreement
    the question names is."""
    from sproutrag.names import words

    texts = {"acme": words("Agreement with Acme Ltd. The Recipient keeps it secret."),
             "beta": words("Agreement with Beta GmbH. The Receiving Party keeps it secret."),
             "gamma": words("Agreement with Gamma SA. The Recipient keeps it secret.")}
    query = "In the Acme agreement, may the Receiving Party share it?"
    assert mentioned_documents(question_entities(query), texts) == ["acme"]
    assert mentioned_documents(["receiving party"], texts) == ["beta"]  # what it named


@pytest.mark.parametrize(("query", "entities"), [
    ("Who performed in both Welcome to the Show and the band f(x)?",
     ["welcome", "show", "welcome to the show"]),
    ('"Wonderland by Night" is a song on which album?',
     ["wonderland", "night", "wonderland by night"]),
    ("Are Frozen and Escape from the Dark both animated?",
     ["frozen", "escape", "dark", "escape from the dark"]),
    # rule 58: "and" and "or" join two names, no title
    ("Are Medici and Senet both board games?", ["medici", "senet"]),
    ("Which grew more in 2022, Apple and Microsoft or Alphabet?",
     ["apple", "microsoft", "alphabet"]),
    ("What did the ROE and EPS of Acme show?", ["eps of acme", "acme"]),
    ("What moved USD to EUR rates?", []),  # a piece that is no name: no title
    ("Is Welcome to the Show a sitcom?", ["welcome", "show", "welcome to the show"]),
])
def test_a_title_s_lower_case_words_join_one_name(query, entities):
    """Rule 56: a title's lower-case words ("to", "by", "from") join its capitalised words
    into one name, after the pieces today's reading gives, when each piece is a name;
    rule 58: "and" and "or" join none."""
    assert question_entities(query) == entities


@pytest.mark.parametrize(("query", "entities"), [
    ("Pfizer and Moderna: which spent more on R&D?", ["pfizer", "moderna"]),
    ("Tesla or Ford, which sold more cars in 2022?", ["tesla", "ford"]),
    ("Pfizer and Moderna's vaccines: which sold more?", ["pfizer", "moderna"]),
    ("Was it filed? Pfizer and Moderna both said so.", ["pfizer", "moderna"]),
    # no name beside it by "and"/"or", a space apart: the opening word stays out
    ("Overall, Apple and Microsoft grew?", ["apple", "microsoft"]),
    ("Revenue and EBITDA: how did they move?", []),  # "EBITDA" is no name
    ("Tesla reported what revenue?", []),
    ("Tesla and the Ford company: which grew?", ["ford"]),
    ("Compare and contrast Apple and Google.", ["apple", "google"]),  # an opener
    ("Under and over which limits?", []),
    # rule 60: a title before the name beside it is passed over
    ("Smith and Dr. Jones: who treated the patient?", ["smith", "jones"]),
    ("Pfizer and Dr. Reddy's: which sold more?", ["pfizer", "reddy"]),
    ("Smith and Dr. met where?", []),  # a title with no name after it
])
def test_a_word_opening_a_question_is_a_name_beside_a_name(query, entities):
    """Rule 59: a single capitalised word that opens a sentence is a name when "and" or
    "or" joins it to a name; without one it stays no entity ("Tesla reported", "Revenue
    and EBITDA"). Rule 60: "Smith and Dr. Jones" too (the title passed over)."""
    assert question_entities(query) == entities


def test_a_two_company_question_opening_with_a_name_names_both_reports():
    """Rule 59: "Pfizer and Moderna: ..." named Moderna's report alone, which then took
    the k units; now both reports are named, and neither look-alike is."""
    from sproutrag.names import words

    texts = {"pfizer": words("Pfizer Inc. annual report. Pfizer spent 11 billion on R&D."),
             "moderna": words("Moderna, Inc. annual report. Moderna spent 3 billion on R&D."),
             "merck": words("Merck & Co. annual report. Merck spent 13 billion on R&D.")}
    query = "Pfizer and Moderna: which spent more on R&D in 2022?"
    assert mentioned_documents(question_entities(query), texts) == ["pfizer", "moderna"]
    assert mentioned_documents(["moderna"], texts) == ["moderna"]  # before: Moderna's alone


def test_a_title_names_its_document_among_look_alikes_that_write_its_pieces():
    """Rule 56: "Welcome to the Show" gave "welcome" and "show", which look-alike titles
    write too, so no document was named; the whole title names its own."""
    from sproutrag.names import words

    texts = {"show": words("Welcome to the Show\nWelcome to the Show was a sitcom."),
             "loserville": words("Welcome to Loserville\nThe album became a show."),
             "nightmare": words("Welcome to My Nightmare\nA film of the show.")}
    query = "Who performed in both Welcome to the Show and the band f(x)?"
    assert mentioned_documents(question_entities(query), texts) == ["show"]
    assert mentioned_documents(["welcome", "show"], texts) == []  # the pieces: none


@pytest.mark.parametrize(("query", "entities"), [
    ("What did the Tulsa-based maker of welding robots report?", ["tulsa"]),
    ("How much did the Eau Claire, Wisconsin-based bank pay?", ["eau claire", "wisconsin"]),
    ("What did the Des Moines-based insurer earn?", ["des moines"]),
    # the place ends its run: the capitalised words after it are a name of their own
    ("the Toronto-sponsored TRPA1 antagonist trial", ["toronto", "trpa1"]),
    ("What did the Boston-based Acme Holdings earn?", ["boston", "acme holdings"]),
    ("Is the Oslo-headquartered sponsor Norwegian?", ["oslo", "norwegian"]),
    # other hyphenated words are read as before
    ("What was the C-reactive protein level?", ["c reactive"]),
    ("What did the Anti-PACAP antibody do?", ["anti pacap"]),
])
def test_a_place_before_based_is_a_name_and_the_suffix_is_not(query, entities):
    """Rule 85: "the Tulsa-based maker" names Tulsa, which the report that is based there
    writes; "tulsa based", as it was read before, no document writes."""
    assert question_entities(query) == entities


def test_a_described_report_is_named_by_its_place():
    """Rule 85 with `mentioned_documents`: the report based in Tulsa is the only one that
    writes "Tulsa", so the question that describes it names it."""
    from sproutrag.names import words

    texts = {"kestrel": words("Kestrel Robotics annual report. The Company is based in "
                              "Tulsa, Oklahoma. Backlog was 41 million."),
             "veldmark": words("Veldmark Machines annual report. The Company is based in "
                               "Dayton, Ohio. Backlog was 52 million.")}
    query = "What did the Tulsa-based maker of welding robots report as its backlog?"
    assert mentioned_documents(question_entities(query), texts) == ["kestrel"]
