"""S3: corpus, Parquet intermediates and the LanceDB database on a real S3-compatible
server (moto's server mode, a subprocess on 127.0.0.1): index, query, re-index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.settings import load_settings
from tests.conftest import SAMPLE
from tests.ops.conftest import SMALL_DOCS, free_port, stop_group, wait_http

KEY_ID, SECRET = "sproutrag-test-key", "sproutrag-secret-never-logged"
REGION = "us-east-1"


@pytest.fixture
def s3_endpoint(tmp_path):
    """A moto S3 server on a free loopback port, stopped by process group at the end."""
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
        yield endpoint
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


@pytest.mark.model
def test_index_query_and_reindex_on_s3(prefect_harness, s3, s3_endpoint, tmp_path, monkeypatch):
    import lancedb

    from flows.index_corpus import index_corpus
    from flows.query_corpus import query_corpus
    from sproutrag.queries import run_queries
    from sproutrag.retrieval import Retriever
    from sproutrag.store import Store

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
    assert store.table("nodes").count_rows() == first["n_nodes"] == sum(
        2 * d["n_chunks"] - 1 for d in documents
    )

    question = "Where did the survey team find otter spraint?"
    [row] = run_queries(Retriever(db, storage_options=options), [{"qid": "q", "query": question}])
    assert row["results"] and row["results"][0]["doc_id"] == "field_notes_river_survey.txt"
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"qid": "q5", "query": question}) + "\n", encoding="utf-8")
    out = query_corpus(queries=str(queries), db=db, out="s3://lake/out/r.jsonl",
                       config=str(config))
    assert out["n_failed"] == 0 and _keys(s3, "lake", "out/r.jsonl")
    results = lancedb.connect(db, storage_options=options).open_table("results")
    assert results.count_rows() == len(row["results"]) >= 1

    changed = (SAMPLE / SMALL_DOCS[0]).read_text(encoding="utf-8") + "\nA closing note.\n"
    s3.put_object(Bucket="corpus", Key=f"docs/{SMALL_DOCS[0]}", Body=changed.encode())
    again = index_corpus(corpus=corpus, db=db, config=str(config))
    assert (again["n_changed"], again["n_unchanged"], again["n_new"]) == (1, 2, 0)
    assert again["n_deleted"] == again["n_failed"] == 0
    runs = Store.open_existing(db, storage_options=options).table("runs").to_arrow()
    assert runs.num_rows == 2 and SECRET not in json.dumps(runs.to_pylist(), default=str)
