"""A least-recently-used cache bounded by (estimated) bytes, and size estimates for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import numpy as np


class LRUCache:
    """Keeps the most recently used entries whose sizes sum to at most `max_bytes`.

    An entry larger than the whole budget is still returned to its caller but not kept
    past the next `put`; `max_bytes=0` keeps nothing. Safe to share between threads (one
    lock around each call)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.nbytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: Any, size: int) -> None:
        with self._lock:
            if key in self._items:
                self.nbytes -= self._items.pop(key)[1]
            self._items[key] = (value, size)
            self.nbytes += size
            while self._items and self.nbytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self.nbytes -= dropped

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def keys(self) -> list[Hashable]:
        """Keys, least recently used first."""
        with self._lock:
            return list(self._items)


def arrays_nbytes(obj: Any) -> int:
    """Bytes of the numpy arrays among OBJ's attributes (a dataclass of arrays)."""
    return sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray))


def stored_tree_nbytes(st: Any) -> int:
    """About the memory of a `StoredTree`: its arrays, vectors and leaf texts."""
    texts = sum(len(t) + 50 for t in st.texts)
    return arrays_nbytes(st.tree) + st.spans.nbytes + texts


def leaf_terms_nbytes(terms: Any) -> int:
    """About the memory of a `LeafTerms`: ~100 bytes per (leaf, term) entry."""
    return 100 * sum(len(c) for c in terms.counts) + 250 * len(terms.counts)
