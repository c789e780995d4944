"""LanceDB filter expressions from user input (doc ids): SQL literals, escaped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def sql_quote(value: str) -> str:
    """A SQL string literal: single quotes doubled, so user input cannot end the literal."""
    if "\x00" in value:
        raise ValueError(f"doc_id {value!r} contains a NUL character")
    return "'" + value.replace("'", "''") + "'"


def in_filter(column: str, values: Iterable[str], *, negate: bool = False) -> str:
    op = "NOT IN" if negate else "IN"
    return f"{column} {op} (" + ", ".join(sql_quote(v) for v in values) + ")"


def doc_filter(doc_ids: Iterable[str]) -> str:
    return in_filter("doc_id", doc_ids)


def replaced_trees(doc_ids: Iterable[str], tree_ids: dict[str, str]) -> str:
    """The `nodes` rows of DOC_IDS other than their new trees (TREE_IDS: doc_id -> new
    tree id): what storing a batch removes. Both columns have BTREE indexes."""
    doc_ids = list(doc_ids)
    return (f"{doc_filter(doc_ids)} AND "
            f"{in_filter('tree_id', [tree_ids[d] for d in doc_ids], negate=True)}")


def parts(values: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    """Filters stay a few hundred literals long."""
    return [values[k : k + size] for k in range(0, len(values), size)]
