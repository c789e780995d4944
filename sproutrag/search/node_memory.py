"""The current nodes of `nodes` held in memory while the table is small (a `FirstStage`'s
`memory_rows`): their documents and L2-normalised vectors, ranked exactly by a matrix
product (`top_rows`), and the current leaves by row id, which name the documents of
full-text hits without reading a row (`LeafRows`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from sproutrag.search.current import Current


def top_rows(q: np.ndarray, vecs: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Negated scores Q @ VECS.T (questions, rows) and, per question, the TOP best rows
    (any order). When torch is already imported (a batch encoded by it), the product
    runs on torch's thread pool: numpy's BLAS starts threads of its own that keep
    spinning after a product and slow torch's next forward on a small machine (2 cores:
    1.6-1.7x the encoder's time in a batch); no import is made for it."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with torch.inference_mode():
            scores_t = torch.from_numpy(q) @ torch.from_numpy(vecs).T
            best = torch.topk(scores_t, top, dim=1, sorted=False).indices.numpy()
        return -scores_t.numpy(), best
    scores = -(q @ vecs.T)  # rows contiguous: argpartition along them
    return scores, np.argpartition(scores, top - 1, axis=1)[:, :top]


#: Rows normalised at a time by `read_node_rows` (a 12 MB temporary at 384 dimensions).
NORM_ROWS = 8192


def read_node_rows(nodes: Any, current: Current, versions: tuple[int, int], dim: int
                   ) -> NodeRows:
    """The rows of NODES (a LanceDB table of DIM-wide vectors) that belong to CURRENT's
    trees, read whole: their documents, normalised vectors and leaves, tagged VERSIONS.
    The vectors are copied once (each copy of 300k rows cost 1.3-1.5 s and 440 MB on a
    2-core machine: the first query at 10^5 documents took 6.5 s and 2.7 GB)."""
    import pyarrow.compute as pc

    data = (nodes.search().select(["doc_id", "tree_id", "left", "vector"])
            .with_row_id(True).limit(None).to_arrow())
    keep = pc.is_in(data["tree_id"], current.tree_ids)
    if not pc.all(keep).as_py():  # rows outside the current trees (a run writing)
        data = data.filter(keep)
    vecs = np.empty((data.num_rows, dim), np.float32)  # the one copy of the vectors
    at = 0
    for chunk in data.column("vector").chunks:
        part = chunk.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        vecs[at : at + len(part)] = part
        at += len(part)
    for a in range(0, len(vecs), NORM_ROWS):  # a block's temporary, not the matrix's
        block = vecs[a : a + NORM_ROWS]
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
    docs = np.asarray(data.column("doc_id").to_pylist(), dtype=object)
    leaf = data.column("left").to_numpy() == -1
    return NodeRows(versions, docs, vecs, LeafRows(data.column("_rowid").to_numpy()[leaf],
                                                   docs[leaf]))


class NodeRows(NamedTuple):
    """The current nodes a `FirstStage` holds up to memory_rows (None beyond)."""

    versions: tuple[int, int]  # (nodes version, current trees' version)
    docs: np.ndarray | None = None  # doc id per current node row
    vecs: np.ndarray | None = None  # their L2-normalised vectors
    leaves: LeafRows | None = None  # the current leaves by row id (full-text hits)


class LeafRows:
    """The current leaves of `nodes` by row id: which document a full-text hit is in."""

    def __init__(self, row_ids: np.ndarray, docs: np.ndarray) -> None:
        order = np.argsort(row_ids, kind="stable")
        self.row_ids, self.docs = row_ids[order], docs[order]

    def documents(self, row_ids: np.ndarray) -> list[str]:
        """The documents of ROW_IDS in their order, each once; rows that are not current
        leaves (other trees, internal nodes) dropped."""
        if not len(self.row_ids):
            return []
        at = np.minimum(np.searchsorted(self.row_ids, row_ids), len(self.row_ids) - 1)
        known = self.row_ids[at] == row_ids
        return list(dict.fromkeys(self.docs[at[known]].tolist()))


__all__ = ["LeafRows", "NodeRows", "read_node_rows", "top_rows"]
