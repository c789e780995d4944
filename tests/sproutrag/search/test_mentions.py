"""Documents the question names in their text (`sproutrag.search.mentions`; docs/results.md,
rule 23): the question's entities, the documents they name, and a corpus-wide search over
look-alike documents that keeps to the named ones."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.search import mentions
from sproutrag.search.mentions import (
    dominant_writers,
    entity_holders,
    mentioned_documents,
    named_by,
    question_entities,
)


@pytest.mark.parametrize(("query", "entities"), [
    ("Under the agreement with Canadian Pacific Railway: Some obligations survive.",
     ["canadian pacific railway"]),  # "Under", "Some": one word opening a sentence
    ("Were Scott Derrickson and Ed Wood of the same nationality?",
     ["scott derrickson", "ed wood"]),  # "and" separates two names
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


def test_the_dominant_writer_of_a_shared_entity_names_it_per_word_of_its_text():
    """Rule 35: Pfizer's report writes "Pfizer" on every page, BioNTech's cites it once; a
    long report that writes a generic entity as often per word as a short one is not
    named for being long."""
    from sproutrag.names import words

    texts = {d: words(t) for d, t in {
        "pfizer": "Pfizer revenue grew. Pfizer sells vaccines. Pfizer pays dividends. "
                  "Confidential Information is kept.",
        "biontech": "BioNTech works with Pfizer. BioNTech revenue grew. BioNTech sells "
                    "vaccines through partners in many countries of the world today.",
        "long": "Revenue grew. Sales rose. Costs fell. Confidential Information is kept. "
                * 10}.items()}
    holders = entity_holders(["pfizer", "confidential information"], texts)
    assert holders == {"pfizer": ["pfizer", "biontech"],
                       "confidential information": ["pfizer", "long"]}
    assert dominant_writers(holders, texts, 3.0) == {"pfizer": "pfizer"}
    assert dominant_writers(holders, texts, 5.0) == {}  # Pfizer's rate is 4.2x BioNTech's
    assert named_by(holders) == []  # rule 23 alone names neither
    assert named_by(holders, dominant_writers(holders, texts, 3.0)) == ["pfizer"]


def test_a_document_is_mentioned_when_it_alone_writes_an_entity():
    from sproutrag.names import words

    texts = {d: words(t) for d, t in {
        "a": "This Agreement is made with Canadian Pacific Railway Company.",
        "b": "The Receiving Party and the Disclosing Party agree.",
        "c": "The Receiving Party shall return it. Acme-Holdings Ltd"}.items()}
    assert mentioned_documents(["canadian pacific railway"], texts) == ["a"]
    assert mentioned_documents(["receiving party"], texts) == []  # two write it
    assert entity_holders(["receiving party", "pacific rail"], texts) == {
        "receiving party": ["b", "c"], "pacific rail": []}
    # whole words, whatever separates them; each document once, in the entities' order
    assert mentioned_documents(["acme holdings", "canadian pacific railway", "acme holdings"],
                               texts) == ["c", "a"]
    assert mentioned_documents(["pacific rail"], texts) == []
    assert mentioned_documents([], texts) == []


def _pool(tmp_path, rng):
    """Acme's and Zenith's agreements and three look-alikes whose payment sentence matches
    the question's vector better than theirs. "Beta Corp" is written by two look-alikes."""
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    def agreement(doc_id: str, party: str, payment: float):
        lines = [f"Supply agreement with {party}.", "Payment is due in thirty days.",
                 "Either party may end it on notice.", "Notices are given in writing."]
        vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                             leaf_vectors(rng, payment, 1, TOY_DIM),
                             leaf_vectors(rng, payment - 0.1, 2, TOY_DIM)])
        return line_document(doc_id, lines, vectors)

    docs = [agreement("acme", "Acme Holdings", 0.6), agreement("zenith", "Zenith Mills", 0.6)]
    docs += [agreement(f"other{i}", "Beta Corp" if i < 2 else "Gamma Trading", 0.95)
             for i in range(3)]
    return line_pool(tmp_path / "db", docs, rng=rng)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_dominant_writer_of_a_cited_name_is_searched_as_named(tmp_path, mode):
    """Rule 35 (off by default): a look-alike cites "Acme Holdings" once, so the name has
    two holders and names neither; with dominant_ratio the agreement that writes it in
    every line is named and keeps the question's units."""
    from sproutrag.search.retriever import QueryError, Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(7)

    def agreement(doc_id: str, lines: list[str], payment: float):
        vectors = np.vstack([leaf_vectors(rng, 0.3, 1, TOY_DIM),
                             leaf_vectors(rng, payment, 1, TOY_DIM),
                             leaf_vectors(rng, payment - 0.1, 2, TOY_DIM)])
        return line_document(doc_id, lines, vectors)

    docs = [agreement("acme", ["Supply agreement with Acme Holdings.",
                               "Acme Holdings pays in thirty days.",
                               "Acme Holdings may end it on notice.",
                               "Notices to Acme Holdings are in writing."], 0.6)]
    docs += [agreement(f"other{i}", [f"Supply agreement with Party {i}.",
                                     "Payment is due in thirty days.",
                                     "Either party may end it on notice.",
                                     "Copies go to Acme Holdings." if i == 0
                                     else "Notices are given in writing."], 0.95)
             for i in range(3)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "When is payment due under the agreement with Acme Holdings?"
    found = {}
    for ratio in (0.0, 3.0):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=4,
                      dominant_ratio=ratio)
        assert set(r.choose_documents(qvec, None, k=3)) == {"acme", "other0", "other1",
                                                             "other2"}
        found[ratio] = {h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode)}
    assert found[0.0] - {"acme"}  # two holders: nothing named, the look-alikes crowd in
    assert found[3.0] == {"acme"}
    assert Retriever(db, encoder=encoder).dominant_ratio == 0.0  # off by default
    with pytest.raises(QueryError, match="dominant_ratio"):
        Retriever(db, encoder=encoder, dominant_ratio=-1)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_corpus_wide_search_keeps_to_the_documents_the_question_names(tmp_path, mode):
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    one = "When is payment due under the agreement with Acme Holdings?"
    two = "When is payment due to Acme Holdings and to Zenith Mills?"
    found = {}
    for weight in (0.0, 3.0):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5,
                      mention_weight=weight)
        assert set(r.choose_documents(qvec, None, k=3)) >= {"acme", "zenith"}
        for query in (one, two):
            found[weight, query] = [h.doc_id for h in r.search_vector(query, qvec, k=3,
                                                                      mode=mode)]
    # without the mention the look-alikes' payment sentences crowd the named documents out
    assert set(found[0.0, one]) - {"acme"} and set(found[0.0, two]) - {"acme", "zenith"}
    assert set(found[3.0, one]) == {"acme"}
    assert set(found[3.0, two]) == {"acme", "zenith"}  # both named documents keep room
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5)
    assert r.mention_weight == 3.0  # the default (rule 23)
    # an entity two searched documents write names neither; within doc_ids nothing changes
    beta = [h.doc_id for h in r.search_vector("When is payment due to Beta Corp?", qvec,
                                              k=3, mode=mode)]
    assert beta == [h.doc_id for h in Retriever(
        db, encoder=encoder, first_stage="vector", n_docs=5, mention_weight=0.0
    ).search_vector("When is payment due to Beta Corp?", qvec, k=3, mode=mode)]
    within = {w: [h.doc_id for h in Retriever(db, encoder=encoder, mention_weight=w)
                  .search_vector(one, qvec, k=3, mode=mode, doc_ids=["acme", "other0"])]
              for w in (0.0, 3.0)}
    assert within[0.0] == within[3.0] and "other0" in within[0.0]


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_a_contract_named_by_its_title_keeps_the_question_s_units(tmp_path, mode):
    """Rule 49: no agreement writes "Acme Holdings Supply Agreement" (each writes "Supply
    agreement with" its party), so the title named none and the look-alikes' payment
    sentences crowded Acme's out; the name before the title names Acme's agreement."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "When is payment due under the Acme Holdings Supply Agreement?"
    assert question_entities(query) == ["acme holdings supply agreement", "acme holdings"]
    found = {w: {h.doc_id for h in Retriever(db, encoder=encoder, first_stage="vector",
                                             n_docs=5, mention_weight=w)
                 .search_vector(query, qvec, k=3, mode=mode)}
             for w in (0.0, 3.0)}
    assert found[0.0] - {"acme"}
    assert found[3.0] == {"acme"}


def test_the_retriever_and_the_settings_check_mention_weight(tmp_path):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    for bad in (-1, float("nan"), "x"):
        with pytest.raises(QueryError, match="mention_weight"):
            Retriever(db, encoder=encoder, mention_weight=bad)
    assert SearchSettings().retriever_options()["mention_weight"] == 3.0
    with pytest.raises(ValidationError, match="mention_weight"):
        SearchSettings(mention_weight=-1)


def test_the_first_stage_ranks_documents_by_the_question_s_entities_too(tmp_path):
    """Quokka Holdings' agreement is the words' best document but the vectors' last; four
    look-alikes rank well in both, so the two rankings fused leave it out. The entities'
    own full-text ranking (rule 25) is fused as a third and brings it in."""
    from sproutrag.search.first_stage import fuse_rankings
    from sproutrag.search.retriever import QueryError, Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(7)
    docs = [line_document("named", ["Supply terms of Quokka Holdings.", "Goods ship on request."],
                          leaf_vectors(rng, 0.1, 2, TOY_DIM)),
            line_document("near", ["Shipping notes.", "Crates and pallets."],
                          leaf_vectors(rng, 0.9, 2, TOY_DIM))]
    docs += [line_document(f"w{i}", [f"Payment is due under the agreement with Holdings {i}.",
                                     "When payment is due, the agreement says so."],
                           leaf_vectors(rng, 0.5, 2, TOY_DIM)) for i in range(4)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    query = "When is payment due under the agreement with Quokka Holdings?"
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    chosen = {}
    for entities in (False, True):
        r = Retriever(db, encoder=encoder, n_docs=2, entity_ranking=entities)
        assert r.store.ensure_text_index() or r.has_text_index()
        assert r.entity_ranking is entities
        with r.view.one_view():
            first = r.first
            rankings = [first.ranked_by_vector(qvec, 100), first.ranked_by_text(query, 100)]
            if entities:
                rankings.append(first.ranked_by_text("quokka holdings", 100))
            chosen[entities] = r.choose_documents(qvec, None, k=1, query=query)
            assert chosen[entities] == fuse_rankings(rankings)[:2]
            # a question without entities is ranked as before
            plain = "when is payment due under the agreement?"
            assert r.choose_documents(qvec, None, k=1, query=plain) == fuse_rankings(
                [first.ranked_by_vector(qvec, 100), first.ranked_by_text(plain, 100)])[:2]
    assert "named" not in chosen[False] and chosen[True][0] == "named"
    with pytest.raises(QueryError, match="entity_ranking"):
        Retriever(db, encoder=encoder, entity_ranking="yes")


def test_word_texts_are_read_once_and_only_for_questions_with_entities(tmp_path,
                                                                      monkeypatch):
    import sproutrag.search.searched as searched
    from sproutrag.search.retriever import Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5)
    passes = []  # the entities' holders: once per read, for links, anchor and lookup
    monkeypatch.setattr(searched, "entity_holders",
                        lambda e, t: passes.append(sorted(t)) or mentions.entity_holders(e, t))

    def word_texts_cached() -> set[str]:
        return {key[1] for key in r.documents.cache.keys() if key[0] == "words"}

    r.search_vector("when is payment due?", qvec, k=3)  # no entity: no word texts
    assert word_texts_cached() == set()
    assert passes == []
    hits = r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert word_texts_cached() == {"acme", "zenith", "other0", "other1", "other2"}
    assert passes == [["acme", "other0", "other1", "other2", "zenith"]]
    assert hits[0].doc_id == "acme"  # the one pass still names it
    tree = r.documents.tree_ids(["acme"])["acme"]
    assert r.documents.word_text("acme", tree) == (
        " supply agreement with acme holdings payment is due in thirty days either party"
        " may end it on notice notices are given in writing ")
    # with the dominant writers on too, a read builds the word texts once, not twice
    reads, builds = [], []
    read, build = searched.SearchedDocuments._read, searched.SearchedDocuments._word_texts
    monkeypatch.setattr(searched.SearchedDocuments, "_read",
                        lambda self, *a, **kw: reads.append(1) or read(self, *a, **kw))
    monkeypatch.setattr(searched.SearchedDocuments, "_word_texts",
                        lambda self, loaded: builds.append(1) or build(self, loaded))
    r.dominant_ratio = 2.0
    assert r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert reads and len(builds) == len(reads)


def _unchosen_pool(tmp_path, text_index: bool = True, party: str = "Acme Holdings"):
    """Acme's agreement writes its party (PARTY) once, in its preamble, and its vectors are far
    from the question; five look-alikes are near it ("Beta Corp" written by two of them,
    "Delta Mills" by one). A vector first stage of 2 documents leaves Acme out."""
    from sproutrag.search.retriever import Retriever
    from tests.helpers import TOY_DIM, leaf_vectors, line_document, line_pool

    rng = np.random.default_rng(11)

    def agreement(doc_id: str, party: str, near: float):
        lines = [f"Supply agreement with {party}.", "Payment is due in thirty days.",
                 "Either party may end it on notice."]
        return line_document(doc_id, lines, leaf_vectors(rng, near, 3, TOY_DIM))

    docs = [agreement("acme", party, 0.1)]
    docs += [agreement(f"other{i}", ("Beta Corp", "Beta Corp", "Delta Mills", "Gamma Ltd",
                                     "Omega Inc")[i], 0.9 - 0.05 * i) for i in range(5)]
    db, encoder = line_pool(tmp_path / "db", docs, rng=rng)
    if text_index:
        assert Retriever(db, encoder=encoder).store.ensure_text_index()
    return db, encoder


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_the_document_a_question_names_is_fetched_from_the_whole_corpus(tmp_path, mode):
    """Rule 27: an entity of the question that no searched document writes and one
    document of the corpus alone writes brings that document in, and rule 23's mention
    weight puts its units first; an entity two documents write fetches nothing."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    query = "When is payment due under the agreement with Acme Holdings?"
    found = {}
    for fetch in (0, 1):
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2,
                      fetch_mentioned=fetch)
        assert "acme" not in r.choose_documents(qvec, None, k=3)
        found[fetch] = [h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode)]
    assert "acme" not in found[0]
    assert set(found[1]) == {"acme"}
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    assert r.fetch_mentioned == 1  # the default (rule 27)
    with r.view.one_view():
        assert r.first.writing("acme holdings") == ["acme"]
        assert sorted(r.first.writing("beta corp")) == ["other0", "other1"]
        assert r.first.writing("holdings acme") == []  # the words, not the phrase
    beta = "When is payment due under the agreement with Beta Corp?"
    assert [h.doc_id for h in r.search_vector(beta, qvec, k=3, mode=mode)] == [
        h.doc_id for h in Retriever(db, encoder=encoder, first_stage="vector", n_docs=2,
                                    fetch_mentioned=0).search_vector(beta, qvec, k=3,
                                                                     mode=mode)]
    # within doc_ids nothing is fetched; a filter's documents bound the fetch
    assert {h.doc_id for h in r.search_vector(query, qvec, k=3, mode=mode,
                                              doc_ids=["other0", "other1"])} <= {
        "other0", "other1"}
    assert "acme" not in {h.doc_id for h in r.search_vector(
        query, qvec, k=3, mode=mode, allowed={"other0", "other1", "other2"})}


@pytest.mark.parametrize("party, query, entity", [
    # rule 43: a code holding a digit
    ("the KEYNOTE-189 investigators",
     "When is payment due under the agreement with KEYNOTE-189?", "keynote 189"),
    # rule 46: a digit and a capital, a code (not an amount) though two characters
    ("3M Company", "When is payment due under 3M's agreement?", "3m"),
])
def test_a_document_named_by_a_code_is_fetched_through_the_text_index(
        tmp_path, party, query, entity):
    """A code is an entity, the full-text index finds the one document that writes it,
    and the search keeps to that document."""
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path, party=party)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    assert question_entities(query) == [entity]
    with r.view.one_view():
        assert r.first.writing(entity) == ["acme"]
    assert {h.doc_id for h in r.search_vector(query, qvec, k=3)} == {"acme"}


def test_a_name_s_number_names_the_one_report_of_a_series():
    """Rule 47: every CheckMate report writes "CheckMate"; the question's number names the
    one it asks about, and a date's month names no document that alone writes it."""
    from sproutrag.names import words

    texts = {"227": words("CheckMate 227 enrolled 1,739 patients in March."),
             "9la": words("CheckMate 9LA enrolled 719 patients."),
             "816": words("CheckMate 816 enrolled 358 patients.")}
    assert mentioned_documents(question_entities(
        "How many patients did CheckMate 227 enroll?"), texts) == ["227"]
    assert mentioned_documents(question_entities(
        "How many patients did CheckMate trials enroll by March 3, 2020?"), texts) == []
    assert mentioned_documents(["march"], texts) == ["227"]  # what "march" named


def test_an_entity_a_searched_document_writes_is_not_looked_up(tmp_path):
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    chosen = r.choose_documents(qvec, None, k=3)
    assert "other0" in chosen
    asked: list[str] = []
    writing = r.searching.writing
    r.searching.writing = lambda entity: asked.append(entity) or writing(entity)
    r.search_vector("Is payment due to Beta Corp or to Acme Holdings?", qvec, k=3)
    assert asked == ["acme holdings"]  # "beta corp" is written by a searched document
    asked.clear()
    r.search_vector("when is payment due?", qvec, k=3)  # no entity, no lookup
    r.fetch_mentioned = 0
    r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert asked == []


def test_without_a_text_index_nothing_is_fetched_by_mention(tmp_path):
    from sproutrag.search.retriever import Retriever

    db, encoder = _unchosen_pool(tmp_path, text_index=False)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    with r.view.one_view():
        assert r.first.writing("acme holdings") == []
    hits = r.search_vector("When is payment due to Acme Holdings?", qvec, k=3)
    assert hits and "acme" not in {h.doc_id for h in hits}


def test_the_retriever_and_the_settings_check_fetch_mentioned(tmp_path):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    for bad in (-1, 1.5, "x"):
        with pytest.raises(QueryError, match="fetch_mentioned"):
            Retriever(db, encoder=encoder, fetch_mentioned=bad)
    assert SearchSettings().retriever_options()["fetch_mentioned"] == 1
    with pytest.raises(ValidationError, match="fetch_mentioned"):
        SearchSettings(fetch_mentioned=-1)


def test_a_question_looks_up_at_most_max_mention_lookups_entities(tmp_path):
    from sproutrag.search.retriever import Retriever
    from sproutrag.search.searched import MAX_MENTION_LOOKUPS

    db, encoder = _unchosen_pool(tmp_path)
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=2)
    asked: list[str] = []
    r.searching.writing = lambda entity: asked.append(entity) or []
    names = [f"Zeta{i} Works" for i in range(MAX_MENTION_LOOKUPS + 3)]
    r.search_vector("Is payment due to " + ", to ".join(names) + "?", qvec, k=3)
    assert asked == [n.lower() for n in names][:MAX_MENTION_LOOKUPS]


def test_statistics_come_from_the_named_documents_when_two_hold_enough_leaves(tmp_path):
    """Rule 29: a question naming two searched documents that hold anchor_leaves leaves
    together takes its statistics from them (as search within them would); one named
    document, too few leaves, or the setting off: from the first stage's leading ones."""
    from sproutrag.search.node_scores import anchor_documents
    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))  # 4 leaves a document
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    two = "When is payment due to Acme Holdings and to Zenith Mills?"
    one = "When is payment due to Acme Holdings?"

    def anchor(query: str, **options) -> list[str] | None:
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5,
                      **{"mention_alone": False, **options})  # rule 31 would search them alone
        with r.view.one_view():
            docs = r.choose_documents(qvec, None, k=3, query=query)
            found = r.searching.find(query, qvec, docs, r._resolve()[0], True)
        leaves = {d: st.tree.n for d, st in found.stored.items()}
        default = anchor_documents(found.docs, leaves, r.anchor_leaves)
        return found.anchor, default, found.docs

    got, default, docs = anchor(two, anchor_leaves=8)
    assert got == [d for d in docs if d in {"acme", "zenith"}] and set(got) != set(default)
    for query, options in ((two, {"anchor_leaves": 9}), (one, {"anchor_leaves": 4}),
                           (two, {"anchor_leaves": 8, "mention_statistics": False}),
                           (two, {"anchor_leaves": 8, "mention_weight": 0.0})):
        got, default, _ = anchor(query, **options)
        assert got == default, (query, options)
    with pytest.raises(QueryError, match="mention_statistics"):
        Retriever(db, encoder=encoder, mention_statistics="yes")


def test_named_documents_holding_anchor_leaves_gain_the_long_mention_weight():
    """Rule 30: the mentioned documents gain long_mention_weight instead of mention_weight
    when they hold anchor_leaves leaves together (`SearchedDocuments.long`: long
    documents, where the named one is the question's)."""
    from types import SimpleNamespace

    from sproutrag.names import words
    from sproutrag.search.searched import CorpusWideSettings, SearchedDocuments

    texts = {"acme": words("Supply agreement with Acme Holdings."),
             "zen": words("Supply agreement with Zenith Mills."),
             "other": words("Supply agreement with Beta Corp.")}

    def boosts(query: str, leaves: dict[str, int], anchor_leaves: int) -> dict[str, float]:
        settings = CorpusWideSettings(anchor_leaves=anchor_leaves, link_weight=0.0,
                                      mention_weight=3.0, long_mention_weight=6.0)
        searching = SearchedDocuments(None, lambda: None, settings)  # no names to read
        stored = {d: SimpleNamespace(tree=SimpleNamespace(n=n)) for d, n in leaves.items()}
        named = mentioned_documents(question_entities(query), texts)
        links = searching.links(query, {d: ("tree", st) for d, st in stored.items()}, True,
                                named, searching.long(named, stored))
        return links.boosts({d: np.zeros(n) for d, n in leaves.items()})

    one = "When is payment due to Acme Holdings?"
    two = "When is payment due to Acme Holdings and to Zenith Mills?"
    assert boosts(one, {"acme": 40, "zen": 40, "other": 40}, 32) == {"acme": 6.0}
    assert boosts(one, {"acme": 4, "zen": 40, "other": 40}, 32) == {"acme": 3.0}
    assert boosts(two, {"acme": 16, "zen": 16, "other": 4}, 32) == {"acme": 6.0, "zen": 6.0}
    assert boosts(two, {"acme": 16, "zen": 15, "other": 40}, 32) == {"acme": 3.0, "zen": 3.0}
    assert boosts(one, {"acme": 40, "zen": 40}, 0) == {"acme": 3.0}  # 0: never
    assert boosts("When is payment due?", {"acme": 40}, 32) == {}


def test_the_retriever_and_the_settings_check_long_mention_weight(tmp_path):
    from pydantic import ValidationError
    from sproutrag.schemas.settings import SearchSettings

    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))
    for bad in (-1, float("nan"), "x"):
        with pytest.raises(QueryError, match="long_mention_weight"):
            Retriever(db, encoder=encoder, long_mention_weight=bad)
    r = Retriever(db, encoder=encoder)
    assert r.long_mention_weight == 6.0 and r.searching.links(
        "To Acme Holdings?", {}, True, long=True).mention == 6.0
    assert r.searching.links("To Acme Holdings?", {}, True).mention == r.mention_weight == 3.0
    assert SearchSettings().retriever_options()["long_mention_weight"] == 6.0
    with pytest.raises(ValidationError, match="long_mention_weight"):
        SearchSettings(long_mention_weight=-1)


@pytest.mark.parametrize("mode", ["tree", "leaves"])
def test_named_documents_holding_anchor_leaves_are_searched_alone(tmp_path, mode):
    """Rule 31: when the documents a corpus-wide question names hold anchor_leaves leaves
    together (one document too), only they are searched, exactly as a query restricted to
    their doc_ids; too few leaves, or the setting off: every chosen document competes."""
    from sproutrag.search.retriever import QueryError, Retriever

    db, encoder = _pool(tmp_path, np.random.default_rng(5))  # 4 leaves a document
    qvec = np.eye(encoder.dim, dtype=np.float32)[0]
    one = "When is payment due under the agreement with Acme Holdings?"
    two = "When is payment due to Acme Holdings and to Zenith Mills?"

    def hits(query: str, doc_ids=None, **options) -> list[tuple]:
        r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5, **options)
        return [(h.doc_id, h.spans, round(h.score, 6)) for h in
                r.search_vector(query, qvec, k=4, mode=mode, doc_ids=doc_ids)]

    for query, named in ((one, ["acme"]), (two, ["acme", "zenith"])):
        leaves = 4 * len(named)
        alone = hits(query, anchor_leaves=leaves)
        assert alone == hits(query, named, anchor_leaves=leaves)  # as within them
        assert {d for d, _, _ in alone} == set(named)
        # fewer leaves than the floor, or the setting off: the chosen documents compete
        for options in ({"anchor_leaves": leaves + 1},
                        {"anchor_leaves": leaves, "mention_alone": False}):
            assert hits(query, **options) != alone, (query, options)
    r = Retriever(db, encoder=encoder, first_stage="vector", n_docs=5, anchor_leaves=4)
    assert r.mention_alone is True  # the default
    with r.view.one_view():
        assert r.searched_documents(one, qvec, r.choose_documents(qvec, None, k=4)) == ["acme"]
    # an entity two searched documents write names neither: nothing is searched alone
    beta = "When is payment due to Beta Corp?"
    assert hits(beta, anchor_leaves=4) == hits(beta, anchor_leaves=4, mention_alone=False)
    # a context is taken from the named document alone too
    from types import SimpleNamespace

    toy = SimpleNamespace(**vars(encoder), encode_texts=lambda t: np.stack([qvec] * len(t)))
    r = Retriever(db, encoder=toy, first_stage="vector", n_docs=5, anchor_leaves=4)
    ctx = r.context(one, budget_chars=400, mode=mode)
    assert ctx.spans and {s.doc_id for s in ctx.spans} == {"acme"}
    assert ctx.spans == r.context(one, budget_chars=400, mode=mode, doc_ids=["acme"]).spans
    with pytest.raises(QueryError, match="mention_alone"):
        Retriever(db, encoder=encoder, mention_alone="yes")
