"""chunking: exact, trimmed, covering spans; grouping limits; legal and CJK text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sproutrag.ingest.chunking import chunk_text
from sproutrag.ingest.sentences import split_sentences

WORDS = ["Sec.", "U.S.", "Inc.", "No.", "e.g.", "the", "Party", "shall", "1.", "(a)", "AGREEMENT"]
WORDS += ["p.o.", "bn.", "Ph.D.", "Gen.", "resp.", "ii.", "Ph.", "D."]
WORDS += ["你好", "合同", "Ünïcödé", "x" * 40, "...", "!", "?", "。", "！", "？", "“quoted”"]
SEPS = [" ", "  ", "\n", "\n\n", "\t", " \n \n ", "\u3000", "\u00a0", "\r\n", ". ", "; ",
        "\r", "\n- ", "\n* ", "\n\u2022 "]

texts = st.one_of(
    st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(SEPS)), max_size=80).map("".join),
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from("ab .。\n\t?!"), max_size=300),
)


def check_spans(text: str, spans: list[tuple[int, int]]) -> None:
    """Ordered, non-overlapping, trimmed, in bounds, covering every non-whitespace char."""
    prev_end = 0
    for start, end in spans:
        assert 0 <= prev_end <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip() and piece
        assert text[prev_end:start].strip() == ""  # nothing but whitespace is skipped
        prev_end = end
    assert text[prev_end:].strip() == ""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_sentences_are_exact_trimmed_and_covering(text: str) -> None:
    check_spans(text, split_sentences(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    per_chunk=st.integers(1, 4),
    max_chars=st.integers(16, 120),
)
def test_chunks_respect_limits(text: str, per_chunk: int, max_chars: int) -> None:
    chunks = chunk_text(text, sentences_per_chunk=per_chunk, max_chunk_chars=max_chars)
    check_spans(text, chunks)
    sentences = split_sentences(text)
    for start, end in chunks:
        assert end - start <= max_chars
        inside = [(s, e) for s, e in sentences if start <= s and e <= end]
        assert len(inside) <= per_chunk
        # a chunk is whole sentences, or a piece of one sentence
        if not inside:
            assert any(s <= start and end <= e for s, e in sentences)


def test_legal_abbreviations_do_not_split() -> None:
    text = (
        "Pursuant to Sec. 3 of the Agreement, Acme Inc. shall comply with U.S. law, "
        "e.g. the export rules in No. 12, i.e. all of them. The Recipient agrees."
    )
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == [
        text[: text.index(" The Recipient")],
        "The Recipient agrees.",
    ]


#: Sentences of clinical, financial and academic reports that sentence rules 1 cut
#: (after "b.i.d.", "p.o.", "bn.", "p.m.", "resp.", "incl.", "Mo.", "Ph.", "Approx.").
REPORT_SENTENCES = [
    "The patient received approx. 5 mg b.i.d. p.o. for two weeks.",
    "Symptoms resolved.",
    "Revenue was $1.2 bn. in FY2023, up 4% vs. 2022.",
    "The meeting ended at 5 p.m. on Friday.",
    "See Fig. 3 and Table 2 (resp. 4 and 5 patients, incl. two children).",
    "Operations in St. Louis, Mo. were closed, etc.",
    "Its CEO is Jane Doe, Ph.D., who joined in 2015.",
    "Patients were dosed at 0.5 mg/kg i.v. q.d. for 3 wks.",
    "Approx. 30% of subjects had Grade 3 events.",
    "Gen. Smith met Sen. Jones at 5 p.m.",
    "See p. 45 and fig. 3 (vol. 2, ch. 4, eq. 7).",
    "PASI 75 at wk. 16 was reached by 58% (registration no. 4722865).",
    "The talks failed.",
]


def test_report_abbreviations_do_not_split() -> None:
    text = " ".join(REPORT_SENTENCES)
    got = [text[s:e] for s, e in split_sentences(text)]
    assert got == REPORT_SENTENCES
    check_spans(text, split_sentences(text))
    old = [text[s:e] for s, e in split_sentences(text, sentence_rules=1)]
    assert len(old) > len(REPORT_SENTENCES) + 8  # the splitter before 0.11 cut them
    assert "p.o." in old and "for two weeks." in old
    chunks = chunk_text(text, sentences_per_chunk=1, respect_structure=True)
    assert [text[s:e] for s, e in chunks] == REPORT_SENTENCES


def test_an_opening_quote_or_bracket_starts_the_sentence_it_opens() -> None:
    text = "1. “Agreement” means this NDA.\n2. “Authority” means a court."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "1. “Agreement” means this NDA.", "2. “Authority” means a court."]
    assert [text[s:e] for s, e in split_sentences(text, sentence_rules=1)][:2] == [
        "1. “", "Agreement” means this NDA."]  # before 0.11
    text = 'It was published in 1953. "The Outsider" is a novel. He said, "Stop." He left.'
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "It was published in 1953.", '"The Outsider" is a novel.', 'He said, "Stop."',
        "He left."]
    text = "The term ends. (See Section 4.) The Party agrees. He left. “"
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "The term ends.", "(See Section 4.)", "The Party agrees.", "He left. “"]


def test_a_period_still_ends_a_sentence_where_it_should() -> None:
    """Before a capital (after initials too), after a Roman numeral that enumerates, in
    text that does not capitalise its sentences, and with no space before a word."""
    text = "The meeting ended at 5 p.m. The talks failed. Revenue was $2 bn. Costs fell."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "The meeting ended at 5 p.m.", "The talks failed.", "Revenue was $2 bn.", "Costs fell."]
    text = "The Recipient shall not disclose it; ii. after it has become public; or iii. after"
    assert split_sentences(text) == split_sentences(text, sentence_rules=1)
    text = "the dog ran. the cat sat. it was fun. we left."  # no capitals: every sentence
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "the dog ran.", "the cat sat.", "it was fun.", "we left."]
    text = "It ends with such order.\n8 Proprietary Rights. The Party owns them."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "It ends with such order.", "8 Proprietary Rights.", "The Party owns them."]
    text = "The plan was approved.Work starts in May."  # a missing space is no initial
    assert split_sentences(text) == split_sentences(text, sentence_rules=1)
    with pytest.raises(ValueError, match="sentence_rules must be one of"):
        split_sentences(text, sentence_rules=3)


def test_headings_and_blank_lines_are_boundaries() -> None:
    text = (
        "1. DEFINITIONS\nIn this Agreement the following apply:\n(a) one thing;\n(b) another\n\nEnd"
    )
    got = [text[s:e] for s, e in split_sentences(text)]
    assert got == [
        "1. DEFINITIONS",
        "In this Agreement the following apply:",
        "(a) one thing;",
        "(b) another",
        "End",
    ]


def test_wrapped_line_is_not_a_boundary() -> None:
    text = "The Receiving Party shall hold the Confidential Information in strict\nconfidence."
    assert split_sentences(text) == [(0, len(text))]


def test_chinese_document_splits_into_sentences() -> None:
    text = "本协议由双方签订。接收方应当保密！是否适用？适用于所有信息。"
    got = [text[s:e] for s, e in split_sentences(text)]
    assert got == ["本协议由双方签订。", "接收方应当保密！", "是否适用？", "适用于所有信息。"]
    assert chunk_text(text, sentences_per_chunk=2) == [(0, 17), (17, len(text))]


def test_huge_sentence_becomes_window_pieces() -> None:
    text = " ".join(f"word{i % 97}" for i in range(20_000))
    chunks = chunk_text(text, max_chunk_chars=1000)
    check_spans(text, chunks)
    assert len(chunks) > 100
    assert all(e - s <= 1000 for s, e in chunks)
    # cut near the window, at spaces (spaCy sees 100,000-char pieces: one short cut there)
    assert sum(e - s < 900 for s, e in chunks[:-1]) <= len(text) // 100_000
    assert all(text[s:e].split()[0].startswith("word") for s, e in chunks)


def test_no_whitespace_is_hard_cut() -> None:
    text = "x" * 2500
    assert chunk_text(text, max_chunk_chars=1000) == [(0, 1000), (1000, 2000), (2000, 2500)]


def test_million_characters_keep_exact_offsets() -> None:
    unit = "The Party shall pay. 合同有效。\n\nSec. 4 applies.\n"
    text = unit * (1_000_000 // len(unit) + 1)
    spans = split_sentences(text)
    assert len(spans) == 3 * (len(text) // len(unit))
    assert text[spans[-1][0] : spans[-1][1]] == "Sec. 4 applies."
    text = "a " * 600_000  # one sentence of 1.2 M characters, no paragraph breaks
    check_spans(text, split_sentences(text))


def test_grouping_and_char_limit() -> None:
    text = "One. Two. Three. Four. Five."
    assert [text[s:e] for s, e in chunk_text(text)] == ["One. Two.", "Three. Four.", "Five."]
    assert len(chunk_text(text, sentences_per_chunk=1)) == 5
    long_a, long_b = "A" * 15 + " is first.", "B" * 15 + " is second."
    text = f"{long_a} {long_b}"
    assert [text[s:e] for s, e in chunk_text(text, max_chunk_chars=30)] == [long_a, long_b]


def test_one_sentence_and_empty() -> None:
    assert chunk_text("Only one sentence here.") == [(0, 23)]
    assert chunk_text("  \n Only one.\n\n ") == [(4, 13)]
    assert chunk_text("") == []
    assert chunk_text(" \n\t\u3000 ") == []
    assert split_sentences("") == []


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sentences_per_chunk": 0}, "sentences_per_chunk"),
        ({"sentences_per_chunk": -3}, "sentences_per_chunk"),
        ({"max_chunk_chars": 15}, "max_chunk_chars"),
        ({"max_chunk_chars": 0}, "max_chunk_chars"),
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, int], name: str) -> None:
    with pytest.raises(ValueError, match=rf"{name}.*{next(iter(kwargs.values()))}"):
        chunk_text("Some text.", **kwargs)


def test_within_paragraphs_keeps_a_heading_with_the_text_after_it():
    text = ("Title One\nFirst sentence here. Second one. Third one.\n\nTitle Two\n"
            "Another sentence. More.\n\nHEADING\n\nBody starts here. And ends.")
    plain = [text[s:e] for s, e in chunk_text(text)]
    assert "More.\n\nHEADING" in plain  # by default a chunk may span a blank line
    para = [text[s:e] for s, e in chunk_text(text, within_paragraphs=True)]
    assert para == ["Title One\nFirst sentence here.", "Second one. Third one.",
                    "Title Two\nAnother sentence.", "More.", "HEADING\n\nBody starts here.",
                    "And ends."]


def test_section_headings_give_each_chunk_its_title_or_article():
    from sproutrag.ingest.chunking import section_headings

    text = ("Elwyn White\nHe was born in 1899. He wrote books. He lived in Maine.\n\n"
            "ARTICLE 5\n\nThe party keeps secrets. It returns copies. It pays fees.\n\n"
            "A plain paragraph that ends with a period.\nIts second line is here. More.")
    spans = chunk_text(text)
    got = dict(zip((text[s:e] for s, e in spans), section_headings(text, spans)))
    assert got["Elwyn White\nHe was born in 1899."] == ""  # holds its own title
    assert got["He wrote books. He lived in Maine."] == "Elwyn White"
    assert got["ARTICLE 5\n\nThe party keeps secrets."] == ""  # holds the heading
    assert got["It returns copies. It pays fees."] == "ARTICLE 5"  # a heading paragraph
    assert got["More."] == ""  # a first line that is a sentence is no heading
    assert section_headings("", []) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, per_chunk=st.integers(1, 4), max_chars=st.integers(16, 120))
def test_structured_units_are_whole_sentences_within_limits(
    text: str, per_chunk: int, max_chars: int
) -> None:
    """respect_structure: exact covering spans, the character cap, whole sentences, and
    no unit continues past a block end unless all it held before were headings."""
    from sproutrag.ingest.chunking import _structure

    chunks = chunk_text(text, sentences_per_chunk=per_chunk, max_chunk_chars=max_chars,
                        respect_structure=True)
    check_spans(text, chunks)
    sentences = split_sentences(text)
    first, heading = _structure(text, sentences)
    for start, end in chunks:
        assert end - start <= max_chars
        inside = [k for k, (s, e) in enumerate(sentences) if start <= s and e <= end]
        if not inside:
            assert any(s <= start and end <= e for s, e in sentences)
            continue
        assert len([k for k in inside if not heading[k]]) <= per_chunk
        for k in inside[1:]:
            if first[k]:  # a new block inside a unit: only headings before it
                assert all(heading[j] for j in inside if j < k)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, join=st.integers(16, 80), structured=st.booleans())
def test_sentences_join_only_within_the_join_cap(text: str, join: int, structured: bool
                                                 ) -> None:
    """join_max_chars: exact covering spans within max_chunk_chars; a unit of two or more
    (non-heading) sentences fits in the join cap; a sentence over it is whole."""
    from sproutrag.ingest.chunking import _structure

    chunks = chunk_text(text, max_chunk_chars=120, join_max_chars=join,
                        respect_structure=structured)
    check_spans(text, chunks)
    sentences = split_sentences(text)
    _, heading = _structure(text, sentences)
    for start, end in chunks:
        assert end - start <= 120
        inside = [k for k, (s, e) in enumerate(sentences) if start <= s and e <= end]
        body = [k for k in inside if not (structured and heading[k])]
        if len(body) >= 2:
            assert end - start <= join
    assert chunk_text(text, join_max_chars=1000) == chunk_text(text)  # over the cap: off


def test_join_cap_keeps_long_sentences_whole_and_pairs_short_ones() -> None:
    text = ("Short one. Short two. " + "A long sentence " * 5 + "ends here. Tail.\n"
            "9.1 Heading.\n" + "Another long sentence " * 4 + "ends. Last.")
    got = [text[s:e] for s, e in chunk_text(text, join_max_chars=40, respect_structure=True)]
    assert got[0] == "Short one. Short two."
    assert got[1].startswith("A long sentence") and got[1].endswith("ends here.")
    assert got[2] == "Tail."
    assert got[3].startswith("9.1 Heading.\nAnother long")  # a heading keeps its sentence
    assert got[4] == "Last."
    with pytest.raises(ValueError, match="join_max_chars"):
        chunk_text(text, join_max_chars=8)


def test_structured_units_never_end_with_the_next_heading() -> None:
    text = ("9.7 Records. The Recipient keeps records. It shows them on request.\n"
            "9.8 Incident Costs.\nEach party bears its own costs. Except as stated.\n\n"
            "ARTICLE 10\nDEFINITIONS\n(a) \"Affiliate\" means any entity. It controls.\n"
            "(b) \"Party\" means a party.\nThe Recipient shall:\n(i) keep it;\n(ii) return it.")
    old = [text[s:e] for s, e in chunk_text(text)]
    assert "It shows them on request.\n9.8 Incident Costs." in old  # ends in a heading
    got = [text[s:e] for s, e in chunk_text(text, respect_structure=True)]
    assert got == [
        "9.7 Records. The Recipient keeps records.",
        "It shows them on request.",
        "9.8 Incident Costs.\nEach party bears its own costs. Except as stated.",
        "ARTICLE 10\nDEFINITIONS\n(a) \"Affiliate\" means any entity. It controls.",
        "(b) \"Party\" means a party.",
        "The Recipient shall:\n(i) keep it;",
        "(ii) return it.",
    ]
    assert chunk_text("Only one heading", respect_structure=True) == [(0, 16)]


def test_the_sample_answer_carries_no_trailing_heading() -> None:
    """The README's example answer (the sample MSA's security-incident clause) ended with
    "9.8 Incident Costs.", the next clause's heading; with the default settings' units
    no unit of the sample ends with a numbered clause heading, and that one starts its
    clause's unit."""
    import re

    from sproutrag.schemas.settings import ChunkingSettings

    from tests.helpers import SAMPLE

    text = (SAMPLE / "master_services_agreement.txt").read_text(encoding="utf-8")
    units = [text[s:e] for s, e in chunk_text(text, **ChunkingSettings().model_dump())]
    heading_at_end = re.compile(r"\n\d+(\.\d+)+ [A-Z][\w ,&-]*\.$")
    assert not [u for u in units if heading_at_end.search(u)]
    assert any(u.startswith("9.8 Incident Costs. Where a Security Incident") for u in units)
    old = [text[s:e] for s, e in chunk_text(text)]  # the units of before stop 19
    assert any(u.endswith("\n\n9.8 Incident Costs.") or u.endswith("\n9.8 Incident Costs.")
               for u in old)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, per_chunk=st.integers(1, 4), join=st.integers(16, 80))
def test_list_units_are_exact_and_heading_runs_obey_the_join_cap(
    text: str, per_chunk: int, join: int
) -> None:
    """lists: exact covering spans within max_chunk_chars; a unit of two or more
    headings (a list) fits in the join cap; no unit joins a sentence to a run of
    LIST_LINES headings before it."""
    from sproutrag.ingest.chunking import LIST_LINES, _structure

    chunks = chunk_text(text, sentences_per_chunk=per_chunk, max_chunk_chars=120,
                        join_max_chars=join, respect_structure=True, lists=True)
    check_spans(text, chunks)
    sentences = split_sentences(text, lists=True)
    _, heading = _structure(text, sentences, lists=True)
    for start, end in chunks:
        assert end - start <= 120
        inside = [k for k, (s, e) in enumerate(sentences) if start <= s and e <= end]
        heads = [k for k in inside if heading[k]]
        if len(heads) >= 2:
            assert sentences[heads[-1]][1] - sentences[heads[0]][0] <= join
        if len(heads) >= LIST_LINES:
            assert all(heading[k] for k in inside)


def test_bullets_are_items_and_lists_stand_apart() -> None:
    kw = {"sentences_per_chunk": 2, "max_chunk_chars": 1000, "respect_structure": True,
          "join_max_chars": 600, "lists": True}
    text = ("Intro sentence here.\n- first bullet point is long enough to matter.\n"
            "\u2022 second bullet point is also here.\n* third one.\nAfter text. More.")
    assert [text[s:e] for s, e in chunk_text(text, **kw)] == [
        "Intro sentence here.", "- first bullet point is long enough to matter.",
        "\u2022 second bullet point is also here.", "* third one.", "After text. More."]
    toc = "\n".join(f"Section {i} Title Words" for i in range(60)) + "\nThe body. It ends."
    units = chunk_text(toc, **kw)
    assert max(e - s for s, e in units[:-1]) <= 600  # before: one 978-character unit
    assert toc[slice(*units[-1])] == "The body. It ends."  # the list does not join it
    fruit = "Apples\nPears\nPlums\nThe fruit is fresh today. It was picked this morning."
    assert [fruit[s:e] for s, e in chunk_text(fruit, **kw)] == [
        "Apples\nPears\nPlums", "The fruit is fresh today. It was picked this morning."]
    heading = "Notice Period\nEither party may end this agreement. It takes 30 days."
    assert len(chunk_text(heading, **kw)) == 1  # one heading still joins its sentence


def test_lone_carriage_returns_are_line_ends() -> None:
    kw = {"sentences_per_chunk": 2, "max_chunk_chars": 1000, "respect_structure": True,
          "join_max_chars": 600}
    unix = "TERMS\n- Pay on time and keep the receipt.\n- Return the goods within ten days."
    mac = unix.replace("\n", "\r")
    assert chunk_text(mac, lists=True, **kw) == chunk_text(unix, lists=True, **kw)
    assert len(chunk_text(mac, lists=True, **kw)) == 2
