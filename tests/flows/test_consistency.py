"""Index runs on a damaged database: a lost data file fails the run at its start with one
line of advice, --full moves the damaged table aside (`documents` with `nodes`) and
rebuilds, documents whose tree is gone (a rolled-back `nodes`) are re-indexed, and so are
those whose stored text is altered once the run is asked to verify the texts
(--verify)."""

from __future__ import annotations

import os
from pathlib import Path

import lancedb
import pytest

from sproutrag.search.retriever import Retriever
from sproutrag.storage.check import DamagedTableError, check_database
from sproutrag.storage.store import Store
from tests.helpers import index_state, run_cli, run_index, write_files

pytestmark = pytest.mark.model

TEXTS = {
    "a.txt": "The supplier delivers within 30 days. Payment is due in 45 days.",
    "b.txt": "Staff may work remotely three days a week. Managers approve it.",
}


def _rolled_back_after(corpus, db, store: Store, text: str) -> None:
    """Re-index a.txt as TEXT, then restore `nodes` to its version before that run."""
    store.refresh()
    version = store.table("nodes").version
    (corpus / "a.txt").write_text(text, encoding="utf-8")
    run_index(corpus, db)
    nodes = store.table("nodes")
    nodes.checkout(version)
    nodes.restore()


def _mended_by_verify_alone(corpus, db) -> None:
    """Both documents of TEXTS are damaged in a way only the full check sees: a plain run
    re-indexes neither, a run asked to verify both, and the database is healthy."""
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_unchanged"]) == (0, 2)
    run = run_index(corpus, db, verify=True)
    assert (run["n_changed"], run["n_unchanged"]) == (2, 0)
    assert "2 documents were damaged" in run["message"]
    assert check_database(str(db)).healthy


def test_damaged_documents_are_reindexed(prefect_harness, tmp_path):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    store = Store.open_existing(str(db))
    # a.txt's tree grows from 1 node to 3, then `nodes` is rolled back: the row count
    # says so, and a plain run re-indexes it
    _rolled_back_after(corpus, db, store, "The supplier delivers within 10 days. Payment "
                       "is due in 30 days. Late fees apply.")
    assert len(check_database(str(db)).problems) == 1
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_unchanged"]) == (1, 1)
    assert "1 documents were damaged" in run["message"]
    assert check_database(str(db)).healthy
    # a rollback that keeps the row count, and a stored text altered: only the full
    # check sees them, and a run asked to verify re-indexes both
    _rolled_back_after(corpus, db, store, "The supplier delivers within 12 days. Payment "
                       "is due in 20 days. Late fees apply.")
    store.refresh(["documents"])  # a writer starts from the latest version
    store.table("documents").update(where="doc_id = 'b.txt'", values={"text": "Staff."})
    assert len(check_database(str(db)).problems) == 2
    _mended_by_verify_alone(corpus, db)
    assert set(index_state(db)) == {"a.txt", "b.txt"}
    # a name key its text does not give (the corpus-wide fetch would miss the document)
    store.refresh(["documents"])
    store.table("documents").update(where="doc_id = 'a.txt'", values={"name_key": 5})
    assert len(check_database(str(db)).problems) == 1
    run = run_index(corpus, db, verify=True)
    assert (run["n_changed"], run["n_unchanged"]) == (1, 1)
    assert check_database(str(db)).healthy
    # a doc key that is not its doc_id's: queries would not find the document
    store.refresh(["documents"])
    store.table("documents").update(where="doc_id = 'b.txt'", values={"doc_key": 5})
    assert Retriever(str(db)).known_doc_ids(["a.txt", "b.txt"]) == ["a.txt"]
    assert len(check_database(str(db)).problems) == 1
    run = run_index(corpus, db, verify=True)
    assert (run["n_changed"], run["n_unchanged"]) == (1, 1)
    assert Retriever(str(db)).known_doc_ids(["a.txt", "b.txt"]) == ["a.txt", "b.txt"]


def test_verify_reindexes_every_document_check_names(prefect_harness, tmp_path):
    """A tree made invalid and a vector changed in place to other finite values (damage
    no read fails on, the row count unchanged): `check` names both documents and
    `--verify` re-indexes both, as the check's advice says."""
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    nodes = Store.open_existing(str(db)).table("nodes")
    nodes.update(where="doc_id = 'a.txt' AND idx = 0", values={"height": 3})
    vector = nodes.search().where("doc_id = 'b.txt' AND idx = 0").limit(1).to_list()[0]
    changed = [v + 0.1 if i == 7 else v for i, v in enumerate(vector["vector"])]
    nodes.update(where="doc_id = 'b.txt' AND idx = 0", values={"vector": changed})
    report = check_database(str(db))
    problems = dict(p.split(": ", 1) for p in report.problems)
    assert problems.keys() == {"document 'a.txt'", "document 'b.txt'"}
    assert "leaf 0 has height 3" in problems["document 'a.txt'"]
    assert "the vector of node 0 is not of unit length" in problems["document 'b.txt'"]
    assert "--verify` re-indexes the damaged documents" in report.lines()[-1]
    _mended_by_verify_alone(corpus, db)
    # and every file is readable as the umask allows (Lance writes some 0600)
    umask = os.umask(0)
    os.umask(umask)
    files = [p for p in Path(db).rglob("*") if p.is_file()]
    assert files and all(p.stat().st_mode & 0o444 & ~umask == 0o444 & ~umask for p in files)


def test_verify_reads_a_file_whose_size_and_time_were_kept(prefect_harness, tmp_path):
    """A file edited in place with its size and modification time put back (`cp -p`,
    `touch -r`, a restored backup): the listing's fast path takes it as unchanged, as
    rsync and make do; `--verify` reads every file and re-indexes it."""
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    a = corpus / "a.txt"
    settled = os.stat(a).st_mtime - 3600  # outside the racy window: the time is stored
    os.utime(a, (settled, settled))
    run_index(corpus, db)
    edited = TEXTS["a.txt"].replace("30 days", "90 days").replace("45 days", "15 days")
    assert len(edited) == len(TEXTS["a.txt"])
    a.write_text(edited, encoding="utf-8")
    os.utime(a, (settled, settled))
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_unchanged"]) == (0, 2)
    run = run_index(corpus, db, verify=True)
    assert (run["n_changed"], run["n_unchanged"]) == (1, 1)
    rows = Store.open_existing(str(db)).table("documents").to_arrow().to_pylist()
    assert {r["doc_id"]: r["text"] for r in rows} == {"a.txt": edited, "b.txt": TEXTS["b.txt"]}
    assert check_database(str(db)).healthy


def test_a_lost_data_file_fails_the_run_and_full_rebuilds(prefect_harness, tmp_path):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    for f in (db / "nodes.lance" / "data").glob("*.lance"):
        f.unlink()
    with pytest.raises(DamagedTableError, match="table 'nodes' of .*--full"):
        run_index(corpus, db)
    query = run_cli("query", "payment", "--db", str(db))
    assert query.returncode == 1 and "Traceback" not in query.stderr
    errors = [line for line in query.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("sproutrag query: error: table 'nodes'")
    check = run_cli("check", "--db", str(db))
    assert check.returncode == 1 and "table 'nodes' cannot be read" in check.stdout
    (corpus / "a.txt").write_bytes(b"abc\x00binary")  # a.txt fails in the rebuild
    run = run_index(corpus, db, full=True)
    assert (run["n_new"], run["n_failed"]) == (1, 1)
    assert "moved damaged tables aside" in run["message"]
    for name in ("nodes", "documents"):  # documents too: its rows name the lost trees
        kept = [p for p in Path(db).iterdir() if p.name.startswith(f"{name}.lance.damaged-")]
        assert len(kept) == 1 and str(kept[0]) in run["message"]
    assert set(index_state(db)) == {"b.txt"}  # a.txt failed: no row naming no tree
    assert run_cli("check", "--db", str(db)).returncode == 0
    query = run_cli("query", "payment", "--db", str(db), "--doc-id", "a.txt")
    assert query.returncode == 3 and "none of the doc_ids ['a.txt']" in query.stderr
    write_files(corpus, TEXTS)
    assert run_index(corpus, db)["n_new"] == 1
    assert set(index_state(db)) == {"a.txt", "b.txt"}


def test_full_after_a_damaged_documents_table_moves_nodes_aside_too(prefect_harness, tmp_path):
    """With only `documents` unreadable, --full kept `nodes`: the rebuild ended with
    every old tree beside the new ones (twice the rows, "healthy"), and the next run
    removed them as "rows an interrupted run left"."""
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    rows = lancedb.connect(str(db)).open_table("nodes").count_rows()
    for f in (db / "documents.lance" / "data").glob("*.lance"):
        f.write_bytes(f.read_bytes()[:100])  # truncated
    run = run_index(corpus, db, full=True)
    assert run["n_new"] == 2 and "moved damaged tables aside" in run["message"]
    for name in ("documents", "nodes"):
        kept = [p for p in Path(db).iterdir() if p.name.startswith(f"{name}.lance.damaged-")]
        assert len(kept) == 1 and str(kept[0]) in run["message"]
    assert lancedb.connect(str(db)).open_table("nodes").count_rows() == rows
    assert run_cli("check", "--db", str(db)).returncode == 0
    again = run_index(corpus, db)
    assert again["n_unchanged"] == 2 and "interrupted" not in (again["message"] or "")


@pytest.mark.parametrize("index", ["text_idx", "tree_id_idx"])
def test_a_damaged_index_is_rebuilt_by_the_next_run(prefect_harness, tmp_path, index):
    """An index file lost (indexes are derived data): `sproutrag check` names it (exit 1),
    and the next run, even with nothing to index, drops and rebuilds it."""
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    store = Store.open_existing(str(db))
    [found] = [i for i in store.table("nodes").list_indices() if i.name == index]
    for path in (db / "nodes.lance" / "_indices" / found.index_uuid).iterdir():
        path.unlink()
    check = run_cli("check", "--db", str(db))
    assert check.returncode == 1 and f"index '{index}' of table 'nodes'" in check.stdout
    query = run_cli("query", "--db", str(db), "When is payment due?")
    assert "Traceback" not in query.stderr
    if index == "text_idx":  # answered from the vectors, with one warning
        assert query.returncode == 0 and "a.txt:" in query.stdout
        assert query.stderr.count("full-text index of nodes cannot be read") == 1
    else:  # a scalar index cannot be bypassed: one line says the next run rebuilds it
        assert query.returncode == 1 and "rebuilds it" in query.stderr
    run = run_index(corpus, db)
    assert run["n_unchanged"] == 2 and f"nodes.{index}" in run["message"]
    assert check_database(str(db)).healthy
    query = run_cli("query", "--db", str(db), "When is payment due?")
    assert query.returncode == 0 and "Traceback" not in query.stderr
