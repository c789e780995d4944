"""What a search reads of its documents, cached: current trees, their leaves' term
counts, texts (as stored and as their words) and names, in one LRU bounded by bytes and
keyed by (kind, doc_id, tree_id), so a re-indexed document (a new tree id) is never
answered from an old entry.

The `Retriever` owns one (`Retriever.documents`) over its `TablesView`: the current tree
of each document is the one the view's `documents` version names; a tree an index run
replaced (and removed) meanwhile is read again from a fresh view (`read`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sproutrag.errors import DamagedDocumentError, InvalidTreeError
from sproutrag.names import document_name, mention_words
from sproutrag.search.cache import LRUCache, leaf_terms_nbytes, stored_tree_nbytes
from sproutrag.search.lexical import LeafTerms
from sproutrag.search.view import TablesView
from sproutrag.storage.rows import StoredTree

#: Reads of a search's trees before a tree replaced under it each time is an error.
LOAD_ATTEMPTS = 20

#: Default bound of the cache (about 170k nodes of 384-d vectors).
CACHE_BYTES = 512 * 2**20


class StoredDocuments:
    """The current trees, term counts, texts and names of a database's documents."""

    def __init__(self, store: Any, view: TablesView, cache_bytes: int = CACHE_BYTES) -> None:
        self.store, self.view = store, view
        self.cache = LRUCache(cache_bytes)  # (kind, doc_id, tree_id) -> value

    def tree_ids(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """The current tree_id of each known doc_id."""
        return self.view.current().tree_ids_of(doc_ids)

    def tree(self, doc_id: str, tree_id: str) -> StoredTree:
        """The tree TREE_ID of DOC_ID (tree ids are fresh for every stored version),
        cached (`trees`); KeyError when it is no longer stored."""
        found = self.trees({doc_id: tree_id})
        if doc_id not in found:
            raise KeyError(f"tree {tree_id!r} of doc_id {doc_id!r} is not in "
                           f"{self.store.uri!r}")
        return found[doc_id]

    def trees(self, wanted: Mapping[str, str]) -> dict[str, StoredTree]:
        """doc_id -> tree of WANTED (doc_id -> tree id): the cached ones, the others in one
        read (`Store.load_trees`), cached; a tree no longer stored is missing."""
        out, unread = {}, {}
        for d, t in wanted.items():
            found = self.cache.get(("tree", d, t))
            if found is None:
                unread[d] = t
            else:
                out[d] = found
        try:
            loaded = self.store.load_trees(unread)
        except InvalidTreeError as exc:
            raise DamagedDocumentError(self.store.uri, [exc.doc_id],
                                       f"has an invalid stored tree ({exc})") from None
        for d, found in loaded.items():
            self.cache.put(("tree", d, unread[d]), found, stored_tree_nbytes(found))
            out[d] = found
        return out

    def load_trees(self, docs: Sequence[str]) -> dict[str, tuple[str, StoredTree]]:
        """doc_id -> (tree_id, current tree) of DOCS (`read` without texts)."""
        return self.read(docs)[0]

    def read(self, docs: Sequence[str], *, texts: bool = False, terms: bool = False,
             names: bool = False, word_texts: bool = False
             ) -> tuple[dict[str, tuple[str, StoredTree]], dict[str, str]]:
        """(doc_id -> (tree_id, current tree), doc_id -> text) of DOCS; the texts only
        with TEXTS (a context cuts its spans from them), else {}. TERMS, NAMES and
        WORD_TEXTS: the term counts, names and word texts (`word_text`) are cached too,
        from the same read of the texts (`prefetch`).

        A tree or text an index run replaced (and removed) since `documents` was read is
        read again from the new `documents` version, up to `LOAD_ATTEMPTS` times (a run
        that commits faster than a search reads can replace it again meanwhile); what was
        read already and is still current is kept, so each attempt reads only what the
        run replaced. A document deleted meanwhile is left out."""
        loaded: dict[str, tuple[str, StoredTree]] = {}
        text_of: dict[str, str] = {}
        for attempt in range(LOAD_ATTEMPTS):
            ids = self.tree_ids(docs)
            loaded = {d: loaded[d] for d, t in ids.items()
                      if d in loaded and loaded[d][0] == t}
            text_of = {d: x for d, x in text_of.items() if d in loaded}
            replaced: list[str] = []
            try:
                missing = {d: t for d, t in ids.items() if d not in loaded}
                loaded.update((d, (missing[d], st)) for d, st in self.trees(missing).items())
                replaced = [d for d in missing if d not in loaded]
                if replaced:  # what is read is kept: the next attempt reads only these
                    raise KeyError(f"the trees of {replaced} were replaced meanwhile")
                if texts or terms or names or word_texts:
                    text_of.update(self.prefetch({d: v for d, v in loaded.items()
                                                  if d not in text_of}, terms=terms,
                                                 names=names, texts=texts,
                                                 word_texts=word_texts))
                gone = [d for d in loaded if d not in text_of] if texts else []
                if gone:  # replaced after its tree was read: its text is no longer stored
                    for d in gone:
                        del loaded[d]
                    raise KeyError(f"the texts of {gone} were replaced meanwhile")
            except KeyError:
                if attempt < LOAD_ATTEMPTS - 1:
                    self.view.forget()
                    continue
                if replaced:  # named by every version read: not a run replacing them
                    raise DamagedDocumentError(self.store.uri, replaced) from None
                raise
            return {d: loaded[d] for d in ids}, {d: text_of[d] for d in ids if texts}
        raise AssertionError("unreachable")

    def leaf_terms(self, doc_id: str, tree_id: str) -> LeafTerms:
        """Term counts of a tree's leaves with their section headings (lexical scores),
        cached like the tree. Should the document be replaced meanwhile, the leaves are
        counted without headings for this query."""
        key = ("terms", doc_id, tree_id)
        found = self.cache.get(key)
        if found is None:
            st = self.tree(doc_id, tree_id)
            try:
                text = self.store.document_text(doc_id, tree_id)
            except KeyError:
                return LeafTerms.of(st.texts)
            found = LeafTerms.of_document(text, st.spans.tolist())
            self.cache.put(key, found, leaf_terms_nbytes(found))
        return found

    def text(self, doc_id: str, tree_id: str) -> str:
        """The text of DOC_ID whose current tree is TREE_ID (a context's spans are cut from
        it), cached like the tree; KeyError when the document was replaced meanwhile."""
        key = ("text", doc_id, tree_id)
        found = self.cache.get(key)
        if found is None:
            found = self.store.document_text(doc_id, tree_id)
            self.cache.put(key, found, 2 * len(found) + 64)
        return found

    def word_text(self, doc_id: str, tree_id: str) -> str:
        """DOC_ID's title and text as their lower-cased words joined by one space, a space
        at each end, accents folded (`sproutrag.names.mention_words`: where a question's
        entities are looked for, `sproutrag.search.mentions`), cached; KeyError as
        `text`."""
        found = self.cache.get(("words", doc_id, tree_id))
        if found is None:
            found = self._put_word_text(doc_id, tree_id,
                                        *self.store.document_text_and_title(doc_id, tree_id))
        return found

    def _put_word_text(self, doc_id: str, tree_id: str, text: str, title: str | None
                       ) -> str:
        found = mention_words(f"{title}\n{text}" if title else text)
        self.cache.put(("words", doc_id, tree_id), found, 2 * len(found) + 64)
        return found

    def name(self, doc_id: str, tree_id: str) -> str | None:
        """The name other documents may call DOC_ID by (`links.document_name`: its title
        or heading-like first line), cached; KeyError as `text`."""
        found = self.cache.get(("name", doc_id, tree_id))
        if found is None:
            found = self._put_name(doc_id, tree_id,
                                   *self.store.document_text_and_title(doc_id, tree_id))
        return found[0]

    def _put_name(self, doc_id: str, tree_id: str, text: str, title: str | None
                  ) -> tuple[str | None]:
        found = (document_name(text, title),)
        self.cache.put(("name", doc_id, tree_id), found, 2 * len(found[0] or "") + 96)
        return found

    def prefetch(self, loaded: Mapping[str, tuple[str, StoredTree]], *, terms: bool,
                 names: bool, texts: bool = False, word_texts: bool = False
                 ) -> dict[str, str]:
        """Term counts (TERMS), names (NAMES), texts (TEXTS) and word texts (WORD_TEXTS)
        of the LOADED documents
        not cached yet, from one read of their texts: a query over documents it has not
        seen pays one read, not one per document (`Store.document_texts`). Returns the
        texts of LOADED with TEXTS (cached or read; a document replaced meanwhile is
        missing), else {}."""
        cache = self.cache
        out: dict[str, str] = {}
        if texts:
            for d, (t, _) in loaded.items():
                found = cache.get(("text", d, t))
                if found is not None:
                    out[d] = found
        want = {d: t for d, (t, _) in loaded.items()
                if (terms and ("terms", d, t) not in cache)
                or (names and ("name", d, t) not in cache)
                or (word_texts and ("words", d, t) not in cache)
                or (texts and d not in out)}
        if not want:
            return out
        for d, (text, title) in self.store.document_texts(want).items():
            t = want[d]
            if texts:
                out[d] = text
                if ("text", d, t) not in cache:
                    cache.put(("text", d, t), text, 2 * len(text) + 64)
            if terms and ("terms", d, t) not in cache:
                found = LeafTerms.of_document(text, loaded[d][1].spans.tolist())
                cache.put(("terms", d, t), found, leaf_terms_nbytes(found))
            if names and ("name", d, t) not in cache:
                self._put_name(d, t, text, title)
            if word_texts and ("words", d, t) not in cache:
                self._put_word_text(d, t, text, title)
        return out


__all__ = ["CACHE_BYTES", "LOAD_ATTEMPTS", "StoredDocuments"]
