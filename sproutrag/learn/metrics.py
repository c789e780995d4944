"""evaluate: retrieval metrics, the paper's way (own span arithmetic).

Independent of the search code it measures: nothing here imports `sproutrag.search.tree_search`,
`sproutrag.trees.tree` or `sproutrag.search.retriever`. A system's answer to one query is the list
of its *evidence units* in rank order, each a ``(doc_id, start, end)`` character span;
a retrieved internal node must already be expanded into its units (every unit counts
toward the budget). Gold evidence is a list of ``(doc_id, start, end)`` spans.

Primary definitions (per query, at a budget of k units; the paper's):

* only the first k retrieved units count (a longer answer is cut at k); a unit given
  twice among them counts once, and so does a gold span given twice;
* a unit is **relevant** when it overlaps a gold span of its document (>= 1 char);
* precision ``P = relevant units among the first k / k``: an answer shorter than k is
  not rewarded;
* recall ``R = gold spans touched by the first k units / gold spans``: it does not
  depend on the system's own chunking;
* ``IE = R x P`` per query; reported as the mean over queries, then over k = 1, 3, 5.

Secondary figures, kept for comparison with earlier reports:

* ``precision_returned = relevant units / units returned`` (0 when nothing is
  returned) and ``unit_recall = gold units retrieved / gold units``, where the gold
  units are the document's chunks that overlap a gold span; ``ie_returned`` is their
  per-query product (it rewards short answers: not the paper's IE);
* character precision / recall (LegalBench-RAG): with Ret the union of the retrieved
  units' characters and Gold the union of the gold spans' characters (per document),
  ``cP = |Ret & Gold| / |Ret|``, ``cR = |Ret & Gold| / |Gold|``, ``char_ie = cR x cP``.

Aggregates over queries are means of the per-query values; ``ie_means = mean R x mean
P`` is kept in the JSON too. `paired_difference` gives the mean per-query difference of
two systems on the same queries with its standard error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

Span = tuple[int, int]
DocSpan = tuple[str, int, int]


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The union of half-open spans as sorted, disjoint, non-touching spans."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in spans if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def span_length(spans: Iterable[Span]) -> int:
    """Characters covered by the union of `spans`."""
    return sum(e - s for s, e in merge_spans(spans))


def intersection_length(a: Iterable[Span], b: Iterable[Span]) -> int:
    """Characters covered by both unions (two-pointer sweep over merged spans)."""
    x, y = merge_spans(a), merge_spans(b)
    i = j = total = 0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        total += max(0, hi - lo)
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlaps(a: Span, b: Span) -> bool:
    """Do two half-open spans share at least one character?"""
    return max(a[0], b[0]) < min(a[1], b[1])


def _by_doc(spans: Iterable[DocSpan]) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for d, s, e in spans:
        out.setdefault(str(d), []).append((int(s), int(e)))
    return out


def gold_units(units: Iterable[DocSpan], gold: Sequence[DocSpan]) -> list[DocSpan]:
    """The units (e.g. all chunks of the query's documents) that overlap a gold span."""
    g = _by_doc(gold)
    return [
        (d, s, e) for d, s, e in units if any(overlaps((s, e), x) for x in g.get(str(d), ()))
    ]


@dataclass(frozen=True)
class QueryScores:
    """One query at one k (fractions in [0, 1])."""

    precision: float  # relevant units among the first k / k
    recall: float  # gold spans touched / gold spans
    precision_returned: float  # relevant units / units returned
    unit_recall: float  # gold units retrieved / gold units
    char_precision: float
    char_recall: float
    n_retrieved: int
    n_relevant: int

    @property
    def ie(self) -> float:
        return self.precision * self.recall

    @property
    def char_ie(self) -> float:
        return self.char_precision * self.char_recall


def score_query(
    retrieved: Sequence[DocSpan],
    gold: Sequence[DocSpan],
    gold_unit_spans: Sequence[DocSpan],
    *,
    k: int,
) -> QueryScores:
    """Unit and character metrics of one query's ranked units at budget k (see module)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    # a unit given twice among the first k counts once, and so does a gold span
    units = list(dict.fromkeys((str(d), int(s), int(e)) for d, s, e in retrieved[:k]))
    gold = list(dict.fromkeys((str(d), int(s), int(e)) for d, s, e in gold))
    g = _by_doc(gold)
    relevant = [u for u in units if any(overlaps(u[1:], x) for x in g.get(u[0], ()))]
    n_ret, n_rel = len(units), len(relevant)
    gu = {(str(d), int(s), int(e)) for d, s, e in gold_unit_spans}
    found = {x for x in gu if any(u[0] == x[0] and overlaps(u[1:], x[1:]) for u in relevant)}
    gold_list = gold
    hit_spans = sum(
        any(u[0] == d and overlaps(u[1:], (s, e)) for u in units) for d, s, e in gold_list
    )
    r = _by_doc(units)
    inter = sum(intersection_length(r[d], g[d]) for d in r if d in g)
    ret_chars = sum(span_length(v) for v in r.values())
    gold_chars = sum(span_length(v) for v in g.values())
    return QueryScores(
        precision=n_rel / k,
        recall=hit_spans / len(gold_list) if gold_list else 0.0,
        precision_returned=n_rel / n_ret if n_ret else 0.0,
        unit_recall=len(found) / len(gu) if gu else 0.0,
        char_precision=inter / ret_chars if ret_chars else 0.0,
        char_recall=inter / gold_chars if gold_chars else 0.0,
        n_retrieved=n_ret,
        n_relevant=n_rel,
    )


@dataclass(frozen=True)
class Summary:
    """Means over queries at one k; IE = mean(R_q x P_q) (the paper's P and R)."""

    k: int
    n_queries: int
    precision: float
    recall: float
    ie: float
    ie_means: float  # mean R x mean P
    precision_returned: float
    unit_recall: float
    ie_returned: float  # mean(unit_recall_q x precision_returned_q): the pre-stop-8 IE
    char_precision: float
    char_recall: float
    char_ie: float
    mean_retrieved: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def summarize(scores: Sequence[QueryScores], k: int) -> Summary:
    """Means over the queries' scores at budget k."""
    n = len(scores)

    def mean(name: str) -> float:
        return sum(getattr(s, name) for s in scores) / n if n else 0.0

    def mean_product(a: str, b: str) -> float:
        return sum(getattr(s, a) * getattr(s, b) for s in scores) / n if n else 0.0

    p, r = mean("precision"), mean("recall")
    return Summary(
        k=k, n_queries=n, precision=p, recall=r, ie=mean_product("precision", "recall"),
        ie_means=p * r, precision_returned=mean("precision_returned"),
        unit_recall=mean("unit_recall"),
        ie_returned=mean_product("precision_returned", "unit_recall"),
        char_precision=mean("char_precision"), char_recall=mean("char_recall"),
        char_ie=mean_product("char_precision", "char_recall"),
        mean_retrieved=mean("n_retrieved"),
    )


AVERAGED = (
    "precision", "recall", "ie", "ie_means", "precision_returned", "unit_recall",
    "ie_returned", "char_precision", "char_recall", "char_ie", "mean_retrieved",
)


def average_over_k(summaries: Sequence[Summary]) -> dict[str, float]:
    """Each metric averaged over the cutoffs (the paper reports IE averaged over k)."""
    n = len(summaries)
    return {name: sum(getattr(s, name) for s in summaries) / n for name in AVERAGED} if n else {}


def per_query_ie(per_k: Sequence[Sequence[QueryScores]], name: str = "ie") -> list[float]:
    """Each query's `name` (default IE) averaged over the cutoffs: per_k[k][query]."""
    if not per_k:
        return []
    n = len(per_k[0])
    return [sum(getattr(scores[q], name) for scores in per_k) / len(per_k) for q in range(n)]


def paired_difference(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean of a_q - b_q over the same queries, and its standard error (sd / sqrt(n))."""
    if len(a) != len(b):
        raise ValueError(f"paired values need the same queries: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return 0.0, 0.0
    d = [x - y for x, y in zip(a, b)]
    mean = sum(d) / n
    if n == 1:
        return mean, 0.0
    var = sum((x - mean) ** 2 for x in d) / (n - 1)
    return mean, (var / n) ** 0.5
