"""What an operator must be able to rely on (issue 9): the work dir is the pipeline's
own, failed reads never delete, bad doc_ids fail alone, failures fail the flow run,
signals stop cleanly, an unchanged run writes (almost) nothing, old databases migrate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import fsspec
import pytest

from sproutrag.documents import content_hash
from sproutrag.ingest.run_folder import create_run_dir
from sproutrag.ingest.run_summary import (
    DocumentsFailedError,
    QueriesFailedError,
    RunInterruptedError,
)
from tests.helpers import (
    CLI,
    ROOT,
    TEXTS,
    index_state,
    make_schema_1,
    run_flow,
    run_index,
    runs,
    start_index_cli,
    write_files,
    write_jsonl,
)
from tests.processes import assert_gone, wait_for_child

pytestmark = pytest.mark.model


# -- 1. the work dir -----------------------------------------------------------------


def test_work_dir_holding_corpus_and_database_is_never_deleted(
    prefect_harness, tmp_path, monkeypatch
):
    shared = tmp_path / "shared"
    corpus, db = shared / "corpus", shared / "db"
    write_files(corpus, {"a.txt": TEXTS["a.txt"]})
    (shared / "notes.txt").write_text("not the pipeline's", encoding="utf-8")
    write_files(shared / "other", {"x.txt": "someone else's"})
    fs = fsspec.filesystem("file")
    dead = create_run_dir(fs, str(shared), run_id="0123456789ab", db=str(db))
    Path(dead, "batch-00000").mkdir()  # a killed run of this database left it
    foreign = create_run_dir(fs, str(shared), run_id="ba9876543210", db=str(tmp_path / "db2"))
    (shared / "sproutrag-run-aaaaaaaaaaaa").mkdir()  # the name alone proves nothing
    monkeypatch.setenv("SPROUTRAG_PIPELINE__WORK_DIR", str(shared))

    first = run_index(corpus, db)
    again = run_index(corpus, db)
    assert (first["n_new"], again["n_unchanged"]) == (1, 1)
    assert sorted(os.listdir(shared)) == sorted(
        ["corpus", "db", "notes.txt", "other", Path(foreign).name,
         "sproutrag-run-aaaaaaaaaaaa"])
    assert (corpus / "a.txt").read_text(encoding="utf-8") == TEXTS["a.txt"]
    assert (shared / "other" / "x.txt").is_file() and not Path(dead).exists()
    assert set(index_state(db)) == {"a.txt"}


def test_a_run_folder_whose_removal_was_cut_short_is_removed_by_the_next_run(
    prefect_harness, tmp_path
):
    corpus, db = write_files(tmp_path / "corpus", {"a.txt": TEXTS["a.txt"]}), tmp_path / "db"
    dead = db / "_work" / "sproutrag-run-0123456789ab"  # a double Ctrl-C took its marker
    (dead / "batch-00001").mkdir(parents=True)
    (dead / "batch-00001" / "chunks.parquet").write_bytes(b"PAR1")
    assert run_index(corpus, db)["n_new"] == 1
    assert os.listdir(db / "_work") == []


# -- 3. failed reads never delete; mass deletions refuse --------------------------------


def test_unreadable_documents_keep_their_indexed_version(prefect_harness, tmp_path):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    before = index_state(db)
    (corpus / "a.txt").write_bytes("Caf\xe9 au lait.".encode("latin-1"))
    state, row = run_flow(corpus, db)
    assert state.is_failed() and (row["n_deleted"], row["n_failed"]) == (0, 1)
    assert "UTF-8" in json.loads(row["failures_json"])[0]["reason"]
    assert index_state(db) == before  # a.txt keeps its indexed version


def test_jsonl_failures_never_delete_and_mass_deletions_refuse(prefect_harness, tmp_path,
                                                              capsys):
    from sproutrag.flows.cli import main

    from sproutrag.ingest.plan import MassDeleteError

    db, jl = tmp_path / "db", tmp_path / "corpus.jsonl"
    docs = [{"doc_id": k, "text": TEXTS[v]} for k, v in
            (("x", "a.txt"), ("y", "b.md"), ("z", "sub/c.txt"))]
    run_index(write_jsonl(jl, docs), db)
    indexed = index_state(db)

    write_jsonl(jl, [{"doc_id": "x", "text": 5}, *docs[1:]])  # x's line is bad, its id known
    state, row = run_flow(jl, db)
    assert state.is_failed() and row["n_deleted"] == 0 and index_state(db) == indexed

    write_jsonl(jl, ['{"doc_id": "x", "text": "cut off', *docs[1:]])  # which document? unknown
    state, row = run_flow(jl, db)
    assert row["n_deleted"] == 0 and index_state(db) == indexed
    assert "deletions held back" in row["message"] and "line 1" in row["message"]
    assert [f["doc_id"] for f in json.loads(row["failures_json"])] == [None]  # no document
    capsys.readouterr()
    assert main(["index", str(jl), "--db", str(db)]) == 3
    failed = [x for x in capsys.readouterr().err.splitlines() if x.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].startswith(f"FAILED {jl}:1: not a JSON line (")

    write_jsonl(jl, docs[2:])  # would delete x and y: 2 of 3 > half
    with pytest.raises(MassDeleteError, match="2 of 3 indexed documents.*allow-mass-delete"):
        run_index(jl, db)
    jl.write_text("", encoding="utf-8")  # a truncated export
    with pytest.raises(MassDeleteError, match="holds no documents"):
        run_index(jl, db, config=None)
    assert index_state(db) == indexed
    assert [r["status"] for r in runs(db)[-2:]] == ["failed", "failed"]
    assert "MassDeleteError" in runs(db)[-1]["message"]

    from sproutrag.flows.cli import main

    write_jsonl(jl, docs[2:])
    assert main(["index", str(jl), "--db", str(db), "--allow-mass-delete"]) == 0
    assert set(index_state(db)) == {"z"}


def test_an_emptied_folder_clears_the_database_only_when_allowed(prefect_harness, tmp_path):
    """A folder with no .txt/.md file is most likely a wrong path: refused; with
    --allow-mass-delete it is the corpus emptied, and every document goes."""
    from sproutrag.errors import CorpusNotFoundError

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, {"a.txt": TEXTS["a.txt"]})
    run_index(corpus, db)
    (corpus / "a.txt").unlink()
    with pytest.raises(CorpusNotFoundError, match="holds no .txt or .md files.*run again "
                       "with --allow-mass-delete"):
        run_index(corpus, db)
    assert set(index_state(db)) == {"a.txt"}
    row = run_index(corpus, db, allow_mass_delete=True)
    assert (row["n_deleted"], row["status"]) == (1, "completed") and index_state(db) == {}


def test_an_empty_jsonl_file_for_an_empty_database_is_refused_unless_allowed(
        prefect_harness, tmp_path):
    """It was indexed, exit 0 and a database of nothing, where an empty folder is
    refused as a wrong path: an empty or truncated export is as likely a mistake."""
    from sproutrag.errors import CorpusNotFoundError

    jl, db = tmp_path / "export.jsonl", tmp_path / "db"
    jl.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(CorpusNotFoundError, match="holds no documents .an empty file, or "
                       "blank lines only.; nothing was indexed.*--allow-mass-delete"):
        run_index(jl, db)
    row = run_index(jl, db, allow_mass_delete=True)
    assert (row["n_new"], row["status"]) == (0, "completed")
    write_jsonl(jl, [{"doc_id": "a", "text": TEXTS["a.txt"]}])
    assert run_index(jl, db)["n_new"] == 1


# -- 4. invalid doc_ids ----------------------------------------------------------------


def test_invalid_doc_ids_fail_alone_run_after_run(prefect_harness, tmp_path):
    jl = write_jsonl(tmp_path / "c.jsonl", [
        {"doc_id": "ok", "text": TEXTS["a.txt"]},
        {"doc_id": "nul\x00id", "text": "Some text. More text."},
        {"doc_id": "two\nlines", "text": "Some text. More text."},
        {"doc_id": "", "text": "Some text. More text."},
        {"doc_id": "long\n" + "z" * 50_000, "text": "Some text. More text."},
        {"doc_id": "half\ud800", "text": "Some text. More text."},
    ])
    for _ in range(2):  # a NUL once aborted every later run too
        state, row = run_flow(jl, tmp_path / "db")
        reasons = {f["doc_id"]: f["reason"] for f in json.loads(row["failures_json"])}
        clipped = ("long\n" + "z" * 50_000)[:200]  # never stored: its start is recorded
        assert set(reasons) == {"nul\x00id", "two\nlines", "", clipped, "half\\ud800"}
        assert all("invalid doc_id" in r for r in reasons.values())
        # a hostile 50,000-character id is named by its start and length, not whole
        long = reasons[clipped]
        assert len(long) < 300 and "... (50,005 characters): control character U+000A" in long
        assert "lone surrogate U+D800" in reasons["half\\ud800"]
        assert row["n_new"] + row["n_unchanged"] == 1 and state.is_failed()
    assert set(index_state(str(tmp_path / "db"))) == {"ok"}


# -- 5. failures are visible as the flow run's state ------------------------------------


def _api_state(state) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(state.state_details.flow_run_id).state.type.value


def test_failed_documents_fail_the_flow_run_after_all_work(
    prefect_harness, tmp_path, monkeypatch
):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from sproutrag.flows.cli import main
    from sproutrag.flows.index_corpus import index_corpus

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, {"ok.txt": TEXTS["a.txt"], "empty.txt": " "})
    state, row = run_flow(corpus, db)
    assert state.is_failed() and _api_state(state) == "FAILED"
    assert isinstance(state.result(raise_on_failure=False), DocumentsFailedError)
    assert (row["n_new"], row["n_failed"], row["status"]) == (1, 1, "failed")
    assert runs(db)[-1]["status"] == "failed" and "1 of 2" in runs(db)[-1]["message"]
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    assert [a.key for a in found] == ["index-run"]
    assert str(state.result(raise_on_failure=False)).endswith(
        "; the other documents were indexed; 1 failed, the first: empty.txt: empty document "
        "(no text to index)")  # the state names it, not only the log
    with pytest.raises(DocumentsFailedError, match="1 of 2 documents failed.*; no other "
                       "document was new or changed; 1 failed, the first: empty.txt"):
        index_corpus(corpus=str(corpus), db=str(db))
    assert main(["index", str(corpus), "--db", str(db)]) == 3  # the documented exit code

    monkeypatch.setenv("SPROUTRAG_PIPELINE__MAX_FAILED_SHARE", "0.5")
    state, row = run_flow(corpus, db)
    assert state.is_completed() and row["status"] == "completed" and row["n_failed"] == 1
    assert main(["index", str(corpus), "--db", str(db)]) == 3


def test_failed_queries_fail_the_query_flow_run(prefect_harness, tmp_path, monkeypatch):
    from sproutrag.flows.query_corpus import query_corpus

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, {"a.txt": TEXTS["a.txt"]})
    run_index(corpus, db)
    queries = write_jsonl(tmp_path / "q.jsonl", [{"qid": "good", "query": "delivery time"},
                                            {"qid": "empty", "query": ""}])
    out = tmp_path / "r.jsonl"
    state = query_corpus(queries=str(queries), db=str(db), out=str(out), return_state=True)
    assert state.is_failed() and _api_state(state) == "FAILED"
    error = state.result(raise_on_failure=False)
    assert isinstance(error, QueriesFailedError) and error.row["n_failed"] == 1
    assert [json.loads(x)["qid"] for x in out.read_text().splitlines()] == ["good", "empty"]
    monkeypatch.setenv("SPROUTRAG_PIPELINE__MAX_FAILED_QUERY_SHARE", "0.5")
    assert query_corpus(queries=str(queries), db=str(db), out=str(out))["n_failed"] == 1


# -- 6. signals ------------------------------------------------------------------------


def _corpus_of(n: int, root: Path) -> Path:
    texts = list(TEXTS.values())
    write_files(root, {f"doc-{k:02d}.txt": f"Document {k}. {texts[k % 3]}" for k in range(n)})
    return root


def test_sigint_stops_after_the_batch_being_stored(prefect_harness, tmp_path, monkeypatch):
    corpus, db = _corpus_of(4, tmp_path / "corpus"), tmp_path / "db"
    monkeypatch.setenv("SPROUTRAG_PIPELINE__BATCH_DOCS", "1")
    monkeypatch.setenv("SPROUTRAG_CRASH_AT", "batch-stored:SIGINT")  # a real SIGINT, on cue
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when pytest runs as a background job
    state, row = run_flow(corpus, db)
    assert state.is_cancelled()
    assert isinstance(state.result(raise_on_failure=False), RunInterruptedError)
    assert (row["status"], row["n_new"]) == ("interrupted", 1)
    assert "interrupted by SIGINT" in row["message"] and row["finished_at"] is not None
    assert signal.getsignal(signal.SIGINT) is before  # restored
    assert len(index_state(db)) == 1 and not list((db / "_work").iterdir())
    monkeypatch.delenv("SPROUTRAG_CRASH_AT")
    assert run_index(corpus, db)["n_new"] == 3


def _default_sigint() -> None:
    """preexec_fn: SIGINT as in a terminal (a background job's shell ignores it, and an
    ignored signal stays ignored in the command and its server)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_signal_stops_promptly_records_the_run_and_its_server(prefect_harness, tmp_path, how):
    """SIGTERM to the command, or Ctrl-C in a terminal: SIGINT to its whole process group
    (issue 23, finding 7: that also stopped the temporary server, and the run then took
    minutes of connection tracebacks to end, without its summary)."""
    corpus, db = _corpus_of(12, tmp_path / "corpus"), tmp_path / "db"
    env = {"PREFECT_HOME": str(tmp_path / "prefect"), "SPROUTRAG_PIPELINE__BATCH_DOCS": "1"}
    proc = start_index_cli(  # its own temporary server; its own process group, as a
        corpus, db, env, own_server=True,  # terminal's foreground job
        start_new_session=True, preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 300  # signal once batch 0 is encoded (while it is
        # stored or batch 1 is encoded): that batch is finished, nothing after it starts
        while not list((db / "_work").glob("sproutrag-run-*/batch-00000/embeddings.parquet")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.05)
        children = wait_for_child(proc, "uvicorn", timeout=10)  # the server, running
        if how == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGINT)
        try:  # generous: one small batch and a shutdown
            output = proc.communicate(timeout=60)[0].decode()
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"still running 60 s after {how}: {proc.communicate()[0][-3000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    name = "SIGTERM" if how == "SIGTERM" else "SIGINT"
    assert proc.returncode == 1 and f"interrupted by {name}" in output, output
    assert "indexed " in output and "Traceback" not in output, output  # the summary, quietly
    assert_gone(set(children))
    [run] = runs(db)
    assert run["status"] == "interrupted" and run["finished_at"] is not None
    stored = index_state(db)
    assert 0 < len(stored) < 12 and not list((db / "_work").iterdir())
    assert run_index(corpus, db)["n_new"] == 12 - len(stored)


@pytest.mark.parametrize("command, point", [("index", "server-start"),
                                            ("query", "query-answered")])
def test_sigterm_outside_the_batches_exits_1_saying_so(prefect_harness, tmp_path, command,
                                                        point):
    """SIGTERM while an index run's temporary server starts, or during a query batch, killed
    the command with exit 143 and no word (the flow run, if any, ended Crashed)."""
    corpus, db, out = tmp_path / "corpus", tmp_path / "db", tmp_path / "r.jsonl"
    write_files(corpus, TEXTS)
    if command == "query":
        run_index(corpus, db)
    queries = write_jsonl(tmp_path / "q.jsonl", [{"qid": "1", "query": "delivery time"}])
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # its own server
    env.update(SPROUTRAG_CRASH_AT=f"{point}:SIGTERM", PREFECT_HOME=str(tmp_path / "prefect"))
    args = ([str(corpus), "--db", str(db)] if command == "index" else
            ["--db", str(db), "--queries", str(queries), "--out", str(out)])
    done = subprocess.run([*CLI, command, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert f"sproutrag {command}: interrupted (SIGTERM); stopped" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    if command == "index":
        assert not (db / "documents.lance").exists()  # nothing was indexed


def test_ctrl_c_stops_a_query_batch_without_traceback(prefect_harness, tmp_path):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    queries = write_jsonl(tmp_path / "q.jsonl", [{"qid": str(n), "query": "delivery time"}
                                            for n in range(3)])
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "SPROUTRAG_CRASH_AT": "query-answered:SIGINT"}  # after query 1
    done = subprocess.run(
        [*CLI, "query", "--db", str(db), "--queries",
         str(queries), "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300, preexec_fn=_default_sigint,
    )
    assert done.returncode == 1, done.stderr  # was: KeyboardInterrupt's traceback, killed
    assert "sproutrag query: interrupted (SIGINT)" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_full_disk_ends_the_run_in_one_line_counting_what_was_stored(
        prefect_harness, tmp_path):
    """A full disk (the test hook raises ENOSPC once the first batch is stored, as a real
    one would at the next write): one line and exit 1, no traceback (the temporary server
    stops quietly), the batch in flight ends before the run's work folder is removed (no
    folder left), and the `runs` row counts the documents committed, not planned."""
    corpus, db = _corpus_of(6, tmp_path / "corpus"), tmp_path / "db"
    env = {"PREFECT_HOME": str(tmp_path / "prefect"), "SPROUTRAG_PIPELINE__BATCH_DOCS": "1",
           "SPROUTRAG_CRASH_AT": "batch-stored:ENOSPC"}
    proc = start_index_cli(corpus, db, env, own_server=True)
    output = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 1, output
    assert "No space left on device" in output and "Traceback" not in output, output
    [run] = runs(db)
    assert run["status"] == "failed" and "No space left" in run["message"]
    assert run["n_new"] == len(index_state(db)) == 1
    time.sleep(1)  # a task still running would write its batch folder now
    assert not list((db / "_work").iterdir())
    assert run_index(corpus, db)["n_new"] == 5


# -- 7. bounded growth -----------------------------------------------------------------


def test_an_unchanged_run_writes_only_its_runs_row(prefect_harness, tmp_path):
    import lancedb

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    for path in corpus.rglob("*.*"):  # settled files (see the next test for fresh ones)
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    run_index(corpus, db)
    conn = lancedb.connect(str(db))

    def versions() -> dict[str, int]:
        return {t: len(conn.open_table(t).list_versions()) for t in ("documents", "nodes",
                                                                      "runs")}

    before = versions()
    for _ in range(3):
        assert run_index(corpus, db)["n_unchanged"] == 3
    after = versions()
    assert (after["documents"], after["nodes"]) == (before["documents"], before["nodes"])
    assert after["runs"] - before["runs"] <= 3 * 2 + 1  # start + end; a compaction at most


def set_times(corpus, when: float) -> None:
    """Every file of CORPUS modified at WHEN (seconds since the epoch)."""
    for path in corpus.rglob("*"):
        if path.is_file():
            os.utime(path, (when, when))


def test_files_are_read_again_until_their_times_settle(prefect_harness, tmp_path):
    """A file modified within seconds of the listing may change again within the same
    modification time: its time is not stored, so the next run reads it (and, its text
    unchanged, stores the time); after that the listing alone says it is unchanged."""
    from sproutrag.storage.store import Store

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    # every file is fresh: its time is at least the listing's less RACY, here whatever
    # the run's start costs on a loaded machine (the times one hour ahead)
    set_times(corpus, time.time() + 3600)
    run_index(corpus, db)
    stored = Store.open_existing(str(db)).stored_state().to_pylist()
    assert {r["doc_id"]: r["modified_at"] for r in stored} == dict.fromkeys(TEXTS)
    assert [r["source_size"] for r in stored] == [len(TEXTS[r["doc_id"]].encode())
                                                  for r in stored]
    set_times(corpus, time.time() - 60)  # settled: a minute before the listing
    again = run_index(corpus, db)
    assert (again["n_unchanged"], again["n_changed"]) == (3, 0)
    stored = Store.open_existing(str(db)).stored_state().to_pylist()
    assert all(r["modified_at"] is not None for r in stored)
    (corpus / "a.txt").write_text(TEXTS["a.txt"] + " Added.", encoding="utf-8")
    os.utime(corpus / "a.txt", (time.time() - 60, time.time() - 60))
    last = run_index(corpus, db)  # the listing differs: read, changed
    assert (last["n_unchanged"], last["n_changed"]) == (2, 1)


# -- schema 1 --------------------------------------------------------------------------


def test_schema_1_database_is_refused_by_queries_and_migrated_by_the_next_run(
    prefect_harness, tmp_path, capsys
):
    from sproutrag.flows.cli import main

    corpus, db = tmp_path / "corpus", tmp_path / "db"
    write_files(corpus, TEXTS)
    run_index(corpus, db)
    make_schema_1(str(db), fingerprint="schema-1 fingerprint")
    capsys.readouterr()
    assert main(["query", "--db", str(db), "When does the supplier deliver?"]) == 1
    err = capsys.readouterr().err
    assert "schema version 1" in err and "sproutrag index" in err and "Traceback" not in err
    run = run_index(corpus, db)
    assert (run["n_changed"], run["n_unchanged"], run["status"]) == (3, 0, "completed")
    assert {k: h for k, (h, _) in index_state(db).items()} == {
        k: content_hash(v) for k, v in TEXTS.items()}
    assert [r["status"] for r in runs(db)] == ["completed", "completed"]
    assert main(["query", "--db", str(db), "When does the supplier deliver?"]) == 0
