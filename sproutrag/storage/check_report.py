"""What `sproutrag check` found and prints: `Health` (unreadable tables, damaged
documents and indexes, the rows read) and `Report` (one line per problem, notes, a
summary line with the command that mends the database). Made by
`sproutrag.storage.check.check_database`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sproutrag.storage.schema_check import MIGRATE_ADVICE


@dataclass
class Health:
    """What a check found: unreadable tables and damaged documents (id -> why).

    ``trees`` and ``named`` are filled by `check_fallback.check_tables`; `check_database`
    keeps them as arrays (`TreeTable`) and leaves them empty, unless it falls back to
    `check_tables`'s reads (a table that cannot be read, an older schema).
    """

    unreadable: dict[str, str] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)
    indexes: dict[str, str] = field(default_factory=dict)  # "table.index" -> why
    #: Indexes of a kind whose answers are wrong ("table.index" -> why; `WRONG_INDEXES`).
    wrong_indexes: dict[str, str] = field(default_factory=dict)
    #: Tables of an older schema version (name -> version): an index run migrates them.
    old_schemas: dict[str, str] = field(default_factory=dict)
    n_documents: int = 0
    n_nodes: int = 0
    trees: dict[str, dict[str, int]] = field(default_factory=dict)  # doc -> tree -> rows
    named: dict[str, str] = field(default_factory=dict)  # doc -> its documents row's tree


@dataclass
class Report:
    """What `sproutrag check` prints: one line per problem, notes, a summary line."""

    uri: str
    health: Health
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Trees `tree_check` flagged that `validate_tree` accepts (not printed; a bug if > 0).
    unconfirmed: int = 0
    #: The documents named by a problem line (doc_id -> why): what `index --verify`
    #: re-indexes.
    damaged: dict[str, str] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        h = self.health
        head = f"{self.uri}: {h.n_documents} documents, {h.n_nodes} nodes rows checked: "
        if h.unreadable:  # rows read before a table failed are no check of it
            head = (f"{self.uri}: {h.n_documents} documents, {h.n_nodes} nodes rows read, "
                    f"{' and '.join(sorted(h.unreadable))} unreadable: ")
        if self.healthy:
            return [*self.notes, head + "healthy"]
        if h.unreadable:
            advice = (f"`sproutrag index CORPUS --db {self.uri} --full` rebuilds the "
                      "database from the corpus (moving the damaged tables aside)")
        elif h.old_schemas:
            advice = MIGRATE_ADVICE.format(uri=self.uri)
            if len(self.problems) > len(h.old_schemas):
                advice += "; then check it again"
        elif h.documents or len(self.problems) > len(h.indexes) + len(h.wrong_indexes):
            advice = (f"`sproutrag index CORPUS --db {self.uri} --verify` re-indexes the "
                      "damaged documents")
        elif h.indexes:
            advice = (f"the next `sproutrag index CORPUS --db {self.uri}` rebuilds the "
                      "damaged indexes (derived data: nothing is lost)")
        else:
            advice = (f"the next `sproutrag index CORPUS --db {self.uri}` drops them "
                      "(derived data: nothing is lost; it builds its own indexes)")
        n = len(self.problems)
        return [*self.problems, *self.notes,
                head + f"{n} problem{'s' if n > 1 else ''} found: {advice}"]
