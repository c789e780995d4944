"""A hard cut never splits a character as a reader sees it (sproutrag.graphemes): chunks of
a sentence longer than max_chunk_chars, and a context cut inside unspaced text."""

from __future__ import annotations

import numpy as np
import pytest

from sproutrag.graphemes import splits_character, whole_character_cut
from sproutrag.ingest.chunking import chunk_text
from sproutrag.search.context import build_context, leaf_pieces
from sproutrag.search.pieces import Units

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl: one emoji
WAVE = "\U0001f44b\U0001f3fd"  # a hand and its skin tone
FLAG = "\U0001f1eb\U0001f1f7"  # two regional indicators: one flag
HEART = "\u2764\ufe0f"  # a heart and its emoji presentation selector
E_ACUTE = "e\u0301"  # e and a combining acute accent
HAN = "\u1112\u1161\u11ab"  # a Korean syllable as conjoining jamo (leading, vowel, final)
THAI_AM = "\u0e17\u0e33"  # Thai "tham": SARA AM is a letter (Lo) that is a spacing mark
CONJUNCT = "\u0924\u094d\u0930"  # Devanagari "tra": two consonants joined by a virama

CLUSTERS = [FAMILY, WAVE, FLAG, HEART, E_ACUTE, HAN, THAI_AM, CONJUNCT, "\r\n"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_no_position_inside_a_cluster_is_a_cut_and_its_edges_are(cluster):
    text = "ab" + cluster + "cd"
    inside = range(3, 2 + len(cluster))
    assert [i for i in range(len(text) + 1) if splits_character(text, i)] == list(inside)


def test_regional_indicators_pair_from_the_start_of_their_run():
    text = "x" + FLAG * 3
    assert [splits_character(text, i) for i in range(1, 8)] == [
        False, True, False, True, False, True, False]


def test_a_cut_moves_back_to_the_cluster_start_or_stays_when_nothing_is_whole():
    text = "ab" + FAMILY + "cd"
    assert whole_character_cut(text, 0, 5) == 2
    assert whole_character_cut(text, 0, 2 + len(FAMILY)) == 2 + len(FAMILY)
    zalgo = "a" + "\u0301" * 50
    assert whole_character_cut(zalgo, 0, 20) == 20  # every position splits: the cut stays


@pytest.mark.parametrize("cluster", CLUSTERS[:-1])
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_a_sentence_without_spaces_is_cut_between_characters(cluster, offset):
    """A chunk of an over-long sentence with nowhere to cut at a space ended at the
    character limit, inside an emoji sequence or a syllable as often as not."""
    text = "x" * (30 - offset) + cluster * 12
    chunks = chunk_text(text, max_chunk_chars=30)
    assert "".join(text[s:e] for s, e in chunks) == text
    assert all(e - s <= 30 for s, e in chunks)
    assert not any(splits_character(text, e) for _, e in chunks)
    assert chunks[0][1] >= 30 - len(cluster)  # moved back by less than one character


def test_a_context_cut_in_unspaced_text_keeps_a_korean_syllable_whole():
    text = HAN * 40 + " end."
    docs = {"a": Units(np.array([[0, len(text)]], np.int64), text)}
    ctx = build_context(leaf_pieces({"a": np.array([1.0])}, docs), docs, budget_chars=31)
    (span,) = ctx.spans
    assert span.cut and span.end == 30 and not splits_character(text, span.end)


def _one_unit_context(text: str, **budget):
    docs = {"a": Units(np.array([[0, len(text)]], np.int64), text)}
    (span,) = build_context(leaf_pieces({"a": np.array([1.0])}, docs), docs, **budget).spans
    return span


def test_unspaced_text_after_one_space_is_cut_inside_its_run():
    """Japanese after "第1条 " was cut at that one space: 3 characters of a budget of 20."""
    text = "第1条 " + "本契約は甲と乙の間で締結されるものとする" * 3 + "。"
    span = _one_unit_context(text, budget_chars=20)
    assert span.cut and span.end == 20
    spaced = "word " * 3 + "x" * 40 + " end."  # a long Latin run after words is one word
    assert _one_unit_context(spaced, budget_chars=30).end == 14


def test_a_token_budget_cuts_unspaced_text_where_its_tokens_fit():
    """Under a token budget, Chinese was taken whole or not at all (one cut position)."""
    text = "合同自2025年1月1日起生效通知期限为三个月雇主在每月月底支付工资" * 2

    def tokens(t: str) -> int:
        return len(t) + 2  # a reader's tokens: one a character, with [CLS] and [SEP]

    span = _one_unit_context(text, budget_tokens=12, measure=tokens)
    assert span.cut and span.end == 10
    thai = THAI_AM * 30
    span = _one_unit_context(thai, budget_tokens=9, measure=tokens)
    assert span.end == 6 and not splits_character(thai, span.end)


def test_unspaced_scripts_are_cut_inside_any_phrase_under_every_budget():
    """A token budget took a Thai phrase before its first space whole or not at all; a
    character budget of 2 on "第1条 ..." gave nothing (1 gave "第", 3 "第1条")."""
    thai = "ประเทศไทยมีวัฒนธรรมที่หลากหลาย ทำให้นักท่องเที่ยวมา"
    span = _one_unit_context(thai, budget_tokens=12, measure=len)
    assert 0 < span.end <= 12 and not splits_character(thai, span.end)
    assert _one_unit_context("第1条 本契約は秘密保持に関する", budget_chars=2).end == 1


def test_a_khmer_stack_is_never_cut_after_its_coeng():
    khmer = "ប្រទេសកម្ពុជា"  # ក្ព: COENG (U+17D2) stacks ព under ក
    assert splits_character(khmer, khmer.index("\u17d2") + 1)
    for budget in range(3, len(khmer)):  # "ប្រ", the first character, is 3 code points
        end = _one_unit_context(khmer + " ok", budget_chars=budget).end
        assert khmer[end - 1] != "\u17d2" and not splits_character(khmer, end)
