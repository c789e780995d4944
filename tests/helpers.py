"""Helpers shared by test modules: paths, corpora on disk, the index's contents, flow and CLI
runs (also without root's permission-bypassing capabilities), toy stores without a model,
old database schemas, named pipes that must not block, valid and damaged trees. Fixtures
live in conftest.py files; processes, ports and servers in tests/processes.py. Test
modules import these, never each other (tests/test_tests.py checks)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sproutrag.trees.tree import Tree, build_tree

#: The repository's root (subprocesses run `python -m sproutrag.flows.cli` there).
ROOT = Path(__file__).resolve().parents[1]
#: The command line as a subprocess runs it (`sproutrag`, without needing the script).
CLI = [sys.executable, "-m", "sproutrag.flows.cli"]
#: The sample corpus the README indexes.
SAMPLE = ROOT / "data" / "sample"
#: Three small documents of the sample corpus (the operations tests index these).
SMALL_DOCS = ("field_notes_river_survey.txt", "nda_harbor_labs.txt", "one_sentence.txt")
#: The ContractNLI dev set (only on the project's machines; the `contractnli` fixture skips).
CONTRACTNLI = ROOT.parent / "shared" / "data" / "contractnli"

#: Run a command as root but without the capabilities that bypass file permissions.
WITHOUT_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]

#: A three-document corpus (a sub folder, .txt and .md) for flow runs.
TEXTS = {
    "a.txt": "The supplier delivers within 30 days. Payment is due in 45 days. "
    "Either party may end the agreement with 90 days notice.",
    "b.md": "# Remote work\n\nStaff may work remotely three days a week. Managers approve it.",
    "sub/c.txt": "Security training is mandatory every year. Records are kept for seven years.",
}

# -- corpora on disk ---------------------------------------------------------------------


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Write FILES ({relative name: text}) under ROOT, making folders; returns ROOT."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def write_jsonl(path: Path, rows: list) -> Path:
    """One line per row: dicts as JSON, strings as they are (to write broken lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def lock_folder(path: Path) -> None:
    """Make PATH unlistable for a process run with WITHOUT_DAC (we are root)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to take away permission-bypassing capabilities")
    for sub in [path, *path.rglob("*")]:
        os.chown(sub, 65534, 65534, follow_symlinks=False)
    path.chmod(0o700)


# -- the index's contents ----------------------------------------------------------------


def indexed(db) -> dict[str, str]:
    """doc_id -> content_hash of the database's documents."""
    from sproutrag.storage.store import Store

    rows = Store.open_existing(str(db)).table("documents").to_arrow().to_pylist()
    return {r["doc_id"]: r["content_hash"] for r in rows}


def texts(db) -> dict[str, str]:
    """doc_id -> the stored text."""
    from sproutrag.storage.store import Store

    rows = Store.open_existing(str(db)).table("documents").to_arrow().to_pylist()
    return {r["doc_id"]: r["text"] for r in rows}


def runs(db) -> list[dict]:
    """The database's `runs` rows, oldest first."""
    from sproutrag.storage.store import Store

    rows = Store.open_existing(str(db)).table("runs").to_arrow().to_pylist()
    return sorted(rows, key=lambda r: r["started_at"])


def index_state(db) -> dict[str, tuple[str, int]]:
    """doc_id -> (content_hash, number of nodes); checks every stored tree, that node ids
    are unique and that no node lies outside the current trees."""
    from sproutrag.storage.store import Store
    from sproutrag.trees.tree import validate_tree

    store = Store.open_existing(str(db))
    docs = store.table("documents").to_arrow().to_pylist()
    ids = store.table("nodes").to_arrow().column("node_id").to_pylist()
    assert len(ids) == len(set(ids)), "duplicate nodes"
    out = {}
    for d in docs:
        tree = store.load_tree(d["doc_id"]).tree
        validate_tree(tree)
        assert tree.n == d["n_chunks"]
        out[d["doc_id"]] = (d["content_hash"], len(tree.left))
    assert sum(n for _, n in out.values()) == len(ids), "nodes without a document"
    return out


# -- flow and CLI runs -------------------------------------------------------------------


def run_flow(corpus, db, **kw):
    """(final state, the run's `runs` row) of one index-corpus flow run; a run that ended
    without a row (a refused run: the database busy, mass deletions) raises its error."""
    from sproutrag.flows.commands import index_result
    from sproutrag.flows.index_corpus import index_corpus

    state = index_corpus(corpus=str(corpus), db=str(db), return_state=True, **kw)
    result = index_result(state, str(db), kw.get("settings"))
    row = getattr(result, "row", result)
    if isinstance(row, BaseException):
        raise row
    return state, row


def run_index(corpus, db, **kw) -> dict:
    """The `runs` row of one index-corpus flow run, also when the flow run ends Failed
    for failed documents (see run_flow)."""
    return run_flow(corpus, db, **kw)[1]


def run_cli(*args: str, prefix: list[str] = (), timeout: float = 300,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`sproutrag ARGS` in a subprocess on the test session's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), **(env_extra or {})}
    return subprocess.run(
        [*prefix, *CLI, *args], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=timeout,
    )


def start_index_cli(corpus, db, env_extra: dict[str, str] | None = None, *,
                    own_server: bool = False, **popen) -> subprocess.Popen:
    """`sproutrag index CORPUS --db DB --no-progress` started in a subprocess (its stdout
    and stderr together in .stdout): on the test session's Prefect server, or with
    OWN_SERVER starting its own temporary server as a user's command does. POPEN goes to
    subprocess.Popen (start_new_session, preexec_fn)."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, **(env_extra or {})}
    if own_server:
        env.pop("PREFECT_API_URL", None)
    else:
        env["PREFECT_API_URL"] = PREFECT_API_URL.value()
    return subprocess.Popen(
        [*CLI, "index", str(corpus), "--db", str(db),
         "--no-progress"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, **popen,
    )


# -- toy stores: real LanceDB tables, random trees, no model -----------------------------

#: The vector size of toy stores and documents.
TOY_DIM = 8
#: The encoder id toy stores record.
TOY_ENCODER = "fake/encoder"


def toy_document(doc_id: str, text: str, seed: int = 0):
    """An IndexedDocument of TEXT with one chunk per space-separated word and a random
    tree (vectors of TOY_DIM, merge order left to right) drawn from SEED."""
    import numpy as np

    from sproutrag.documents import SourceDocument, content_hash
    from sproutrag.storage.store import IndexedDocument
    from sproutrag.trees.tree import build_tree

    spans, pos = [], 0
    for word in text.split(" "):
        spans.append((pos, pos + len(word)))
        pos += len(word) + 1
    n = len(spans)
    rng = np.random.default_rng(seed)
    i = np.arange(n - 1)
    leaves = rng.normal(size=(n, TOY_DIM))  # of unit length, as the encoder's
    leaves /= np.linalg.norm(leaves, axis=1, keepdims=True)
    tree = build_tree(leaves.astype(np.float32), i, i + 1,
                      rng.uniform(0.1, 1, n - 1).astype(np.float32))
    doc = SourceDocument(doc_id, f"mem://{doc_id}", text, content_hash(text))
    return IndexedDocument(doc, np.asarray(spans, dtype=np.int64), tree)


def toy_store(db):
    """A Store at DB for TOY_ENCODER's vectors (created on its first write)."""
    from sproutrag.storage.store import Store

    return Store(str(db), encoder_id=TOY_ENCODER, dim=TOY_DIM)


def toy_encoder(weights, **extra):
    """What the Retriever needs of an encoder to search a toy store by vector: its id,
    dimension and search weights (EXTRA adds attributes)."""
    from types import SimpleNamespace

    return SimpleNamespace(model_id=TOY_ENCODER, dim=TOY_DIM, weights=weights, **extra)


# -- old database schemas ------------------------------------------------------------------

#: The columns schema version 7 added, per table (metadata as a JSON column).
V7_ADDED = {"documents": ["metadata"]}
#: The columns schema version 6 added (the doc_id's key), and later ones.
V6_ADDED = {"documents": ["doc_key", *V7_ADDED["documents"]]}
#: The columns schema version 5 added, and those of later versions, per table.
V5_ADDED = {"documents": ["name", "name_key", *V6_ADDED["documents"]]}
#: The columns schema version 4 added (the listing's facts of a document), and later ones.
V4_ADDED = {"documents": ["source_size", "modified_at", "source_etag", "title", "metadata_json",
                          "metadata_hash", *V5_ADDED["documents"]]}
#: The columns schema version 1 did not have, per table.
V1_DROPPED = {"documents": ["tree_id", *V4_ADDED["documents"]], "nodes": ["tree_id"],
              "runs": ["status", "message", "flow_run_id"]}


def make_schema_3(db: str, version: str = "3", storage_options: dict | None = None) -> None:
    """Make a current database what schema version 3 (or 4 to 6: VERSION) wrote:
    `documents` without the columns later versions added, that metadata version (rows
    and trees as they are)."""
    import lancedb
    import pyarrow as pa

    added = {"3": V4_ADDED, "4": V5_ADDED, "5": V6_ADDED, "6": V7_ADDED}[version]
    conn = lancedb.connect(db, storage_options=storage_options)
    for name in conn.list_tables().tables:
        tbl = conn.open_table(name)
        dropped = [c for c in added.get(name, []) if c in tbl.schema.names]
        if dropped:
            data = tbl.to_arrow().drop_columns(dropped)
            meta = {**data.schema.metadata, b"sproutrag.schema_version": version.encode()}
            schema = pa.schema(list(data.schema), metadata=meta)
            conn.create_table(name, data=data.cast(schema), schema=schema, mode="overwrite")
        else:
            tbl.to_lance().update_schema_metadata({"sproutrag.schema_version": version})


def make_schema_1(db: str, fingerprint: str | None = None) -> None:
    """Rewrite a current database as schema version 1 wrote it (the columns it lacked
    dropped, `runs.finished_at` not nullable, metadata version 1; optionally the
    documents' index fingerprint, which included the schema version)."""
    import lancedb
    import pyarrow as pa

    conn = lancedb.connect(db)
    if "index_settings" in conn.list_tables().tables:  # new in version 3
        conn.drop_table("index_settings")
    for name, dropped in V1_DROPPED.items():
        data = conn.open_table(name).to_arrow().drop_columns(dropped)
        if fingerprint and name == "documents":
            column = pa.array([fingerprint] * data.num_rows, pa.string())
            data = data.set_column(data.schema.get_field_index("index_fingerprint"),
                                   "index_fingerprint", column)
        fields = [f.with_nullable(False) if f.name == "finished_at" else f
                  for f in data.schema]
        meta = {**data.schema.metadata, b"sproutrag.schema_version": b"1"}
        schema = pa.schema(fields, metadata=meta)
        conn.create_table(name, data=data.cast(schema), schema=schema, mode="overwrite")


# -- named pipes ---------------------------------------------------------------------------


@contextmanager
def unblock_fifo_after(path: Path, seconds: float) -> Iterator[threading.Event]:
    """If something still waits to read the named pipe PATH after SECONDS, open and close
    its writing end so the reader gets end of file (the test then fails, not hangs); the
    event says whether that was needed."""
    fired, done = threading.Event(), threading.Event()

    def watch() -> None:
        while not done.wait(seconds):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                fired.set()
            except OSError:  # no reader waiting (ENXIO), or the pipe is gone
                pass

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield fired
    finally:
        done.set()
        thread.join()


def line_document(doc_id: str, lines: list[str], vectors):
    """An IndexedDocument whose leaves are LINES (one each) with VECTORS (n x dim)."""
    import numpy as np

    from sproutrag.documents import SourceDocument, content_hash
    from sproutrag.storage.store import IndexedDocument
    from sproutrag.trees.tree import build_tree

    text = "\n".join(lines)
    spans, pos = [], 0
    for line in lines:
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    n = len(lines)
    i = np.arange(n - 1)
    tree = build_tree(vectors.astype(np.float32), i, i + 1, np.full(n - 1, 0.5, np.float32))
    return IndexedDocument(SourceDocument(doc_id, f"mem://{doc_id}", text, content_hash(text)),
                           np.asarray(spans, np.int64), tree)


def opening_tree(doc_id: str, title: str, opening: str, later: str, leaves: int = 20):
    """A StoredTree of LEAVES one-line units: TITLE, OPENING (within its opening), filler,
    LATER last (past the opening's 300 characters); toy vectors."""
    import numpy as np

    from sproutrag.storage.rows import StoredTree

    lines = ([title, opening] + [f"Paragraph {i} covers other matters." for i in
                                 range(leaves - 3)] + [later])
    doc = line_document(doc_id, lines, leaf_vectors(np.random.default_rng(len(doc_id)),
                                                    0.5, leaves, TOY_DIM))
    return StoredTree(doc_id, doc.tree, doc.spans, lines)


def answering_document(rng, doc_id: str, lines: list[str], later: str, match: float,
                       leaves: int = 20):
    """An IndexedDocument of LEAVES one-line units: LINES (three: a title, an opening and
    the unit that answers, of cosine about MATCH with the first axis), filler, LATER last
    (RNG: numpy's, for the toy vectors)."""
    import numpy as np

    text = (list(lines) + [f"Paragraph {i} covers other matters." for i in range(leaves - 4)]
            + [later])
    vectors = np.vstack([leaf_vectors(rng, 0.3, 2, TOY_DIM), leaf_vectors(rng, match, 1, TOY_DIM),
                         leaf_vectors(rng, 0.1, leaves - 3, TOY_DIM)])
    return line_document(doc_id, text, vectors)


def leaf_vectors(rng, cosine: float, n: int, dim: int):
    """N unit vectors of cosine about COSINE with the first axis (RNG: numpy's)."""
    import numpy as np

    noise = rng.normal(size=(n, dim - 1))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    return np.hstack([np.full((n, 1), cosine), np.sqrt(1 - cosine**2) * noise])


def line_pool(db, docs: list, lookalikes: int = 0, rng=None) -> tuple[str, Any]:
    """Write DOCS (`line_document`s) and LOOKALIKES documents "Harbor Works i" (leaf
    cosine 0.6 with the first axis, drawn from RNG) to a toy store at DB; returns (its
    uri, a toy encoder whose weights keep every leaf: threshold -1)."""
    import numpy as np

    from sproutrag.encoder.weights import TrainedWeights
    from sproutrag.params import SearchParams

    docs = docs + [line_document(f"look{i}", [f"Harbor Works {i}", f"Harbor Works {i} ships."],
                                 leaf_vectors(rng, 0.6, 2, TOY_DIM))
                   for i in range(lookalikes)]
    store = toy_store(db)
    store.write(docs, "fp")
    weights = TrainedWeights(np.zeros((1, 1), np.float32), SearchParams(threshold=-1.0))
    return store.uri, toy_encoder(weights)


# --------------------------------------------------------------------------- trees


def random_relations(n: int, kind: str, values: str, seed: int):
    """(i, j, m) with random direction and a few duplicates."""
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    if kind == "banded":
        width = int(rng.integers(1, 6))
        pairs = [(a, b) for a, b in pairs if b - a <= width and rng.random() < 0.8]
    elif kind == "sparse":
        pairs = [p for p in pairs if rng.random() < 0.15]
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(arr):
        arr = np.concatenate([arr, arr[rng.random(len(arr)) < 0.1]])  # duplicates
    flip = rng.random(len(arr)) < 0.5
    arr[flip] = arr[flip][:, ::-1]
    if values == "ties":
        m = rng.choice([0.0, 0.25, 0.5, 1.0], size=len(arr))
    else:
        m = rng.uniform(1e-3, 1.0, size=len(arr))
    return arr[:, 0].copy(), arr[:, 1].copy(), m


def good_tree() -> Tree:
    i, j, m = random_relations(12, "banded", "continuous", 3)
    return build_tree(np.random.default_rng(3).normal(size=(12, 4)), i, j, m)


def damaged(tree: Tree, col: str, index, value) -> Tree:
    arr = getattr(tree, col).copy()
    arr[index] = value
    return dataclasses.replace(tree, **{col: arr})


def reuse_child(t: Tree) -> Tree:
    """Make the root's left child one that another node already uses (keeping left < right)."""
    c = min(c for c in t.left[t.n : t.root] if c != t.left[t.root])
    assert c < t.right[t.root]
    return damaged(t, "left", t.root, c)


DAMAGE = {
    "used as a child 2 times": reuse_child,
    "before it exists": lambda t: damaged(t, "right", 12, 13),
    "n_leaves": lambda t: damaged(t, "n_leaves", t.root, 11),
    "do not tile": lambda t: damaged(
        damaged(t, "leaf_start", t.left[t.root], 1), "leaf_end", t.left[t.root],
        t.leaf_end[t.left[t.root]] + 1),
    "has parent": lambda t: damaged(t, "parent", 0, -1),
    "non-finite": lambda t: damaged(t, "vectors", (t.root, 1), np.nan),
    "height": lambda t: damaged(t, "height", t.root, 99),
    "leaf_order": lambda t: damaged(t, "leaf_order", 0, t.leaf_order[1]),
    "merge_sim": lambda t: damaged(t, "merge_sim", 0, 0.5),
    "int32": lambda t: dataclasses.replace(t, left=t.left.astype(np.int64)),
    "shape": lambda t: dataclasses.replace(t, vectors=t.vectors[:-1]),
    "left .* >= right": lambda t: damaged(
        damaged(t, "left", t.root, t.right[t.root]), "right", t.root, t.left[t.root]),
}
