"""Lexical evidence: Okapi BM25 of a query against evidence units and tree nodes.

Used next to the dense cosine when scoring nodes: legal and technical questions often
share rare words (a defined term, a statute, a name) with their evidence, which a small
sentence encoder blurs. Measured on the three dev sets, this is where most of the
retrieval gain comes from (docs/results.md).

The collection is the set of leaves being searched (the query's documents): document
frequencies and the average length come from those leaves, so no corpus-wide index is
needed. A leaf is counted with its section heading, twice (`LeafTerms.of_document`): in
HotpotQA "He is best known for ..." then carries the name in its paragraph's title, and
a clause carries its article's heading. A tree node is scored as the text of its leaves
joined (term counts and length summed over its subtree, in O(n) per query term with
prefix sums over the leaf order).
Words are lower-cased, stopwords dropped and the rest reduced to their Snowball English
stem ("formed", "forming" -> "form"; "disclosure", "disclosed" -> "disclos"), as a
search engine's English analyzer does: a question rarely uses its evidence's word forms
(+2.7 IE on ContractNLI dev, +3.6 on the bundled long contracts, docs/results.md).
Pure Python and numpy; no model.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import snowballstemmer

from sproutrag.stopwords import STOPWORDS
from sproutrag.trees.tree import Tree


def _mark_ranges() -> str:
    """A regex class body of every combining mark (Mn, Mc, Me) of the first two planes:
    Python's `\\w` has no marks, so "नोटिस" was the words "न", "ट", "स" and a decomposed
    "résumé" two words."""
    ranges, start = [], None
    for cp in range(0x20001):
        mark = cp < 0x20000 and unicodedata.category(chr(cp))[0] == "M"
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            ranges.append(f"\\U{start:08x}-\\U{cp - 1:08x}")
            start = None
    return "".join(ranges)


_ASCII_WORD = re.compile(r"\w+")
#: A word: letters, digits and the marks written on them.
_WORD = re.compile(rf"[\w{_mark_ranges()}]+")
#: Chinese characters and Japanese kana: text written without spaces between words,
#: which a word token would take a whole clause as; it is counted in overlapping pairs
#: of characters (bigrams, as search engines' CJK analyzers do) instead.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                  r"\U00020000-\U0002ffff]+")
K1 = 1.2
B = 0.75
#: A leaf's context (its section heading) counts twice, like a title field boosted in
#: BM25F: chosen on the four training sets (1, 2, 3 tried: 2 gains on all four;
#: docs/results.md, `bench/research/bm25_shape.py`).
CONTEXT_WEIGHT = 2



_STEMMERS = threading.local()  # a Snowball stemmer keeps state: one per thread


@functools.lru_cache(maxsize=1 << 18)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-cased word (cached: a corpus repeats words).
    Words of other scripts pass through unchanged."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


def words(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords, not stemmed: any script's words with
    their combining marks (composed: NFC); Chinese and Japanese in overlapping pairs of
    characters (a lone character alone). Thai, written without spaces too, stays a run
    per token."""
    text = text.lower()
    if text.isascii():
        return [w for w in _ASCII_WORD.findall(text) if w not in STOPWORDS]
    out = []
    for w in _WORD.findall(unicodedata.normalize("NFC", text)):
        if w in STOPWORDS:
            continue
        if not _CJK.search(w):
            out.append(w)
            continue
        at = 0
        for m in _CJK.finditer(w):
            out += [w[at : m.start()]] if m.start() > at else []
            run = m.group()
            out += [run[i : i + 2] for i in range(max(len(run) - 1, 1))]
            at = m.end()
        out += [w[at:]] if at < len(w) else []
    return out


def tokenize(text: str) -> list[str]:
    """BM25's terms: `words` reduced to their stems (only English words have their
    endings removed)."""
    return [stem(w) for w in words(text)]


#: What turns a text into BM25 terms: `tokenize` (shipped) or, for comparison, `words`.
Analyzer = Callable[[str], list[str]]


@dataclass(frozen=True)
class LeafTerms:
    """Term counts of one document's leaves (computed once per document, then cached),
    with an inverted index so a query costs only the leaves that hold its terms."""

    counts: tuple[Counter, ...]
    lengths: np.ndarray  # float64 (n,): tokens per leaf
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )  # term -> (leaf ids, counts)

    def __post_init__(self) -> None:
        if self.postings:
            return
        rows: dict[str, tuple[list[int], list[int]]] = {}
        for leaf, c in enumerate(self.counts):
            for term, tf in c.items():
                ids, tfs = rows.setdefault(term, ([], []))
                ids.append(leaf)
                tfs.append(tf)
        self.postings.update({t: (np.asarray(i, np.int64), np.asarray(f, np.float64))
                              for t, (i, f) in rows.items()})

    @classmethod
    def of(
        cls, texts: Sequence[str], contexts: Sequence[str] | None = None, *,
        analyzer: Analyzer = tokenize, context_weight: int = CONTEXT_WEIGHT,
    ) -> LeafTerms:
        """Counts of each leaf's text, with its context (e.g. its section heading,
        `sproutrag.ingest.chunking.section_headings`) counted as part of the leaf,
        `context_weight` times (a title field's boost). `analyzer` turns a text into
        terms; score with the same one (`bm25_leaves(..., analyzer=)`)."""
        if context_weight < 0:
            raise ValueError(f"context_weight must be 0 or more, got {context_weight!r}")
        if contexts is not None and len(contexts) != len(texts):
            raise ValueError(f"{len(contexts)} contexts for {len(texts)} leaves")
        counts = tuple(Counter(analyzer(t)) for t in texts)
        if contexts is not None and context_weight:
            for c, context in zip(counts, contexts):
                for term in analyzer(context):
                    c[term] += context_weight
        return cls(counts, np.asarray([sum(c.values()) for c in counts], dtype=np.float64))

    @classmethod
    def of_document(cls, text: str, spans: Sequence[tuple[int, int]]) -> LeafTerms:
        """The leaves `text[s:e]` of a document, each with its section heading as context:
        what the evaluation and the Retriever both use."""
        from sproutrag.ingest.chunking import section_headings

        spans = [(int(s), int(e)) for s, e in spans]
        return cls.of([text[s:e] for s, e in spans], section_headings(text, spans))

    def tf(self, term: str) -> np.ndarray:
        """Count of `term` in each leaf (float64 (n,))."""
        out = np.zeros(len(self.counts), dtype=np.float64)
        if term in self.postings:
            ids, tfs = self.postings[term]
            out[ids] = tfs
        return out


def _idf(df: int, n: int) -> float:
    """Lucene's non-negative BM25 idf."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _subtree_sums(tree: Tree, leaf_values: np.ndarray) -> np.ndarray:
    """Sum of leaf_values over every node's leaves ((2n-1,), via prefix sums)."""
    prefix = np.concatenate([[0.0], np.cumsum(leaf_values[tree.leaf_order])])
    return prefix[tree.leaf_end] - prefix[tree.leaf_start]


def bm25_leaves(
    query: str, docs: Sequence[LeafTerms], *, analyzer: Analyzer = tokenize,
    k1: float = K1, b: float = B, collection: Sequence[LeafTerms] | None = None,
) -> list[np.ndarray]:
    """BM25 of `query` against every leaf of `docs` (one float64 (n,) array per doc).
    `analyzer` must be the one the `LeafTerms` were counted with; k1 and b: BM25's
    saturation and length normalisation (Lucene's defaults). COLLECTION: the documents
    whose leaves give the statistics (document frequencies, leaf count, average length;
    default `docs`)."""
    return _bm25(query, docs, None, analyzer, k1, b, collection)


def bm25_nodes(query: str, docs: Sequence[LeafTerms], trees: Sequence[Tree],
               collection: Sequence[LeafTerms] | None = None) -> list[np.ndarray]:
    """BM25 of `query` against every node of each tree ((2n-1,) per doc; leaves first).

    Collection statistics come from the leaves (the evidence units) of COLLECTION
    (default `docs`); an internal node is the concatenation of its leaves.
    """
    return _bm25(query, docs, trees, tokenize, K1, B, collection)


def bm25_each(query: str, questions: Mapping[str, str] | None, ids: Sequence[str],
              docs: Sequence[LeafTerms], trees: Sequence[Tree] | None = None,
              collection: Sequence[LeafTerms] | None = None) -> list[np.ndarray]:
    """`bm25_nodes` (TREES given) or `bm25_leaves` of the documents IDS (their `LeafTerms`
    DOCS), each scored with its own text where QUESTIONS has one (rule 80) and with QUERY
    otherwise, all with the statistics of COLLECTION (default DOCS)."""
    def score(text: str, part: Sequence[int], held: Sequence[LeafTerms] | None):
        terms = [docs[i] for i in part]
        if trees is None:
            return bm25_leaves(text, terms, collection=held)
        return bm25_nodes(text, terms, [trees[i] for i in part], held)

    own = questions or {}
    if not any(d in own for d in ids):
        return score(query, range(len(ids)), collection)
    held = list(docs) if collection is None else collection
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(ids):
        groups.setdefault(own.get(d, query), []).append(i)
    out: list[np.ndarray] = [np.zeros(0)] * len(ids)
    for text, part in groups.items():
        for i, values in zip(part, score(text, part, held), strict=True):
            out[i] = values
    return out


def bm25_documents(query: str, docs: Sequence[LeafTerms]) -> np.ndarray:
    """BM25 of `query` against each of DOCS as a whole (float64 (len(docs),)): the
    documents are the collection (document frequencies, the average length), each one
    the text of all its leaves (term counts and lengths summed)."""
    out = np.zeros(len(docs), dtype=np.float64)
    terms = sorted(set(tokenize(query)))
    if not terms or not docs:
        return out
    lengths = np.asarray([float(d.lengths.sum()) for d in docs])
    avg = max(float(lengths.mean()), 1e-9)
    for term in terms:
        tf = np.asarray([float(d.postings[term][1].sum()) if term in d.postings else 0.0
                         for d in docs])
        df = int((tf > 0).sum())
        if df:
            out += _idf(df, len(docs)) * tf * (K1 + 1) / (
                tf + K1 * (1 - B + B * lengths / avg))
    return out


def _bm25(
    query: str, docs: Sequence[LeafTerms], trees: Sequence[Tree] | None,
    analyzer: Analyzer, k1: float, b: float, collection: Sequence[LeafTerms] | None = None,
) -> list[np.ndarray]:
    size = [len(d.lengths) if trees is None else 2 * len(d.lengths) - 1 for d in docs]
    out = [np.zeros(s, dtype=np.float64) for s in size]
    terms = sorted(set(analyzer(query)))
    stats = docs if collection is None else collection
    n = sum(len(d.lengths) for d in stats)
    if not terms or not n:
        return out
    avg = max(sum(float(d.lengths.sum()) for d in stats) / n, 1e-9)
    lengths = [d.lengths if trees is None else _subtree_sums(t, d.lengths)
               for d, t in zip(docs, trees or [None] * len(docs))]
    for term in terms:
        tfs = [d.tf(term) for d in docs]
        df = int(sum((tf > 0).sum() for tf in tfs))
        if not df:
            continue
        if collection is not None:  # a term of DOCS that the collection may lack
            df = int(sum((d.tf(term) > 0).sum() for d in collection))
        idf = _idf(df, n)
        for k, tf in enumerate(tfs):
            if trees is not None:
                tf = _subtree_sums(trees[k], tf)
            out[k] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[k] / avg))
    return out
