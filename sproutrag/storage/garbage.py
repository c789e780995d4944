"""Trees in `nodes` that do not match the stored documents: what an interrupted run left
(trees no document names) and damaged documents (their named tree is missing or
incomplete). `tree_damage` costs the row count of `nodes` when nothing is wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class TreeDamage:
    """Documents whose current tree is missing or incomplete (doc_id -> why) and the
    trees that no document names (tree ids, sorted), from `tree_damage`."""

    damaged: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)


def tree_damage(nodes: Any, stored: pa.Table, *, force: bool = False) -> TreeDamage:
    """Compare NODES (the table, or None) with the current trees of STORED
    (`Store.stored_state`). Reads the row count only, unless the rows differ or FORCE
    (then the `doc_id` and `tree_id` columns of `nodes`: a rollback of `nodes` that
    kept its row count is found only so). A tree no document names is stale, unless its
    document is damaged (a rolled-back `nodes` may hold only an older tree of it: kept
    until the document is re-indexed)."""
    if nodes is None or stored.num_rows == 0:
        return TreeDamage()
    want = pc.subtract(pc.multiply(stored["n_chunks"].cast(pa.int64()), 2), 1)
    if not force and nodes.count_rows() == pc.sum(want).as_py():
        return TreeDamage()
    rows = nodes.search().select(["doc_id", "tree_id"]).limit(None).to_arrow()
    sizes = rows.group_by(["doc_id", "tree_id"]).aggregate([([], "count_all")])
    sizes = sizes.rename_columns(["doc_id", "tree_id", "rows"])
    named = pa.table({"doc_id": stored["doc_id"], "tree_id": stored["tree_id"], "want": want})
    joined = named.join(sizes.drop_columns(["doc_id"]), keys="tree_id",
                        join_type="left outer").to_pydict()
    damaged = {}
    for doc_id, tree_id, n_want, n_got in zip(
            joined["doc_id"], joined["tree_id"], joined["want"], joined["rows"]):
        if n_got != n_want:
            damaged[doc_id] = (f"its tree {tree_id} has no nodes" if not n_got else
                               f"its tree {tree_id} has {n_got} nodes rows, not {n_want}")
    unnamed = sizes.filter(pc.invert(pc.is_in(
        sizes["tree_id"], value_set=stored["tree_id"].combine_chunks())))
    stale = [t for d, t in zip(unnamed["doc_id"].to_pylist(), unnamed["tree_id"].to_pylist())
             if d not in damaged]
    return TreeDamage(damaged, sorted(stale))
