"""Tests of sproutrag.storage.tree_check and `check_database`'s use of it: every tree
checked at once must report exactly what the per-document check (`Store.load_tree` +
`validate_tree`, kept here as the reference) reports, with the same messages, for random
trees damaged through LanceDB in each way `validate_tree` checks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sproutrag.documents import SourceDocument, content_hash
from sproutrag.storage.check import Report, _note_debris, check_database
from sproutrag.storage.check_fallback import check_tables
from sproutrag.storage.rows import IndexedDocument, node_rows, stored_tree
from sproutrag.storage.store import Store
from sproutrag.storage.tree_check import read_nodes
from sproutrag.storage.vector_check import vector_problem
from sproutrag.trees.tree import build_tree
from tests.helpers import TOY_DIM, toy_store

PER_KIND = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORDS = ("alpha", "be", "cedar", "delta", "e", "fjord", "gamma", "hive", "iris", "jolt")

# --------------------------------------------------------------------------- reference


def reference_check(uri: str) -> Report:
    """`check_database` as it was: the start-of-run reads of every column, then one
    `Store.load_tree` per intact document (validate_tree) and its leaf texts."""
    health = check_tables(uri, None)
    report = Report(uri, health)
    report.problems += [f"table {n!r} cannot be read: {why}"
                        for n, why in health.unreadable.items()]
    report.problems += [f"document {d!r}: {why}" for d, why in sorted(health.documents.items())]
    if not {"documents", "nodes"} & set(health.unreadable):
        store = Store.open_existing(uri)
        docs = store.table("documents").search().select(["doc_id", "tree_id", "text"])
        for row in docs.limit(None).to_arrow().to_pylist():
            if row["doc_id"] not in health.documents:
                problem = reference_tree_problem(store, **row)
                if problem:
                    report.problems.append(f"document {row['doc_id']!r}: {problem}")
    _note_debris(report, True)
    return report


def reference_tree_problem(store: Store, doc_id: str, tree_id: str, text: str) -> str | None:
    try:
        with np.errstate(invalid="ignore"):  # a null span: stored_tree casts NaN
            stored = store.load_tree(doc_id, tree_id)
    except (ValueError, KeyError) as exc:
        return f"its tree {tree_id} is invalid: {exc}"
    node = reference_vector_disagreement(stored.tree)
    if node is not None:
        return vector_problem(tree_id, node, 2 * stored.tree.n - 1)
    for i, ((s, e), leaf) in enumerate(zip(stored.spans.tolist(), stored.texts)):
        if text[s:e] != leaf:
            return f"leaf {i} of its tree {tree_id} is not the text at {s}-{e}"
    return None


def reference_vector_disagreement(tree) -> int | None:
    """The first node whose whole vector is not of unit length (a leaf) or not the mean
    (plain or leaf-weighted) of its children's, node by node; None if every one agrees."""
    v, n = tree.vectors.astype(np.float64), tree.n
    for k in range(2 * n - 1):
        if k < n:
            if abs(np.linalg.norm(v[k]) - 1) > 1e-4:
                return k
            continue
        a, b = int(tree.left[k]), int(tree.right[k])
        na, nb = int(tree.n_leaves[a]), int(tree.n_leaves[b])
        means = ((v[a] + v[b]) / 2, (na * v[a] + nb * v[b]) / (na + nb))
        if min(np.abs(v[k] - m).max() for m in means) > 1e-6:
            return k
    return None


# --------------------------------------------------------------------------- trees


def random_document(doc_id: str, n: int, rng: np.random.Generator) -> IndexedDocument:
    """N words of varied text, one leaf per word, a tree from random sparse relations."""
    words = [str(rng.choice(WORDS)) * int(rng.integers(1, 3)) for _ in range(n)]
    text = " ".join(words)
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
    spans = np.stack([starts, starts + [len(w) for w in words]], axis=1).astype(np.int64)
    pairs = np.asarray([(a, b) for a in range(n) for b in range(a + 1, n)
                        if rng.random() < 0.6], dtype=np.int64).reshape(-1, 2)
    leaves = rng.normal(size=(n, TOY_DIM))  # of unit length, as the encoder's
    leaves /= np.linalg.norm(leaves, axis=1, keepdims=True)
    tree = build_tree(leaves.astype(np.float32), pairs[:, 0], pairs[:, 1],
                      rng.uniform(0.05, 1, len(pairs)).astype(np.float32),
                      parent_embedding=str(rng.choice(["mean_of_children", "size_weighted"])))
    return IndexedDocument(SourceDocument(doc_id, f"mem://{doc_id}", text,
                                          content_hash(text)), spans, tree)


def written(sizes: list[int], seed: int) -> list[IndexedDocument]:
    """Documents 'doc 0', 'doc 1', ... of SIZES leaves, drawn from SEED."""
    rng = np.random.default_rng(seed)
    return [random_document(f"doc {k}", n, rng) for k, n in enumerate(sizes)]


def stored_database(folder: Path, documents: list[IndexedDocument]) -> Store:
    store = toy_store(folder / "db")
    store.write(documents, "fp")
    return store


# --------------------------------------------------------------------------- damage

#: Damage that needs an internal node (a tree of 2 leaves or more).
INNER = ("swap_children", "other_child", "inner_merge_sim", "nested_range", "swap_leaf_start")
KINDS = (*INNER, "parent", "n_leaves", "height", "leaf_range", "leaf_start_out", "inf_vector",
         "nan_vector", "changed_vector", "leaf_merge_sim", "missing_row", "duplicate_idx",
         "replace_row", "leaf_text", "null_text", "leaf_span", "null_span", "doc_text",
         "stale_tree")
#: Damage that may leave a tree `validate_tree` accepts (reported or not, alike).
MAYBE_HARMLESS = ("duplicate_idx", "stale_tree", "null_span", "leaf_span")


def damage(store: Store, target: IndexedDocument, kind: str, rng) -> None:
    """Damage TARGET's stored tree (or its documents row) in the way KIND names, through
    LanceDB (`update`, `delete`, `add`; a NaN vector through the table's Lance dataset,
    which LanceDB's `add` refuses)."""
    nodes, doc_id, n = store.table("nodes"), target.doc.doc_id, target.tree.n
    tree_id = store.table("documents").search().where(f"doc_id = '{doc_id}'").limit(1)
    tree_id = tree_id.to_list()[0]["tree_id"]
    total, col = 2 * n - 1, {c: getattr(target.tree, c) for c in (
        "left", "right", "parent", "n_leaves", "height", "leaf_start", "leaf_end")}

    def at(i: int) -> str:
        return f"tree_id = '{tree_id}' AND idx = {i}"

    def rows(where: str) -> pa.Table:
        return nodes.search().where(where).limit(None).to_arrow()

    if n == 1 and kind in (*INNER, "replace_row"):
        kind = "n_leaves"
    node, leaf, inner = (int(rng.integers(0, total)), int(rng.integers(0, n)),
                         int(rng.integers(n, total)) if n > 1 else 0)
    if kind == "swap_children":
        nodes.update(where=at(inner), values={"left": int(col["right"][inner]),
                                              "right": int(col["left"][inner])})
    elif kind == "other_child":
        other = int(rng.choice([v for v in range(-1, total + 1) if v != col["left"][inner]]))
        nodes.update(where=at(inner), values={"left": other})
    elif kind == "parent":
        other = int(rng.choice([v for v in range(-2, total + 1) if v != col["parent"][node]]))
        nodes.update(where=at(node), values={"parent": other})
    elif kind in ("n_leaves", "height"):
        nodes.update(where=at(node), values={kind: int(col[kind][node]) + int(
            rng.choice([-1, 1, 2**31 - 1 - int(col[kind][node])]))})
    elif kind == "leaf_range":
        name = str(rng.choice(["leaf_start", "leaf_end"]))
        nodes.update(where=at(node), values={name: int(col[name][node]) + 1})
    elif kind == "nested_range":  # both ends moved: the size stays, the nesting breaks
        nodes.update(where=at(inner), values={"leaf_start": int(col["leaf_start"][inner]) + 1,
                                              "leaf_end": int(col["leaf_end"][inner]) + 1})
    elif kind == "leaf_start_out":
        nodes.update(where=at(leaf), values={"leaf_start": int(rng.choice([-1, n, 2**31 - 1]))})
    elif kind == "swap_leaf_start":
        a, b = rng.choice(n, size=2, replace=False).tolist()
        nodes.update(where=at(a), values={"leaf_start": int(col["leaf_start"][b])})
        nodes.update(where=at(b), values={"leaf_start": int(col["leaf_start"][a])})
    elif kind == "inf_vector":
        nodes.update(where=at(node), values_sql={"vector": "[" + ", ".join(
            ["1e39"] + ["0"] * (TOY_DIM - 1)) + "]"})
    elif kind == "nan_vector":
        row = rows(at(node))
        values = row.column("vector").combine_chunks().flatten().to_numpy().copy()
        values[int(rng.integers(0, TOY_DIM))] = np.nan
        row = row.set_column(row.schema.get_field_index("vector"), row.schema.field("vector"),
                             pa.FixedSizeListArray.from_arrays(pa.array(values), TOY_DIM))
        nodes.delete(at(node))
        nodes.to_lance().insert(row)
        nodes.checkout_latest()
    elif kind == "changed_vector":  # a finite value changed in place (a disk fault)
        values = rows(at(node)).column("vector").combine_chunks().flatten().to_numpy().copy()
        values[int(rng.integers(0, TOY_DIM))] += float(rng.choice([-0.5, 0.25, 2.0]))
        nodes.update(where=at(node), values={"vector": values.tolist()})
    elif kind == "leaf_merge_sim":
        nodes.update(where=at(leaf), values={"merge_sim": 0.5})
    elif kind == "inner_merge_sim":
        nodes.update(where=at(inner), values_sql={"merge_sim": str(rng.choice(["NULL",
                                                                                 "'NaN'"]))})
    elif kind == "missing_row":
        nodes.delete(at(node))
    elif kind == "duplicate_idx":
        nodes.update(where=at(node), values={"idx": int(rng.integers(0, total))})
    elif kind == "replace_row":  # one row gone, another twice: the count is right
        copy = rows(at((node + int(rng.integers(1, total))) % total))
        nodes.delete(at(node))
        nodes.add(copy)
    elif kind == "leaf_text":
        nodes.update(where=at(leaf), values={"text": str(rng.choice(WORDS)) + "!"})
    elif kind == "null_text":
        nodes.update(where=at(leaf), values={"text": None})
    elif kind in ("leaf_span", "null_span"):
        name = str(rng.choice(["start", "end"]))
        if kind == "null_span":
            nodes.update(where=at(leaf), values_sql={name: "NULL"})
        else:
            nodes.update(where=at(leaf), values={name: int(target.spans[leaf][int(name == "end")])
                                                 + int(rng.choice([-1, 1]))})
    elif kind == "doc_text":
        store.table("documents").update(where=f"doc_id = '{doc_id}'", values={"text": "x"})
    elif kind == "stale_tree":
        copy = rows(f"tree_id = '{tree_id}'")
        copy = copy.set_column(copy.schema.get_field_index("tree_id"), "tree_id",
                               pa.array(["0123456789abcdef"] * copy.num_rows))
        nodes.add(copy.cast(nodes.schema))
    else:
        raise AssertionError(kind)


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("kind", KINDS)
@PER_KIND
@given(sizes=st.lists(st.integers(1, 7), min_size=1, max_size=5), pick=st.integers(0, 4),
       seed=st.integers(0, 2**32 - 1))
def test_damaged_trees_are_reported_as_the_per_document_check_reports_them(
        kind, sizes, pick, seed):
    with tempfile.TemporaryDirectory() as tmp:
        documents = written(sizes, seed)
        store = stored_database(Path(tmp), documents)
        target = pick % len(sizes)
        damage(store, documents[target], kind, np.random.default_rng(seed))
        report, reference = check_database(store.uri), reference_check(store.uri)
        assert report.lines() == reference.lines()
        assert report.unconfirmed == 0
        if kind not in MAYBE_HARMLESS:
            assert not report.healthy
            assert any(p.startswith(f"document 'doc {target}': ") for p in report.problems)


def test_a_healthy_database_of_many_trees_checks_healthy(tmp_path):
    rng = np.random.default_rng(7)
    sizes = [1, 2, *rng.integers(1, 12, size=300).tolist()]
    store = stored_database(tmp_path, written(sizes, seed=7))
    seen: list[tuple[int, int]] = []
    report = check_database(store.uri, progress=lambda done, total: seen.append((done, total)))
    assert report.healthy and report.unconfirmed == 0 and report.notes == []
    rows = sum(2 * n - 1 for n in sizes)
    assert report.lines() == reference_check(store.uri).lines()
    assert report.lines()[-1].endswith(f"{len(sizes)} documents, {rows} nodes rows checked: "
                                       "healthy")
    done = [d for d, _ in seen]
    assert done == sorted(done) and seen[-1] == (rows + len(sizes), rows + len(sizes))


def _oracle_rejects(table: pa.Table) -> dict[tuple[str, str], bool]:
    """(doc_id, tree_id) -> `stored_tree` rejects the rows (in table order, sorted by idx)."""
    out = {}
    keys = list(zip(table.column("doc_id").to_pylist(), table.column("tree_id").to_pylist()))
    for key in dict.fromkeys(keys):
        mask = pa.array([k == key for k in keys])
        try:
            stored_tree(key[0], table.filter(mask).sort_by("idx"))
            out[key] = False
        except (ValueError, KeyError):
            out[key] = True
    return out


COLUMN_DAMAGE = st.tuples(
    st.sampled_from(["parent", "left", "right", "height", "n_leaves", "leaf_start",
                     "leaf_end", "idx", "merge_sim", "vector", "drop", "copy"]),
    st.integers(0, 10**6), st.sampled_from([-1, 1, 2**31 - 1, -(2**31), 0, 3]))


@MANY
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=6),
       damages=st.lists(COLUMN_DAMAGE, max_size=3), chunk=st.integers(1, 40),
       seed=st.integers(0, 2**32 - 1))
def test_verdicts_equal_stored_tree_for_any_column_values(sizes, damages, chunk, seed):
    """In memory, many more cases: values anywhere in int32 (overflowing leaf_end -
    leaf_start), NaN / inf / null where they do not belong, rows dropped or doubled, the
    rows split into batches of any size."""
    table = pa.concat_tables([node_rows(d, f"tree {k}")
                              for k, d in enumerate(written(sizes, seed))])
    for name, row, value in damages:
        if table.num_rows:
            table = _damage_column(table, name, row % table.num_rows, value)
    trees = read_nodes(table.to_batches(max_chunksize=chunk))
    rejects = _oracle_rejects(table)
    codes = trees.codes(pa.array([k[0] for k in rejects], pa.string()),
                        pa.array([k[1] for k in rejects], pa.string()))
    assert (codes >= 0).all()
    assert trees.bad[codes].tolist() == list(rejects.values())


def _damage_column(table: pa.Table, name: str, row: int, value: int) -> pa.Table:
    if name == "drop":
        return table.filter(pa.array(np.arange(table.num_rows) != row))
    if name == "copy":
        return pa.concat_tables([table, table.slice(row, 1)])
    i = table.schema.get_field_index(name)
    column = table.column(name).combine_chunks()
    if name == "vector":
        values = column.flatten().to_numpy().copy()
        values[row * TOY_DIM] = np.nan if value < 0 else np.inf if value else values[0]
        new = pa.FixedSizeListArray.from_arrays(pa.array(values), TOY_DIM)
    elif name == "merge_sim":
        values = column.to_pylist()
        values[row] = {-1: None, 1: float("nan"), 0: 0.25}.get(value, float("inf"))
        new = pa.array(values, pa.float32())
    else:
        values = column.to_numpy().astype(np.int64)
        values[row] = value if abs(value) > 3 else values[row] + value
        new = pa.array(values.clip(-(2**31), 2**31 - 1), pa.int32())
    return table.set_column(i, table.schema.field(i), new)


def mirrored(rows: pa.Table, k: int, n: int) -> pa.Table:
    """ROWS (one tree, idx order) with node K's children swapped and every leaf range
    laid out again to match: only `left < right` is broken."""
    col = {c: rows.column(c).to_numpy().copy() for c in ("left", "right", "n_leaves")}
    col["left"][k], col["right"][k] = col["right"][k], col["left"][k]
    start = np.zeros(2 * n - 1, dtype=np.int32)
    for node in range(2 * n - 2, n - 1, -1):  # parents before children
        u, v = col["left"][node], col["right"][node]
        start[u], start[v] = start[node], start[node] + col["n_leaves"][u]
    for name, values in (("left", col["left"]), ("right", col["right"]),
                         ("leaf_start", start), ("leaf_end", start + col["n_leaves"])):
        i = rows.schema.get_field_index(name)
        rows = rows.set_column(i, rows.schema.field(i), pa.array(values, pa.int32()))
    return rows


def test_children_in_the_wrong_order_are_found_with_leaf_ranges_that_match():
    for doc in written([2, 3, 5, 8, 13], seed=3):
        n = doc.tree.n
        for k in range(n, 2 * n - 1):
            rows = mirrored(node_rows(doc, "t"), k, n)
            with pytest.raises(ValueError, match=f"node {k} has left .* >= right"):
                stored_tree(doc.doc.doc_id, rows)
            assert read_nodes(rows.to_batches()).bad.tolist() == [True]


def test_a_chain_shaped_tree_of_many_leaves_is_checked_without_recursion(tmp_path):
    n = 5000
    i = np.arange(n - 1)
    tree = build_tree(np.full((n, TOY_DIM), TOY_DIM ** -0.5, np.float32), i, i + 1,
                      np.linspace(1, 0.1, n - 1).astype(np.float32))
    text = " ".join(["w"] * n)
    spans = np.stack([2 * np.arange(n), 2 * np.arange(n) + 1], axis=1)
    doc = IndexedDocument(SourceDocument("chain", "mem://chain", text, content_hash(text)),
                          spans, tree)
    assert int(tree.height.max()) == n - 1
    store = toy_store(tmp_path / "db")
    store.write([doc], "fp")
    assert check_database(store.uri).healthy
    store.table("nodes").update(where=f"idx = {2 * n - 3}", values={"height": 1})
    problems = check_database(store.uri).problems
    assert problems == reference_check(store.uri).problems
    assert problems[0].startswith("document 'chain': its tree") and "has height 1" in problems[0]


@pytest.mark.parametrize("missing", ["documents", "nodes"])
def test_a_database_missing_a_table_checks_as_before(store, missing):
    import lancedb

    store.write(written([3, 1, 2], seed=1), "fp")
    lancedb.connect(store.uri).drop_table(missing)
    report = check_database(store.uri)
    health = check_tables(store.uri, None)
    expected = Report(store.uri, health, [f"document {d!r}: {why}" for d, why in
                                          sorted(health.documents.items())])
    _note_debris(expected, missing != "documents")
    assert report.lines() == expected.lines() and report.lines()
