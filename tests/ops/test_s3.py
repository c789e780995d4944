"""S3: corpus, Parquet intermediates and the LanceDB database on a real S3-compatible
server (moto's server mode, a subprocess on 127.0.0.1): index, query, re-index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sproutrag.schemas.settings import load_settings

from sproutrag.ingest.sources import DocLimits
from tests.helpers import CLI, SAMPLE, SMALL_DOCS, make_schema_3
from tests.processes import free_port, stop_group, wait_http

KEY_ID, SECRET = "sproutrag-test-key", "sproutrag-secret-never-logged"
REGION = "us-east-1"


@pytest.fixture
def s3_endpoint(moto):
    return moto[0]


@pytest.fixture
def moto(tmp_path):
    """(endpoint, process) of a moto S3 server on a free loopback port, stopped by
    process group at the end."""
    port = free_port()
    exe = Path(sys.executable).with_name("moto_server")
    log = open(tmp_path / "moto.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        wait_http(f"{endpoint}/moto-api/", timeout=60, proc=proc)
        yield endpoint, proc
    finally:
        stop_group(proc, grace=5)
        log.close()


@pytest.fixture
def s3(s3_endpoint):
    import boto3

    client = boto3.client(
        "s3", endpoint_url=s3_endpoint, region_name=REGION,
        aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
    )
    for bucket in ("corpus", "lake"):
        client.create_bucket(Bucket=bucket)
    return client


def _keys(s3, bucket: str, prefix: str) -> list[str]:
    found = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return [o["Key"] for o in found]


def test_storage_options_from_settings_and_environment(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "env-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    storage = load_settings(storage={"endpoint": "http://127.0.0.1:9"}).storage
    assert storage.fsspec_options("data/local") == {} and storage.lance_options("db") is None
    assert storage.fsspec_options("s3://b/x") == {
        "key": "env-key", "secret": "env-secret", "endpoint_url": "http://127.0.0.1:9",
        "client_kwargs": {"region_name": "eu-west-1"},
    }
    assert storage.lance_options("s3://b/db") == {
        "aws_access_key_id": "env-key", "aws_secret_access_key": "env-secret",
        "endpoint": "http://127.0.0.1:9", "region": "eu-west-1", "allow_http": "true",
    }
    monkeypatch.setenv("SPROUTRAG_STORAGE__SECRET_ACCESS_KEY", SECRET)
    settings = load_settings()
    assert settings.storage.lance_options("s3://b/db")["aws_secret_access_key"] == SECRET
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert SECRET not in text


def test_a_jsonl_corpus_on_s3_is_read_again_line_by_line(s3, s3_endpoint):
    """A JSONL corpus on S3: each listed line read again at its offset, a line longer
    than the first block (8 KiB) whole, one over the limit refused, the rest of the
    object never needed."""
    from sproutrag.ingest.corpus import discover

    rows = [{"doc_id": "short", "text": "A short one."},
            {"doc_id": "long", "text": "word " * 5000},
            {"doc_id": "huge", "text": "x" * 70_000},
            {"doc_id": "last", "text": "The last line has no newline."}]
    body = "\n".join(json.dumps(r) for r in rows).encode()
    s3.put_object(Bucket="corpus", Key="c.jsonl", Body=body)
    options = {"key": KEY_ID, "secret": SECRET, "endpoint_url": s3_endpoint,
               "client_kwargs": {"region_name": REGION}}
    found = discover("s3://corpus/c.jsonl", storage_options=options,
                     limits=DocLimits(max_bytes=60_000))
    assert {d.doc_id: d.text for d in found.docs} == {
        r["doc_id"]: r["text"] for r in rows if r["doc_id"] != "huge"}
    [huge] = found.failures
    assert huge.doc_id == "line 3" and "longer than 60,000 bytes" in huge.reason


def test_hidden_objects_below_a_prefix_are_left_out(s3, s3_endpoint):
    """As in a local folder, a key with a name starting with a dot below the corpus
    prefix is hidden: left out unless include_hidden."""
    from sproutrag.ingest.corpus import discover

    for key in ("docs/a.md", "docs/sub/b.txt", "docs/.draft.md", "docs/.git/c.txt",
                "docs/sub/.cache/d.md"):
        s3.put_object(Bucket="corpus", Key=key, Body=b"Some text.")
    options = {"key": KEY_ID, "secret": SECRET, "endpoint_url": s3_endpoint,
               "client_kwargs": {"region_name": REGION}}
    found = discover("s3://corpus/docs", storage_options=options)
    assert [d.doc_id for d in found.docs] == ["a.md", "sub/b.txt"]
    found = discover("s3://corpus/docs", storage_options=options, include_hidden=True)
    assert [d.doc_id for d in found.docs] == [".draft.md", ".git/c.txt", "a.md",
                                              "sub/.cache/d.md", "sub/b.txt"]


@pytest.mark.model
def test_index_query_and_reindex_on_s3(prefect_harness, s3, s3_endpoint, tmp_path, monkeypatch):
    import lancedb
    from sproutrag.flows.index_corpus import index_corpus
    from sproutrag.flows.query_corpus import query_corpus

    from sproutrag.errors import StoragePathError
    from sproutrag.search.batch import run_queries
    from sproutrag.search.retriever import Retriever
    from sproutrag.storage.store import Store

    # Credentials as secret settings (the environment's AWS_* work the same way).
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPROUTRAG_STORAGE__ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("SPROUTRAG_STORAGE__SECRET_ACCESS_KEY", SECRET)
    for name in SMALL_DOCS:
        s3.put_object(Bucket="corpus", Key=f"docs/{name}", Body=(SAMPLE / name).read_bytes())
    config = tmp_path / "s3.yaml"
    config.write_text(
        f"storage:\n  endpoint: {s3_endpoint}\n  region: {REGION}\n  allow_http: true\n"
        "pipeline:\n  work_dir: s3://lake/work\n",
        encoding="utf-8",
    )
    corpus, db = "s3://corpus/docs", "s3://lake/db"
    # The work prefix is shared: only this database's run folders (name and marker) go.
    dead = "work/sproutrag-run-0123456789ab"
    s3.put_object(Bucket="lake", Key=f"{dead}/.sproutrag-run.json",
                  Body=json.dumps({"db": db, "run_id": "0123456789ab"}).encode())
    s3.put_object(Bucket="lake", Key=f"{dead}/batch-00000/chunks.parquet", Body=b"debris")
    kept = ["work/keep.txt", "work/sproutrag-run-bbbbbbbbbbbb/x"]
    for key in kept:
        s3.put_object(Bucket="lake", Key=key, Body=b"not the pipeline's")

    first = index_corpus(corpus=corpus, db=db, config=str(config))
    assert (first["n_new"], first["n_failed"]) == (3, 0)
    assert _keys(s3, "lake", "db/nodes.lance/") and sorted(_keys(s3, "lake", "work/")) == kept
    options = load_settings(config).storage.lance_options(db)
    store = Store.open_existing(db, storage_options=options)
    documents = store.table("documents").to_arrow().to_pylist()
    assert sorted(d["doc_id"] for d in documents) == sorted(SMALL_DOCS)
    assert all(d["source"] == f"{corpus}/{d['doc_id']}" for d in documents)
    for d in documents:  # the object's key, size and ETag (the fast path's identity)
        head = s3.head_object(Bucket="corpus", Key=f"docs/{d['doc_id']}")
        assert d["source_etag"] == head["ETag"].strip('"')
        assert d["source_size"] == head["ContentLength"]
    assert store.table("nodes").count_rows() == first["n_nodes"] == sum(
        2 * d["n_chunks"] - 1 for d in documents
    )

    question = "Where did the survey team find otter spraint?"
    [row] = run_queries(Retriever(db, storage_options=options), [{"qid": "q", "query": question}])
    assert row["results"] and row["results"][0]["doc_id"] == "field_notes_river_survey.txt"
    # without storage_options, the Retriever reads them from the environment's settings
    # (it went to AWS, ignoring SPROUTRAG_STORAGE__ENDPOINT), and an S3 failure is one line
    monkeypatch.setenv("SPROUTRAG_STORAGE__ENDPOINT", s3_endpoint)
    [again] = run_queries(Retriever(db), [{"qid": "q", "query": question}])
    assert again["results"] == row["results"]
    with pytest.raises(StoragePathError, match=f"^s3://nolake/db \\(endpoint {s3_endpoint}\\): "
                       "the bucket does not exist"):
        Retriever("s3://nolake/db")
    monkeypatch.delenv("SPROUTRAG_STORAGE__ENDPOINT")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"qid": "q5", "query": question}) + "\n", encoding="utf-8")
    out = query_corpus(queries=str(queries), db=db, out="s3://lake/out/r.jsonl",
                       config=str(config))
    assert out["n_failed"] == 0 and _keys(s3, "lake", "out/r.jsonl")
    results = lancedb.connect(db, storage_options=options).open_table("results")
    assert results.count_rows() == len(row["results"]) >= 1
    # `sproutrag query --queries` reads an s3:// batch too (it opened it as a local file)
    s3.put_object(Bucket="lake", Key="qs/q.jsonl", Body=queries.read_bytes())
    cli_out = tmp_path / "cli.jsonl"
    proc = subprocess.run([*CLI, "query", "--db", db, "--config", str(config), "--queries",
                           "s3://lake/qs/q.jsonl", "--out", str(cli_out)],
                          capture_output=True, text=True, env={**os.environ,
                                                               "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(cli_out.read_text(encoding="utf-8"))["results"]
    assert [(h["node_id"], h["spans"]) for h in got] == [
        (h["node_id"], h["spans"]) for h in row["results"]]

    # a schema 4 database on S3 is migrated in place by the next run (names computed)
    named = {d["doc_id"]: (d["name"], d["name_key"]) for d in documents}
    assert named["nda_harbor_labs.txt"][0] == "mutual non disclosure agreement"
    make_schema_3(db, "4", storage_options=options)
    changed = (SAMPLE / SMALL_DOCS[0]).read_text(encoding="utf-8") + "\nA closing note.\n"
    s3.put_object(Bucket="corpus", Key=f"docs/{SMALL_DOCS[0]}", Body=changed.encode())
    again = index_corpus(corpus=corpus, db=db, config=str(config))
    migrated = Store.open_existing(db, storage_options=options).table("documents").to_arrow()
    assert {d["doc_id"]: (d["name"], d["name_key"]) for d in migrated.to_pylist()} == named
    assert (again["n_changed"], again["n_unchanged"], again["n_new"]) == (1, 2, 0)
    assert again["n_nodes"] > 0  # only the changed object was read and indexed
    assert again["n_deleted"] == again["n_failed"] == 0
    runs = Store.open_existing(db, storage_options=options).table("runs").to_arrow()
    assert runs.num_rows == 2 and SECRET not in json.dumps(runs.to_pylist(), default=str)


def _leaks(blobs: dict[str, bytes], secrets: list[str]) -> list[str]:
    """Where any of SECRETS occurs in BLOBS (name -> bytes)."""
    return [f"{s!r} in {name}" for name, data in blobs.items() for s in secrets
            if s.encode() in data]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.model
def test_secrets_are_never_printed_logged_or_stored(
    prefect_harness, s3, s3_endpoint, tmp_path, monkeypatch, capfd
):
    """An S3 run with credentials as settings, including a misspelled secret setting:
    the secret values appear in nothing the CLI or the flows print, log or store: not
    in stdout/stderr, the Prefect databases (flow runs, states, logs, artifacts), the
    LanceDB tables or any object in the buckets."""
    from prefect.settings import get_current_settings
    from sproutrag.flows.index_corpus import index_corpus
    from sproutrag.flows.query_corpus import query_corpus

    token, typo = "sproutrag-session-token-never-logged", "sproutrag-misspelled-secret-value"
    secrets = [SECRET, token, typo]
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "PREFECT_API_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPROUTRAG_STORAGE__ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("SPROUTRAG_STORAGE__SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("SPROUTRAG_STORAGE__SESSION_TOKEN", token)
    for name in SMALL_DOCS[:2]:
        s3.put_object(Bucket="corpus", Key=f"docs/{name}", Body=(SAMPLE / name).read_bytes())
    work = tmp_path / "run"
    work.mkdir()
    config = work / "s3.yaml"
    config.write_text(f"storage:\n  endpoint: {s3_endpoint}\n  region: {REGION}\n"
                      "pipeline:\n  work_dir: s3://lake/work\n", encoding="utf-8")
    db, queries = "s3://lake/db", work / "q.jsonl"
    queries.write_text(json.dumps({"qid": "q", "query": "otter spraint"}) + "\n{broken\n",
                       encoding="utf-8")
    s3.put_object(Bucket="lake", Key="q.jsonl", Body=queries.read_bytes())
    env = {**__import__("os").environ, "PREFECT_HOME": str(work / "prefect-home")}
    printed = {}

    def cli(name: str, *args: str, **extra: str) -> int:
        proc = subprocess.run([*CLI, *args],
                              capture_output=True, env={**env, **extra}, cwd=str(work))
        printed[name] = proc.stdout + proc.stderr
        return proc.returncode

    assert cli("index", "index", "s3://corpus/docs", "--db", db, "--config", str(config),
               "--no-progress") == 0, printed["index"].decode()[-2000:]
    assert cli("query", "query", "--db", db, "--config", str(config), "--queries",
               str(queries), "--out", str(work / "r.jsonl")) == 3  # the broken line
    assert cli("typo", "index", "s3://corpus/docs", "--db", db, "--config", str(config),
               SPROUTRAG_STORAGE__SECRET_KEY=typo) == 2
    assert b"SPROUTRAG_STORAGE__SECRET_KEY" in printed["typo"]
    # The flows themselves (a deployment's runs): a query run with a failed line, and an
    # index run whose settings are wrong (the flow run's state carries the error).
    with pytest.raises(Exception, match="1 of 2 queries failed"):
        query_corpus(queries="s3://lake/q.jsonl", db=db, out="s3://lake/out/r.jsonl",
                     config=str(config))
    monkeypatch.setenv("SPROUTRAG_STORAGE__SECRET_KEY", typo)
    with pytest.raises(Exception, match="SPROUTRAG_STORAGE__SECRET_KEY"):
        index_corpus(corpus="s3://corpus/docs", db=db, config=str(config))
    printed["in-process"] = "".join(capfd.readouterr()).encode()

    harness_db = Path(get_current_settings().server.database.connection_url
                      .get_secret_value().split("///", 1)[1])
    stored = {**_files(work), **_files(harness_db.parent)}
    for bucket in ("corpus", "lake"):
        for key in _keys(s3, bucket, ""):
            stored[f"s3://{bucket}/{key}"] = s3.get_object(Bucket=bucket, Key=key)[
                "Body"].read()
    assert any(k.startswith("s3://lake/db/runs.lance") for k in stored)
    assert any(k.startswith("s3://lake/db/results.lance") for k in stored)
    assert any("prefect-home" in k and k.endswith(".db") for k in stored)
    assert not _leaks({**printed, **stored}, secrets)


def test_an_unreachable_endpoint_or_a_missing_bucket_is_one_line(s3, s3_endpoint, tmp_path):
    """What a user gets wrong on S3 is their input, not a bug: one line naming the
    path, the endpoint and what to check (it was a traceback and "internal error")."""
    env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
           "AWS_REGION": REGION, "HF_HUB_OFFLINE": "1"}
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(f"storage:\n  endpoint: {s3_endpoint}\n", encoding="utf-8")
    bad.write_text("storage:\n  endpoint: http://127.0.0.1:1\n", encoding="utf-8")
    for argv, said in (
        (["check", "--db", "s3://nolake/db", "--config", str(good)],
         "s3://nolake/db (endpoint http://127.0.0.1:"),
        (["query", "--db", "s3://lake/db", "--config", str(bad), "a question"],
         "s3://lake/db (endpoint http://127.0.0.1:1): cannot reach the S3 endpoint")):
        proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, env=env,
                              timeout=300)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert said in proc.stderr and SECRET not in proc.stderr and KEY_ID not in proc.stderr
    assert "the bucket does not exist" in subprocess.run(
        [*CLI, "check", "--db", "s3://nolake/db", "--config", str(good)],
        capture_output=True, text=True, env=env, timeout=300).stderr


def test_each_s3_path_is_checked_before_the_run_and_no_bucket_is_made(
    s3, s3_endpoint, tmp_path
):
    """A missing bucket of the work dir failed with a bare "Invalid argument" (in another
    region s3fs made the bucket); of the corpus, without the endpoint; of the database,
    after the server's reply was printed through Prefect's log. Each is now one line
    naming the setting or argument, before Prefect starts; a missing s3:// --queries
    object is a missing --queries file (exit 2)."""
    env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
           "AWS_REGION": "eu-west-1", "HF_HUB_OFFLINE": "1"}
    s3.put_object(Bucket="corpus", Key="docs/a.txt", Body=(SAMPLE / SMALL_DOCS[0]).read_bytes())
    good, nowork = tmp_path / "good.yaml", tmp_path / "nowork.yaml"
    good.write_text(f"storage:\n  endpoint: {s3_endpoint}\n", encoding="utf-8")
    nowork.write_text(f"storage:\n  endpoint: {s3_endpoint}\n"
                      "pipeline:\n  work_dir: s3://nowork/work\n", encoding="utf-8")
    missing = ": the bucket does not exist: create it first (the pipeline creates no bucket)"
    for argv, code, said in (
        (["index", "s3://corpus/docs", "--db", "s3://lake/db", "--config", str(nowork)], 1,
         f"pipeline.work_dir s3://nowork/work (endpoint {s3_endpoint}){missing}"),
        (["index", "s3://nobucket/docs", "--db", "s3://lake/db", "--config", str(good)], 1,
         f"CORPUS s3://nobucket/docs (endpoint {s3_endpoint}){missing}"),
        (["index", "s3://corpus/docs", "--db", "s3://nolake/db", "--config", str(good)], 1,
         f"--db s3://nolake/db (endpoint {s3_endpoint}){missing}"),
        (["query", "--db", "s3://lake/db", "--config", str(good), "--queries",
          "s3://lake/q/missing.jsonl", "--out", str(tmp_path / "r.jsonl")], 2,
         "--queries s3://lake/q/missing.jsonl: no such object"),
    ):
        proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, env=env,
                              timeout=300)
        assert proc.returncode == code, proc.stderr
        assert proc.stderr.strip().splitlines() == [f"sproutrag {argv[0]}: error: {said}"]
    buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    assert buckets == {"corpus", "lake"} and not _keys(s3, "lake", "")  # nothing written


def test_a_deployment_run_checks_its_s3_paths_too(prefect_harness, s3, s3_endpoint,
                                                   tmp_path, monkeypatch):
    """A flow run from a deployment has no command line before it: the flow refuses a
    missing work dir bucket itself, in its own words, and makes no bucket."""
    from sproutrag.flows.index_corpus import index_corpus

    from sproutrag.errors import StoragePathError

    for var, value in (("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", SECRET),
                       ("AWS_REGION", "eu-west-1")):
        monkeypatch.setenv(var, value)
    s3.put_object(Bucket="corpus", Key="docs/a.txt", Body=(SAMPLE / SMALL_DOCS[0]).read_bytes())
    config = tmp_path / "nowork.yaml"
    config.write_text(f"storage:\n  endpoint: {s3_endpoint}\n"
                      "pipeline:\n  work_dir: s3://nowork/work\n", encoding="utf-8")
    with pytest.raises(StoragePathError, match="^pipeline.work_dir s3://nowork/work "
                                               r"\(endpoint .*\): the bucket does not exist"):
        index_corpus(corpus="s3://corpus/docs", db="s3://lake/db", config=str(config))
    assert {b["Name"] for b in s3.list_buckets()["Buckets"]} == {"corpus", "lake"}


def test_s3_gone_mid_run_ends_the_run_with_its_one_line(prefect_harness, s3, moto, tmp_path,
                                                        monkeypatch, caplog):
    """The S3 server gone once the run has started: the flow run ended with LanceDB's raw
    error (a 900-character Rust dump), because completing the runs row on the same
    server failed too and replaced the run's own error. Now the run's error is the one
    line an S3 failure gets, and a warning says the row could not be completed."""
    import sproutrag.flows.index_corpus as index_module

    from sproutrag.errors import StoragePathError

    endpoint, proc = moto
    for var, value in (("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", SECRET),
                       ("AWS_REGION", REGION)):
        monkeypatch.setenv(var, value)
    s3.put_object(Bucket="corpus", Key="docs/a.txt", Body=(SAMPLE / SMALL_DOCS[0]).read_bytes())
    config = tmp_path / "s3.yaml"
    config.write_text(f"storage:\n  endpoint: {endpoint}\n  allow_http: true\n",
                      encoding="utf-8")
    run = index_module._run

    def server_gone(*args, **kwargs):  # the run's row is written: the server goes
        stop_group(proc, grace=5)
        return run(*args, **kwargs)

    monkeypatch.setattr(index_module, "_run", server_gone)
    with pytest.raises(StoragePathError) as raised:
        index_module.index_corpus(corpus="s3://corpus/docs", db="s3://lake/db",
                                  config=str(config))
    assert str(raised.value) == (f"s3://corpus/docs, s3://lake/db (endpoint {endpoint}): "
                                 "cannot reach the S3 endpoint: check storage.endpoint (and "
                                 "that its server runs)")
    assert "could not be completed" in caplog.text and "the next run marks it" in caplog.text

