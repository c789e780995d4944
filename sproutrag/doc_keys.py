"""Documents' 64-bit keys (`documents.doc_key`): what a search looks a doc_id up by.

A query process holds every current document's doc_id -> tree as columns (the doc_ids
as one Arrow array, the keys sorted, and the rows in that order) instead of Python dicts
(`sproutrag.search.current`; docs/results.md, "The query view as columns"). A key is the
8-byte BLAKE2b digest (digest_size=8) of the doc_id, little-endian, signed; two doc_ids may
share one, so a lookup compares the doc_id itself.

Pure functions over strings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

#: Why a check names a document whose stored `doc_key` is not its doc_id's.
KEY_CHANGED = "its stored doc key does not match its doc_id"


def doc_key(doc_id: str) -> int:
    """The 64-bit key of DOC_ID (`documents.doc_key`), a signed integer."""
    return int.from_bytes(hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest(),
                          "little", signed=True)


def doc_keys(doc_ids: Iterable[str]) -> np.ndarray:
    """`doc_key` of each of DOC_IDS, as an int64 array."""
    return np.fromiter((doc_key(d) for d in doc_ids), np.int64)


__all__ = ["KEY_CHANGED", "doc_key", "doc_keys"]
