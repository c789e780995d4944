"""kill -9 at every commit boundary of an index run that adds, replaces and deletes
documents, and in its maintenance step (before and after the vector and full-text
indexes): readers see every document wholly old or wholly new and can search (the
hybrid first stage included), and the next run finishes the work and leaves exactly the
current trees (issues 9 and 21)."""

from __future__ import annotations

import signal

import pytest

from sproutrag.documents import content_hash
from sproutrag.storage.store import Store
from tests.helpers import TEXTS, index_state, run_index, start_index_cli, write_files
from tests.processes import assert_gone, wait_for_child, wait_stopped

pytestmark = pytest.mark.model

CHANGED = {"a.txt": "Changed text. The supplier now delivers within ten days. "
           "Invoices are paid on receipt."}
NEW = {"d.txt": "A new document arrives. It has two sentences."}
QUESTIONS = ["When does the supplier deliver?", "How long is the notice period?",
             "Is security training mandatory?", "Can staff work remotely?"]


def assert_reader_view(db: str, versions: dict[str, set[str]]) -> None:
    """Every document is one whole version (its documents.text and tree agree), and
    every query hit's spans hold the hit's text in documents.text."""
    from sproutrag.schemas.settings import load_settings

    from sproutrag.encoder.factory import shared_encoder
    from sproutrag.search.retriever import Retriever

    store = Store.open_existing(db)
    texts = {d["doc_id"]: d for d in store.table("documents").to_arrow().to_pylist()}
    for doc_id, row in texts.items():
        assert row["content_hash"] in versions[doc_id], doc_id
        stored = store.load_tree(doc_id)
        assert stored.tree.n == row["n_chunks"]
        for (s, e), text in zip(stored.spans.tolist(), stored.texts):
            assert row["text"][s:e] == text, (doc_id, text)
    retriever = Retriever(db, encoder=shared_encoder(load_settings()), threshold=0.0, margin=None)
    for question in QUESTIONS:
        for mode in ("tree", "flat"):
            for doc_ids in (None, sorted(texts)):
                hits = retriever.search(question, k=3, mode=mode, doc_ids=doc_ids)
                assert hits
                for hit in hits:
                    doc = texts[hit.doc_id]["text"]
                    assert hit.text == "\n".join(doc[s:e] for s, e in hit.spans), hit


@pytest.mark.parametrize("point", ["nodes-written", "documents-written", "documents-deleted",
                                   "maintain-start", "maintain-indexed"])
def test_kill_at_each_commit_boundary(prefect_harness, tmp_path, point):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    write_files(corpus, {**CHANGED, **NEW})  # a.txt replaced, d.txt new ...
    (corpus / "sub" / "c.txt").unlink()  # ... and sub/c.txt deleted
    versions = {k: {content_hash(v)} for k, v in TEXTS.items()}
    versions["a.txt"].add(content_hash(CHANGED["a.txt"]))
    versions["d.txt"] = {content_hash(NEW["d.txt"])}

    own_server = point == "documents-deleted"  # one case also checks the server dies
    # The command stops itself at the point (SIGSTOP); the kill -9 comes while it stands
    # there, its children as they are: no race with how fast the command or this test runs.
    env = {"SPROUTRAG_CRASH_AT": f"{point}:SIGSTOP", "PREFECT_HOME": str(tmp_path / "prefect")}
    proc = start_index_cli(corpus, db, env, own_server=own_server)
    wait_stopped(proc, timeout=400)
    children = wait_for_child(proc, "uvicorn", timeout=5) if own_server else {}
    proc.kill()
    assert proc.wait(timeout=30) == -signal.SIGKILL, proc.stdout.read().decode()
    if own_server:  # Prefect's temporary server (uvicorn) died with the command
        assert_gone(set(children))

    after_kill = {d: h for d, (h, _) in Store.open_existing(str(db)).indexed().items()}
    expected = {
        "nodes-written": {"a.txt": TEXTS["a.txt"], "b.md": TEXTS["b.md"],
                          "sub/c.txt": TEXTS["sub/c.txt"]},
        "documents-written": {**TEXTS, **CHANGED, **NEW},
        "documents-deleted": {"a.txt": CHANGED["a.txt"], "b.md": TEXTS["b.md"], **NEW},
    }.get(point, {"a.txt": CHANGED["a.txt"], "b.md": TEXTS["b.md"], **NEW})  # maintenance
    assert after_kill == {k: content_hash(v) for k, v in expected.items()}
    assert_reader_view(str(db), versions)
    [killed] = Store.open_existing(str(db)).table("runs").search().where(
        "status = 'running'").to_list()
    assert killed["finished_at"] is None  # visible as not finished

    if point == "nodes-written":  # the corpus reverts before the next run (issue 9, #2)
        write_files(corpus, {"a.txt": TEXTS["a.txt"]})
        run = run_index(corpus, db)
        assert run["n_unchanged"] == 2 and run["n_new"] == 1  # a.txt, b.md; d.txt
        assert index_state(db)["a.txt"][0] == content_hash(TEXTS["a.txt"])
        write_files(corpus, CHANGED)
    run = run_index(corpus, db)
    assert run["status"] == "completed" and run["n_failed"] == 0
    final = {**TEXTS, **CHANGED, **NEW}
    del final["sub/c.txt"]
    runs = Store.open_existing(str(db)).table("runs").to_arrow().to_pylist()
    was = next(r for r in runs if r["run_id"] == killed["run_id"])
    assert was["status"] == "killed" and "killed" in was["message"]  # marked by the next run
    stored = 0 if point == "nodes-written" else 2  # a.txt changed, d.txt new: no row counted
    assert f"the {stored} documents it had stored stay" in was["message"], was["message"]
    assert not [r for r in runs if r["status"] == "running"]
    state = index_state(db)  # node ids unique, no nodes outside the current trees
    assert {k: h for k, (h, _) in state.items()} == {k: content_hash(v)
                                                     for k, v in final.items()}
    assert_reader_view(str(db), versions)
