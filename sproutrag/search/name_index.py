"""The documents of one version of `documents` by name key (`documents.name_key`): what a
corpus-wide query looks a name up in without a read (`NameIndex.named_in`). Two
arrays, 16 bytes a named document: the keys, sorted, and where each key's document is in
the doc_id list the view already holds; and the keys' high halves (their first words'),
so that a query tries only the phrases starting with a word some name starts with. The
doc_ids are the view's Arrow array (`sproutrag.search.current`)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.names import first_word_key, name_key, name_phrases, words


class NameIndex:
    """doc_ids by name key, for one version of `documents`."""

    def __init__(self, doc_ids: Sequence[str], keys: Any) -> None:
        """DOC_IDS (an Arrow string array or a sequence) and their KEYS
        (`documents.name_key`: an Arrow array or a sequence, null / None: no name),
        aligned."""
        keys = pa.array(keys, pa.int64()) if not isinstance(keys, pa.Array | pa.ChunkedArray) \
            else keys
        raw = pc.fill_null(keys, 0).to_numpy()
        rows = np.flatnonzero(pc.is_valid(keys).to_numpy(zero_copy_only=False))
        order = np.argsort(raw[rows], kind="stable")
        self._keys = raw[rows][order]
        self._rows = rows[order]
        self._doc_ids = doc_ids if isinstance(doc_ids, pa.Array) \
            else pa.array(list(doc_ids), pa.string())
        self._firsts = np.unique(self._keys >> 32)  # `first_word_key` of every name

    def __len__(self) -> int:
        """Named documents."""
        return len(self._keys)

    def first_words(self, keys: Mapping[str, int]) -> set[str]:
        """The words of KEYS (word -> `first_word_key`) that some name starts with."""
        if not keys or not len(self._firsts):
            return set()
        wanted = np.fromiter(keys.values(), np.int64, len(keys))
        at = np.minimum(np.searchsorted(self._firsts, wanted), len(self._firsts) - 1)
        hit = self._firsts[at] == wanted
        return {w for w, h in zip(keys, hit, strict=True) if h}

    def documents(self, keys: Iterable[int]) -> dict[int, list[str]]:
        """key -> the doc_ids of the documents with that key, for those of KEYS that any
        document has."""
        wanted = np.unique(np.fromiter(keys, np.int64))
        lo = np.searchsorted(self._keys, wanted, "left")
        hi = np.searchsorted(self._keys, wanted, "right")
        hit = hi > lo
        if not hit.any():
            return {}
        rows = np.concatenate([self._rows[a:b] for a, b in zip(lo[hit], hi[hit], strict=True)])
        ids = iter(self._doc_ids.take(pa.array(rows)).to_pylist())
        return {int(k): [next(ids) for _ in range(b - a)]
                for k, a, b in zip(wanted[hit], lo[hit], hi[hit], strict=True)}

    def unique(self, names: Mapping[str, str | None]) -> dict[str, str | None]:
        """NAMES (doc_id -> name) with None for a name some other document of the corpus
        also has (a generic heading names nothing; docs/whole-corpus.md, rule 15)."""
        keys = {d: name_key(n) for d, n in names.items() if n}
        held = self.documents(keys.values())
        return {d: n if n is None or len(held.get(keys[d], ())) <= 1 else None
                for d, n in names.items()}

    def named_in(self, texts: Sequence[str], limit: int, *,
                 skip: Collection[str] = (), allowed: Collection[str] | None = None
                 ) -> list[str]:
        """The documents whose name, one no other document has, TEXTS write (the query
        and its best unit), at most LIMIT, in the order the names are written; not those
        of SKIP (already searched), only those of ALLOWED when given (docs/whole-corpus.md,
        rule 13). Only phrases starting with a word some name starts with are hashed."""
        if not len(self) or limit <= 0:
            return []
        firsts = self.first_words({w: first_word_key(w)
                                   for w in set(words(" ".join(texts)).split())})
        phrases = dict.fromkeys(p for t in texts for p in name_phrases(t, firsts.__contains__))
        keys = [name_key(p) for p in phrases]
        found = self.documents(keys)
        out: list[str] = []
        for key in keys:
            docs = found.get(key, ())
            if (len(docs) == 1 and docs[0] not in skip and docs[0] not in out
                    and (allowed is None or docs[0] in allowed)):
                out.append(docs[0])
                if len(out) == limit:
                    break
        return out


EMPTY = NameIndex([], [])

__all__ = ["EMPTY", "NameIndex"]
