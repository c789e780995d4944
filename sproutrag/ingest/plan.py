"""What an index run has to do: the corpus diffed with the database.

`plan_changes` sorts the corpus's documents into new / changed / unchanged and the
indexed ones into deleted / kept (failed to read: their version stays) / held (gone, but
their deletion held back this run); `check_deletions` refuses a mass deletion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sproutrag.documents import Failure, SourceDocument
from sproutrag.errors import MassDeleteError  # noqa: F401 - also importable from here


@dataclass(frozen=True)
class Plan:
    """What an index run has to do, from comparing the corpus with the database."""

    new: list[SourceDocument] = field(default_factory=list)
    changed: list[SourceDocument] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # indexed, failed to read: version stays
    held: list[str] = field(default_factory=list)  # gone, but deletion held back this run
    held_reason: str = ""
    repaired: dict[str, str] = field(default_factory=dict)  # re-indexed: stored copy damaged

    @property
    def to_index(self) -> list[SourceDocument]:
        return self.new + self.changed


def plan_changes(
    docs: Sequence[SourceDocument],
    indexed: dict[str, tuple[str, str]],
    fingerprint: str,
    *,
    full: bool = False,
    failures: Sequence[Failure] = (),
    damaged: Mapping[str, str] | None = None,
) -> Plan:
    """Diff by content hash and index fingerprint; `full` re-indexes everything.

    Only a document really gone from the corpus is deleted: an indexed document that
    failed to read this time keeps its stored version (`kept`). A failure without a
    doc_id (a broken JSONL line) could be any indexed document, so then no document is
    deleted this run (`held`); a folder that could not be listed (`Failure.folder`)
    holds back the deletion of the documents below it. A DAMAGED document (doc_id ->
    why: its stored tree is missing, its stored text does not hash to its content hash)
    is re-indexed as changed even when its corpus copy is unchanged (`repaired`).
    """
    damaged = damaged or {}
    new, changed, unchanged = [], [], []
    for doc in docs:
        stored = indexed.get(doc.doc_id)
        if stored is None:
            new.append(doc)
        elif full or stored != (doc.content_hash, fingerprint) or doc.doc_id in damaged:
            changed.append(doc)
        else:
            unchanged.append(doc.doc_id)
    repaired = {d.doc_id: damaged[d.doc_id] for d in changed if d.doc_id in damaged}
    failed = {f.doc_id for f in failures if f.doc_id_known}
    missing = set(indexed) - {d.doc_id for d in docs}
    gone, kept = sorted(missing - failed), sorted(missing & failed)
    anonymous = [f for f in failures if not f.doc_id_known and f.folder is None]
    folders = tuple(f.folder for f in failures if f.folder is not None)
    held = gone if anonymous else [d for d in gone if folders and d.startswith(folders)]
    if not held:
        return Plan(new, changed, unchanged, gone, kept, repaired=repaired)
    if anonymous:
        reason = (
            f"deletions held back: {len(anonymous)} corpus entries failed before their "
            f"doc_id was known ({', '.join(f.doc_id for f in anonymous[:5])}), so "
            f"{len(held)} indexed documents missing from the corpus are kept this run"
        )
    else:
        reason = (
            f"deletions held back: {len(held)} indexed documents below folders that could "
            f"not be listed ({', '.join(folders[:5])}) are kept this run"
        )
    held_set = set(held)
    deleted = [d for d in gone if d not in held_set]
    return Plan(new, changed, unchanged, deleted, kept, held, reason, repaired)


def check_deletions(
    plan: Plan, n_indexed: int, *, corpus: str, max_share: float, allow: bool
) -> None:
    """Refuse (MassDeleteError) a run that would delete more than `max_share` of the
    indexed documents, or any of them when the corpus yields no document at all."""
    n = len(plan.deleted)
    if allow or n == 0:
        return
    empty = not (plan.new or plan.changed or plan.unchanged or plan.kept)
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
