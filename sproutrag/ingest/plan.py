"""What an index run has to do: the corpus listing diffed with the stored documents.

`plan_changes` compares the listing (`ingest.corpus.list_corpus`: no text read, JSONL
lines hashed) with the stored state (`Store.stored_state`: the small columns of
`documents`, never the texts) in one vectorised join, and sorts:

* **unchanged without reading**: stored with the run's fingerprint and either the same
  content and metadata hashes and the same line (a JSONL line: its `source` names it)
  or, on the listing's fast path, the same size and modification time (a file) or the
  same size and ETag (an S3 object) as stored;
* **to read** (`Plan.to_read`): everything else. Once read, a document is new, changed,
  or unchanged after all (its hash is the stored one: only its listing facts and
  metadata are updated, `Plan.restat`): `Plan.verdict`;
* **deleted**: stored but not listed; **kept**: stored, listed as a failure (its
  indexed version stays); **held**: gone, but their deletion is held back this run (a
  JSONL line without a doc_id could be any of them; a folder that could not be listed
  holds back the documents below it).

`check_deletions` refuses a mass deletion. A DAMAGED document (doc_id -> why: its stored
tree is missing or incomplete, its stored text does not hash to its content hash) is
read and re-indexed whatever its listing says; `full` re-reads and re-indexes
everything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sproutrag.documents import Failure, SourceDocument
from sproutrag.errors import (
    CorpusNotFoundError,
    MassDeleteError,  # noqa: F401 - also importable from here
)
from sproutrag.ingest.sources import Listed, listed_rows, listed_table

Verdict = Literal["new", "changed", "unchanged"]


@dataclass(frozen=True, slots=True)
class StoredDoc:
    """What `documents` holds of a document the run reads (for `Plan.verdict`)."""

    content_hash: str
    fingerprint: str
    size: int | None
    modified_at: datetime | None
    etag: str | None
    metadata_hash: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class Plan:
    """What an index run has to do (see the module docstring)."""

    fingerprint: str
    to_read: list[Listed] = field(default_factory=list)
    stored: dict[str, StoredDoc] = field(default_factory=dict)  # of the docs to read
    n_unchanged: int = 0  # unchanged, decided without reading
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # stored, failed to list: version stays
    held: list[str] = field(default_factory=list)  # gone, but deletion held back this run
    held_reason: str = ""
    damaged: dict[str, str] = field(default_factory=dict)  # re-indexed: stored copy damaged
    full: bool = False
    n_listed: int = 0
    n_indexed: int = 0

    def verdict(self, doc: SourceDocument) -> Verdict:
        """DOC (read) is new, changed (its text, the fingerprint, damage or a full run),
        or unchanged after all."""
        stored = self.stored.get(doc.doc_id)
        if stored is None:
            return "new"
        if (self.full or doc.doc_id in self.damaged or stored.fingerprint != self.fingerprint
                or stored.content_hash != doc.content_hash):
            return "changed"
        return "unchanged"

    def other_settings(self) -> dict[str, int]:
        """Fingerprint -> how many documents to read are stored under it, for each one
        that is not this run's (they are re-indexed whatever their text)."""
        return dict(Counter(s.fingerprint for s in self.stored.values()
                            if s.fingerprint != self.fingerprint))

    def restat(self, doc: SourceDocument) -> bool:
        """Whether an unchanged DOC's listing facts differ from the stored ones (so the
        run updates them, and the next run's fast path holds)."""
        s = self.stored[doc.doc_id]
        return ((doc.size, doc.modified_at, doc.etag, doc.metadata_hash, doc.source)
                != (s.size, s.modified_at, s.etag, s.metadata_hash, s.source))


def _same(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Element-wise equality, null (unknown) counting as different."""
    return pc.fill_null(pc.equal(a, b), False)


def _unchanged(listed: pa.Table, mine: pa.Table, fingerprint: str, *, fast_path: bool
               ) -> pa.Array:
    """Rows of LISTED that need no reading (see the module docstring); MINE: the stored
    row of each (`StoredDoc` columns, nulls where not stored)."""
    same_fp = _same(mine["index_fingerprint"], pa.scalar(fingerprint))
    same_meta = pc.or_(_same(listed["meta_hash"], mine["metadata_hash"]),
                       pc.and_(pc.is_null(listed["meta_hash"]),
                               pc.is_null(mine["metadata_hash"])))
    same_hash = pc.and_(_same(listed["content_hash"], mine["content_hash"]), same_meta)
    if not fast_path:
        return pc.and_(same_fp, same_hash)
    same_size = _same(listed["size"], mine["source_size"])
    same_time = pc.or_(_same(listed["modified_at"], mine["modified_at"]),
                       _same(listed["etag"], mine["source_etag"]))
    listing_says = pc.and_(pc.is_null(listed["content_hash"]),
                           pc.and_(same_size, same_time))
    return pc.and_(same_fp, pc.or_(same_hash, listing_says))


#: The stored columns a `StoredDoc` holds, in its fields' order.
_STORED = ["content_hash", "index_fingerprint", "source_size", "modified_at", "source_etag",
           "metadata_hash", "source"]


def plan_changes(
    listed: pa.Table | Sequence[Listed],
    stored: pa.Table,
    fingerprint: str,
    *,
    full: bool = False,
    fast_path: bool = True,
    failures: Sequence[Failure] = (),
    damaged: Mapping[str, str] | None = None,
    sources: pa.Array | pa.ChunkedArray | None = None,
) -> Plan:
    """Diff the listed documents (a `sources.LISTED_SCHEMA` table, or `Listed` items) with
    STORED (`Store.stored_state`); see the module docstring. FAST_PATH: trust the
    listing's size and modification time / ETag. SOURCES: where each listed document is
    now (`CorpusListing.line_sources`: a JSONL line's number), when it can move: a
    document whose stored `source` differs is read, so its listing columns are updated
    (not re-encoded when its text is unchanged). Vectorised: each listed doc_id is looked
    up in the stored ones (a hash lookup, no join); Python objects are made only for the
    documents to read."""
    damaged = dict(damaged or {})
    if not isinstance(listed, pa.Table):
        listed = listed_table(listed)
    stored_ids = stored["doc_id"].combine_chunks()
    at = pc.index_in(listed["doc_id"], value_set=stored_ids)  # null: not stored
    mine = stored.select(_STORED).take(at)
    if full:
        keep = pa.array(np.zeros(listed.num_rows, dtype=bool))
    else:
        keep = _unchanged(listed, mine, fingerprint, fast_path=fast_path)
        if sources is not None:
            keep = pc.and_(keep, _same(sources, mine["source"]))
        if damaged:
            keep = pc.and_(keep, pc.invert(pc.is_in(
                listed["doc_id"], value_set=pa.array(list(damaged), pa.string()))))
    rows = pc.indices_nonzero(pc.invert(keep)).to_pylist()
    to_read = listed_rows(listed, rows)
    known = mine.take(pa.array(rows, pa.int64())).to_pydict()
    stored_docs = {item.doc_id: StoredDoc(*values) for item, values in
                   zip(to_read, zip(*(known[c] for c in _STORED)))
                   if values[1] is not None}
    listed_ids = listed["doc_id"].combine_chunks()
    gone = pc.filter(stored_ids, pc.invert(pc.is_in(stored_ids, value_set=listed_ids)))
    deleted, kept, held, reason = _deletions(sorted(gone.to_pylist()), failures)
    return Plan(fingerprint, to_read, stored_docs, listed.num_rows - len(rows), deleted, kept,
                held, reason, damaged, full, listed.num_rows, stored.num_rows)


def _deletions(missing: list[str], failures: Sequence[Failure]
               ) -> tuple[list[str], list[str], list[str], str]:
    """(deleted, kept, held, why held) of the stored documents MISSING from the listing.

    Only a document really gone from the corpus is deleted: a stored document that failed
    to list this time keeps its stored version (kept). A failure without a doc_id (a
    broken JSONL line) could be any stored document, so then none is deleted this run
    (held); a folder that could not be listed (`Failure.folder`) holds back the deletion
    of the documents below it."""
    failed = {f.doc_id for f in failures if f.doc_id_known}
    gone = [d for d in missing if d not in failed]
    kept = [d for d in missing if d in failed]
    anonymous = [f for f in failures if not f.doc_id_known and f.folder is None]
    folders = tuple(f.folder for f in failures if f.folder is not None)
    held = gone if anonymous else [d for d in gone if folders and d.startswith(folders)]
    if not held:
        return gone, kept, [], ""
    if anonymous:
        reason = (
            f"deletions held back: {len(anonymous)} corpus entries failed before their "
            f"doc_id was known ({_first_five([f.doc_id for f in anonymous])}), so "
            f"{len(held)} indexed documents missing from the corpus are kept this run"
        )
    else:
        reason = (
            f"deletions held back: {len(held)} indexed documents below folders that could "
            f"not be listed ({_first_five(list(folders))}) are kept this run"
        )
    held_set = set(held)
    return [d for d in gone if d not in held_set], kept, held, reason


#: A run deleting at least this share of the indexed documents (and 10 or more) says so.
NOTED_DELETE_SHARE = 0.1


def deletion_note(plan: Plan, n_indexed: int, max_share: float) -> str | None:
    """What a run that deletes many documents (`NOTED_DELETE_SHARE`, not enough for
    `check_deletions` to refuse it) says: a folder that vanished (an unmounted share)
    looks like deleted documents."""
    n = len(plan.deleted)
    if n < 10 or n < NOTED_DELETE_SHARE * n_indexed:
        return None
    return (f"{n} of {n_indexed} indexed documents ({n / n_indexed:.0%}) are missing from "
            f"the corpus and were deleted (a run refuses more than pipeline.max_delete_share "
            f"= {max_share:.0%}); if a folder or share of the corpus was missing, the next "
            "run with it back indexes them again")


def check_deletions(
    plan: Plan, n_indexed: int, *, corpus: str, max_share: float, allow: bool
) -> None:
    """Refuse (MassDeleteError) a run that would delete more than `max_share` of the
    indexed documents, or any of them when the corpus yields no document at all."""
    n = len(plan.deleted)
    if allow or n == 0:
        return
    empty = not (plan.n_listed or plan.kept)
    if not empty and n <= max_share * n_indexed:
        return
    why = (f"the corpus {corpus!r} holds no documents" if empty else
           f"more than pipeline.max_delete_share = {max_share:.0%} of the index")
    raise MassDeleteError(
        f"refusing to delete {n} of {n_indexed} indexed documents missing from the corpus "
        f"({why}); nothing was changed. If the corpus is complete and the deletions are "
        "intended, run again with --allow-mass-delete (flow parameter "
        "allow_mass_delete=true)"
    )


def check_not_empty(plan: Plan, n_failed: int, *, corpus: str, allow: bool) -> None:
    """Refuse (CorpusNotFoundError) a corpus that yields no line at all for a database
    that holds no document: an empty or truncated export, most likely, as a folder with
    no .txt/.md file is a wrong path (a database that holds documents meets
    `check_deletions` instead). ALLOW (`--allow-mass-delete`) takes it as it is."""
    if allow or plan.n_listed or n_failed or plan.n_indexed:
        return
    raise CorpusNotFoundError(
        f"the corpus {corpus!r} holds no documents (an empty file, or blank lines only); "
        "nothing was indexed. Check the path or the export; to index an empty corpus, run "
        "again with --allow-mass-delete")


def _first_five(names: list[str]) -> str:
    """NAMES joined by commas, at most five of them, then how many more."""
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return ", ".join(names[:5]) + more
