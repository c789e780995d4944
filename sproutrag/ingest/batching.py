"""The documents an index run reads, sorted by the plan and cut into batches sized by work.

`documents_to_index` takes the documents as `read_listed` yields them (one text at a
time), keeps a `Tally` of what they turned out to be (`Plan.verdict`: new, changed, or
unchanged after all, whose listing facts to update) and of the failures, and yields
only those to index. `batches` cuts them into batches of at most `max_chars` characters
(a longer document is a batch of its own) and `max_docs` documents, so a batch of
300-character documents and one of a 300,000-character document cost the encoder and
the store about the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sproutrag.documents import Failure, SourceDocument
from sproutrag.ingest.plan import Plan
from sproutrag.names import MAX_NAME_CHARS


@dataclass
class Tally:
    """What the documents read so far turned out to be."""

    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    restat: list[SourceDocument] = field(default_factory=list)  # first lines of texts only
    failures: list[Failure] = field(default_factory=list)
    repaired: dict[str, str] = field(default_factory=dict)  # damaged, re-indexed now
    retitled: list[str] = field(default_factory=list)  # unchanged, metadata updated in place


def documents_to_index(found: Iterable[SourceDocument | Failure], plan: Plan, tally: Tally
                       ) -> Iterator[SourceDocument]:
    """The new and changed documents of FOUND, in order; the rest is counted in TALLY."""
    for doc in found:
        if isinstance(doc, Failure):
            tally.failures.append(doc)
            continue
        verdict = plan.verdict(doc)
        if verdict == "unchanged":
            tally.unchanged += 1
            if doc.metadata_hash != plan.stored[doc.doc_id].metadata_hash:
                tally.retitled.append(doc.doc_id)
            if plan.restat(doc):
                tally.restat.append(SourceDocument(doc.doc_id, doc.source, _first_line(doc), "",
                                                   doc.size, doc.modified_at, doc.etag,
                                                   doc.title, doc.metadata))
            continue
        (tally.new if verdict == "new" else tally.changed).append(doc.doc_id)
        if doc.doc_id in plan.damaged and verdict == "changed":
            tally.repaired[doc.doc_id] = plan.damaged[doc.doc_id]
        yield doc


def metadata_note(doc_ids: list[str]) -> str:
    """What `runs.message` says of unchanged documents whose metadata (a JSONL line's
    title or other fields) was updated in place: counted as unchanged (their trees stay,
    `indexed_at` too), so a job that follows changes would miss them otherwise."""
    if not doc_ids:
        return ""
    more = f" and {len(doc_ids) - 5} more" if len(doc_ids) > 5 else ""
    return (f"metadata updated in place for {len(doc_ids)} unchanged documents "
            f"({', '.join(doc_ids[:5])}{more})")


def _first_line(doc: SourceDocument) -> str:
    """DOC's first line, all its name (`documents.name`) reads; one too long to be a name
    is cut short with "…" at its end, so it stays too long (cut at a space, it would have
    been stripped to a name: rows `sproutrag check` then found damaged)."""
    line = doc.text.lstrip().split("\n", 1)[0].strip()
    return line if len(line) <= MAX_NAME_CHARS else line[:MAX_NAME_CHARS] + "…"


def batches(docs: Iterable[SourceDocument], *, max_chars: int, max_docs: int
            ) -> Iterator[list[SourceDocument]]:
    """DOCS in order, cut into batches of at most MAX_DOCS documents and MAX_CHARS
    characters (a batch closes before the document that would overflow it; a document
    longer than MAX_CHARS is a batch of its own)."""
    batch: list[SourceDocument] = []
    chars = 0
    for doc in docs:
        if batch and (chars + len(doc.text) > max_chars or len(batch) >= max_docs):
            yield batch
            batch, chars = [], 0
        batch.append(doc)
        chars += len(doc.text)
    if batch:
        yield batch
