"""Incremental re-indexing and run safety, checking exact table contents each time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sproutrag.documents import content_hash
from sproutrag.storage.locking import DatabaseBusyError, DatabaseLock
from sproutrag.storage.store import Store
from tests.helpers import CLI, ROOT, TEXTS, index_state, run_index, start_index_cli, write_files

pytestmark = pytest.mark.model

@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    write_files(root, TEXTS)
    return root


def test_add_change_delete_rename_and_fingerprint(prefect_harness, corpus, tmp_path):
    db = tmp_path / "db"
    first = run_index(corpus, db)
    assert (first["n_new"], first["n_failed"]) == (3, 0)
    state = index_state(db)
    assert {k: v[0] for k, v in state.items()} == {k: content_hash(v) for k, v in TEXTS.items()}

    again = run_index(corpus, db)
    assert (again["n_new"], again["n_changed"], again["n_unchanged"], again["n_nodes"]) == (
        0, 0, 3, 0)
    assert index_state(db) == state

    write_files(corpus, {"d.txt": "A new document arrives. It has two sentences."})
    (corpus / "b.md").write_text("# Remote work\n\nNo remote work any more.", encoding="utf-8")
    (corpus / "sub" / "c.txt").rename(corpus / "sub" / "c2.txt")
    run = run_index(corpus, db)
    assert (run["n_new"], run["n_changed"], run["n_deleted"], run["n_unchanged"]) == (2, 1, 1, 1)
    after = index_state(db)
    assert set(after) == {"a.txt", "b.md", "d.txt", "sub/c2.txt"}
    assert after["a.txt"] == state["a.txt"]
    assert after["b.md"][0] == content_hash((corpus / "b.md").read_text(encoding="utf-8"))
    assert after["sub/c2.txt"] == state["sub/c.txt"]

    cfg = tmp_path / "one.yaml"
    cfg.write_text("chunking:\n  sentences_per_chunk: 1\n", encoding="utf-8")
    run = run_index(corpus, db, config=str(cfg))
    assert (run["n_changed"], run["n_unchanged"]) == (4, 0)
    assert run["message"] == ("4 documents indexed with other index settings are "
                              "re-indexed with this run's (chunking.sentences_per_chunk: 2 "
                              "-> 1)")  # a user sees why documents nobody touched changed
    assert index_state(db)["a.txt"][1] == 2 * 3 - 1  # three one-sentence chunks
    run = run_index(corpus, db, config=str(cfg), full=True)
    assert run["n_changed"] == 4 and run["message"] is None  # --full says why itself
    run = run_index(corpus, db, full=True)  # --full with other settings names them too
    assert run["n_changed"] == 4 and run["message"] == (
        "4 documents indexed with other index settings are re-indexed with this run's "
        "(chunking.sentences_per_chunk: 1 -> 2)")
    runs = Store.open_existing(str(db)).table("runs").count_rows()
    assert runs == 6


def test_bad_input_is_reported_and_the_rest_indexed(prefect_harness, tmp_path):
    root = tmp_path / "bad"
    write_files(root, {"ok.txt": "Fine text. Two sentences.", "one.txt": "Only one sentence"})
    (root / "empty.txt").write_text("", encoding="utf-8")
    (root / "binary.txt").write_bytes(bytes(range(256)) * 4)
    (root / "latin1.txt").write_bytes("Caf\xe9 au lait.".encode("latin-1"))
    (root / "huge.txt").write_text(" ".join(["word"] * 4_000), encoding="utf-8")
    db = tmp_path / "db"
    run = run_index(root, db)
    failures = {f["doc_id"]: f["reason"] for f in json.loads(run["failures_json"])}
    assert set(failures) == {"empty.txt", "binary.txt", "latin1.txt"}
    assert "empty" in failures["empty.txt"] and "UTF-8" in failures["latin1.txt"]
    state = index_state(db)
    assert set(state) == {"ok.txt", "one.txt", "huge.txt"}
    assert state["one.txt"][1] == 1
    assert state["huge.txt"][1] > 2 * 18  # 20k chars, no sentence end: 1,000-char pieces

    jl = tmp_path / "dup.jsonl"
    jl.write_text(
        "\n".join(json.dumps(r) for r in [
            {"doc_id": "x", "text": "First x."}, {"doc_id": "x", "text": "Second x."},
            {"doc_id": "y", "text": "中文文档。第二句话！第三句？"},
        ]),
        encoding="utf-8",
    )
    run = run_index(jl, tmp_path / "db2")
    # a doc_id found twice fails as a whole (no copy indexed), naming both lines
    failures = {f["doc_id"]: f["reason"] for f in json.loads(run["failures_json"])}
    assert run["n_new"] == 1 and set(failures) == {"x"}
    assert "duplicate" in failures["x"] and ":1" in failures["x"] and ":2" in failures["x"]
    state = index_state(tmp_path / "db2")
    assert set(state) == {"y"} and state["y"][1] >= 3


def _hold_lock(db) -> subprocess.Popen:
    """Another process holding DB's index lock until it is killed."""
    code = ("import sys, time\nfrom sproutrag.storage.locking import DatabaseLock\n"
            "with DatabaseLock(sys.argv[1]):\n    print('held', flush=True)\n"
            "    time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(db)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_run_refuses_while_one_holds_the_database(prefect_harness, corpus, tmp_path):
    db = tmp_path / "db"
    holder = _hold_lock(db)
    try:
        with pytest.raises(DatabaseBusyError, match="another index run"):
            run_index(corpus, db)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        t0 = time.monotonic()  # a user's command: it would start its own Prefect server
        cli = subprocess.run([*CLI, "index", str(corpus),
                              "--db", str(db)], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
        refused_in = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()
    assert cli.returncode == 1 and "another index run is writing" in cli.stderr, cli.stderr
    assert refused_in < 15, refused_in  # the process start and imports; no server
    assert "Traceback" not in cli.stderr
    assert run_index(corpus, db)["n_new"] == 3


def test_a_lock_timeout_waits_saying_so(tmp_path, caplog):
    db = tmp_path / "db"
    holder = _hold_lock(db)
    try:
        with caplog.at_level("WARNING"), pytest.raises(
                DatabaseBusyError, match=r"still writing after pipeline.lock_timeout \(0.3 s\)"):
            with DatabaseLock(str(db), timeout=0.3, poll=0.1):
                pass
    finally:
        holder.kill()
        holder.wait()
    said = [r.getMessage() for r in caplog.records if "waiting up to" in r.getMessage()]
    assert len(said) == 1 and f"{str(db)!r} ({{\"pid\": {holder.pid}" in said[0], said


def test_the_lock_is_re_entrant_within_a_process(tmp_path):
    db = str(tmp_path / "db")
    with DatabaseLock(db), DatabaseLock(db):  # the command, then its flow
        pass
    with DatabaseLock(db):  # released: taken again at once
        pass


def test_a_database_path_that_is_a_file_is_refused_in_one_line(prefect_harness, corpus,
                                                              tmp_path):
    """The CLI refused it before the run; a deployment's run got a bare FileExistsError
    from the lock (a QA pass, as a platform engineer)."""
    from sproutrag.flows.index_corpus import index_corpus

    from sproutrag.errors import DatabaseNotFoundError

    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    with pytest.raises(DatabaseNotFoundError, match=f"^database {afile} is not a folder "
                       r"\(a file is there\): give a folder"):
        index_corpus(corpus=str(corpus), db=str(afile))
    assert afile.read_text(encoding="utf-8") == "x"


def test_kill_during_encoding_then_rerun_completes(prefect_harness, corpus, tmp_path):
    db = tmp_path / "db"
    run_index(corpus, db)
    (corpus / "a.txt").write_text("Changed text. The old tree stays until the new one lands.")
    before = index_state(db)
    proc = start_index_cli(corpus, db)
    deadline = time.time() + 240
    while not list((db / "_work").glob("*/batch-*/chunks.parquet")):
        assert proc.poll() is None and time.time() < deadline, proc.stdout.read().decode()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert index_state(db) == before  # killed before storing: the old version is intact
    [leftover] = (db / "_work").iterdir()
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_unchanged"]) == (1, 2)
    assert index_state(db)["a.txt"][0] != before["a.txt"][0]
    assert not leftover.exists() and not list((db / "_work").iterdir())
