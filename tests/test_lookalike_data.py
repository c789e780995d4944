"""The look-alike reports pool (`data/lookalike-reports`, data/README.md) is what rules
66-88 of docs/whole-corpus.md were decided on: its files must stay consistent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

POOL = Path(__file__).resolve().parents[1] / "data" / "lookalike-reports"
SPLITS = {"train": "docs.jsonl", "dev": "docs.jsonl", "test": "test.docs.jsonl",
          "holdout": "holdout.docs.jsonl", "holdout2": "holdout2.docs.jsonl",
          "holdout3": "holdout3.docs.jsonl", "holdout4": "holdout4.docs.jsonl",
          "holdout5": "holdout5.docs.jsonl", "holdout6": "holdout6.docs.jsonl",
          "holdout7": "holdout7.docs.jsonl", "holdout8": "holdout8.docs.jsonl",
          "holdout9": "holdout9.docs.jsonl", "holdout10": "holdout10.docs.jsonl",
          "holdout11": "holdout11.docs.jsonl", "holdout12": "holdout12.docs.jsonl"}
#: Each split's questions by type (the holdout's clusters add two-described questions).
KINDS = {"one-named": 18, "one-described": 6, "two": 18}
HOLDOUT_KINDS = {**KINDS, "two-described": 6}


def _lines(name: str) -> list[dict]:
    with open(POOL / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_test_pool_holds_the_first_pool_and_three_more_clusters():
    first = {d["doc_id"]: d["text"] for d in _lines("docs.jsonl")}
    every = {d["doc_id"]: d["text"] for d in _lines("test.docs.jsonl")}
    assert len(first) == 48 and len(every) == 72
    assert all(every[d] == t for d, t in first.items())  # the same texts, unchanged
    assert {d.rsplit("-", 1)[0] for d in set(every) - set(first)} == {"fin-c", "law-c",
                                                                       "med-c"}
    assert all(5000 <= len(t) <= 9000 and t.isascii() for t in every.values())


@pytest.mark.parametrize(("before", "split", "clusters"), [
    ("test", "holdout", "d"), ("holdout", "holdout2", "e"), ("holdout2", "holdout3", "f"),
    ("holdout3", "holdout4", "g"), ("holdout4", "holdout5", "h"),
    ("holdout5", "holdout6", "i"), ("holdout6", "holdout7", "j"),
    ("holdout7", "holdout8", "k"), ("holdout8", "holdout9", "l"),
    ("holdout9", "holdout10", "m"), ("holdout10", "holdout11", "n"),
    ("holdout11", "holdout12", "o")])
def test_each_holdout_pool_holds_the_pool_before_and_three_more_clusters(before, split,
                                                                         clusters):
    earlier = {d["doc_id"]: d["text"] for d in _lines(SPLITS[before])}
    every = {d["doc_id"]: d["text"] for d in _lines(SPLITS[split])}
    assert len(every) == len(earlier) + 24
    assert all(every[d] == t for d, t in earlier.items())  # the same texts, unchanged
    assert {d.rsplit("-", 1)[0] for d in set(every) - set(earlier)} == {
        f"{kind}-{clusters}" for kind in ("fin", "law", "med")}
    assert all(5000 <= len(t) <= 9000 and t.isascii() for t in every.values())


@pytest.mark.parametrize("split", list(SPLITS))
def test_every_question_has_gold_sentences_inside_its_own_documents(split):
    texts = {d["doc_id"]: d["text"] for d in _lines(SPLITS[split])}
    questions = _lines(f"{split}.queries.jsonl")
    want = HOLDOUT_KINDS if split.startswith("holdout") else KINDS
    n = sum(want.values())
    assert len(questions) == n and len({q["qid"] for q in questions}) == n
    kinds = dict.fromkeys(want, 0)
    for q in questions:
        kinds[q["type"]] += 1
        assert len(q["doc_ids"]) == (2 if q["type"].startswith("two") else 1), q["qid"]
        assert {g["doc_id"] for g in q["gold"]} == set(q["doc_ids"]), q["qid"]
        for g in q["gold"]:
            text = texts[g["doc_id"]]
            assert 0 <= g["start"] < g["end"] <= len(text), q["qid"]
            quote = text[g["start"]:g["end"]]
            assert quote == quote.strip() and text.count(quote) == 1, q["qid"]
    assert kinds == want
