"""kill -9 at every commit boundary of an index run that adds, replaces and deletes
documents: readers see every document wholly old or wholly new, and the next run
finishes the work and leaves exactly the current trees (issue 9, findings 2 and 6)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sproutrag.documents import content_hash
from sproutrag.storage.store import Store
from tests.conftest import ROOT
from tests.flows.test_incremental import TEXTS, _index, _state, _write

pytestmark = pytest.mark.model

CHANGED = {"a.txt": "Changed text. The supplier now delivers within ten days. "
           "Invoices are paid on receipt."}
NEW = {"d.txt": "A new document arrives. It has two sentences."}
QUESTIONS = ["When does the supplier deliver?", "How long is the notice period?",
             "Is security training mandatory?", "Can staff work remotely?"]


def _cli(corpus, db, env_extra, *, own_server: bool, home: Path) -> subprocess.Popen:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, **env_extra, "PREFECT_HOME": str(home)}
    if own_server:  # the CLI starts its temporary Prefect server
        env.pop("PREFECT_API_URL", None)
    else:
        env["PREFECT_API_URL"] = PREFECT_API_URL.value()
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "index", str(corpus), "--db", str(db),
         "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _state_of(pid: int) -> str | None:
    """The process's state letter (R, S, T stopped, Z zombie, ...); None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _alive(pid: int) -> bool:
    return _state_of(pid) not in (None, "Z")


def children_now(pid: int) -> dict[int, str]:
    """{pid: command line} of PID's children now. A child between fork and exec still
    shows its parent's command line: callers look again until they see what they wait for."""
    found = {}
    for child in _children(pid):
        try:
            found[child] = Path(f"/proc/{child}/cmdline").read_text().replace("\0", " ")
        except OSError:
            pass
    return found


def wait_for_child(proc: subprocess.Popen, word: str, timeout: float = 300) -> dict[int, str]:
    """Wait until PROC has a child whose command line holds WORD; returns its children."""
    deadline = time.monotonic() + timeout
    while True:
        children = children_now(proc.pid)
        if any(word in cmd for cmd in children.values()):
            return children
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, f"no {word} child after {timeout} s: {children}"
        time.sleep(0.05)


def wait_stopped(proc: subprocess.Popen, timeout: float) -> None:
    """Wait until PROC has stopped itself (SIGSTOP at a crash point)."""
    deadline = time.monotonic() + timeout
    while _state_of(proc.pid) != "T":
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, "the index command never reached its crash point"
        time.sleep(0.05)


def assert_gone(pids: set[int], within: float = 15) -> None:
    deadline = time.monotonic() + within
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if _alive(p)], "a child of the index command outlived it"


def assert_reader_view(db: str, versions: dict[str, set[str]]) -> None:
    """Every document is one whole version (its documents.text and tree agree), and
    every query hit's spans hold the hit's text in documents.text."""
    from schemas.settings import load_settings
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


@pytest.mark.parametrize("point", ["nodes-written", "documents-written", "documents-deleted"])
def test_kill_at_each_commit_boundary(prefect_harness, tmp_path, point):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    _write(corpus, TEXTS)
    _index(corpus, db)
    _write(corpus, {**CHANGED, **NEW})  # a.txt replaced, d.txt new ...
    (corpus / "sub" / "c.txt").unlink()  # ... and sub/c.txt deleted
    versions = {k: {content_hash(v)} for k, v in TEXTS.items()}
    versions["a.txt"].add(content_hash(CHANGED["a.txt"]))
    versions["d.txt"] = {content_hash(NEW["d.txt"])}

    own_server = point == "documents-deleted"  # one case also checks the server dies
    # The command stops itself at the point (SIGSTOP); the kill -9 comes while it stands
    # there, its children as they are: no race with how fast the command or this test runs.
    proc = _cli(corpus, db, {"SPROUTRAG_CRASH_AT": f"{point}:SIGSTOP"}, own_server=own_server,
                home=tmp_path / "prefect")
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
    }[point]
    assert after_kill == {k: content_hash(v) for k, v in expected.items()}
    assert_reader_view(str(db), versions)
    [killed] = Store.open_existing(str(db)).table("runs").search().where(
        "status = 'running'").to_list()
    assert killed["finished_at"] is None  # visible as not finished

    if point == "nodes-written":  # the corpus reverts before the next run (issue 9, #2)
        _write(corpus, {"a.txt": TEXTS["a.txt"]})
        run = _index(corpus, db)
        assert run["n_unchanged"] == 2 and run["n_new"] == 1  # a.txt, b.md; d.txt
        assert _state(str(db))["a.txt"][0] == content_hash(TEXTS["a.txt"])
        _write(corpus, CHANGED)
    run = _index(corpus, db)
    assert run["status"] == "completed" and run["n_failed"] == 0
    final = {**TEXTS, **CHANGED, **NEW}
    del final["sub/c.txt"]
    state = _state(str(db))  # node ids unique, no nodes outside the current trees
    assert {k: h for k, (h, _) in state.items()} == {k: content_hash(v)
                                                     for k, v in final.items()}
    assert_reader_view(str(db), versions)
