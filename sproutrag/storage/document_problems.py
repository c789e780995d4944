"""Why a stored document is damaged, as one line: its text against its content hash
(`hashes_match`, `TEXT_CHANGED`), its doc key and name against its doc_id, text and
title (`name_problems`), its tree's size against its chunks (`size_problem`) and its
leaf texts against its text (`leaf_problem`). `sproutrag check` and the start-of-run
checks say a document's damage in these words (`sproutrag.storage.check`,
`sproutrag.storage.tree_check`, `sproutrag.storage.run_check`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from sproutrag.doc_keys import KEY_CHANGED, doc_key
from sproutrag.documents import content_hash
from sproutrag.names import name_problem
from sproutrag.storage.rows import StoredTree

TEXT_CHANGED = "its stored text does not match its content hash"
#: One of `metadata_json` and its JSON column `metadata` is null and the other not: a
#: filter on a field would miss the document or find it wrongly. (Their values are not
#: compared: Lance's JSON turns NaN into null and integers past 64 bits into floats.)
METADATA_CHANGED = "its stored metadata and metadata_json disagree (one is null)"


def size_problem(tree_id: str, got: int, want: int) -> str:
    """Why a document's tree of GOT rows is not the WANT = 2n - 1 rows of its n chunks."""
    return (f"its tree {tree_id} has no nodes" if got == 0 else
            f"its tree {tree_id} has {got} nodes rows, not {want}")


def leaf_problem(stored: StoredTree, tree_id: str, text: str) -> str | None:
    """The first leaf of STORED whose text is not TEXT[start:end], as one line."""
    for i, ((s, e), leaf) in enumerate(zip(stored.spans.tolist(), stored.texts)):
        if text[s:e] != leaf:
            return f"leaf {i} of its tree {tree_id} is not the text at {s}-{e}"
    return None


def hashes_match(texts: list[str], digests: list[str]) -> np.ndarray:
    """Per stored text of TEXTS, whether it hashes to its content hash (DIGESTS)."""
    return np.fromiter((content_hash(t) == h for t, h in zip(texts, digests, strict=True)),
                       dtype=bool, count=len(texts))


def name_problems(batch: pa.RecordBatch, texts: list[str], whole: np.ndarray
                  ) -> Iterator[tuple[int, str]]:
    """(row, why) of the rows of a `documents` BATCH whose stored doc key is not their
    doc_id's (`sproutrag.doc_keys.KEY_CHANGED`: a query would not find the document),
    whose `metadata` and `metadata_json` are not both null or both set
    (`METADATA_CHANGED`), and of those whose text (TEXTS, its column) is WHOLE but whose
    stored name or name key is not what their text and title give
    (`sproutrag.names.name_problem`); nothing for the columns a table lacks (an older
    schema, migrated by the next index run)."""
    names = batch.schema.names
    if "metadata" in names and "metadata_json" in names:
        text_null = batch.column("metadata_json").is_null().to_numpy(zero_copy_only=False)
        json_null = batch.column("metadata").is_null().to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(text_null != json_null).tolist():
            yield i, METADATA_CHANGED
    if "doc_key" in names and "doc_id" in names:
        stored_keys = batch.column("doc_key").to_pylist()
        for i, doc_id in enumerate(batch.column("doc_id").to_pylist()):
            if stored_keys[i] != doc_key(doc_id):
                yield i, KEY_CHANGED
    if "name_key" not in names or "name" not in names:
        return
    titles = (batch.column("title").to_pylist() if "title" in names
              else [None] * batch.num_rows)
    stored = zip(batch.column("name").to_pylist(), batch.column("name_key").to_pylist(),
                 strict=True)
    for i, (text, title, (name, key)) in enumerate(zip(texts, titles, stored, strict=True)):
        if whole[i]:
            why = name_problem(text, title, name, key)
            if why:
                yield i, why
