"""The English stopwords of the lexical scores (`sproutrag.search.lexical`) and of
documents' names (`sproutrag.names`)."""

from __future__ import annotations

#: Very common English function words; they carry no evidence and would dominate short texts.
STOPWORDS = frozenset(
    "a an and are as at be been being but by can could did do does for from had has have "
    "he her his i if in into is it its may might must my no not of on or our shall she "
    "should so such than that the their them then there these they this those to was we "
    "were what when where which while who whom why will with would you your".split()
)

__all__ = ["STOPWORDS"]
