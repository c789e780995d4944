"""End to end: a real Prefect server on loopback, a process work pool and worker, the
deployments of infra/prefect.yaml, and one `prefect deployment run index-corpus/nightly`.

Everything started here runs in its own process group and is stopped by group id
(SIGINT first, as Prefect's server and worker expect, then SIGKILL), pass or fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, SMALL_DOCS
from tests.processes import free_port, stop_group, wait_http

pytestmark = pytest.mark.model

POOL = "sproutrag-process"  # infra/prefect.yaml's work pool
PREFECT = str(Path(sys.executable).with_name("prefect"))
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


class Prefect:
    """A Prefect server of our own (own PREFECT_HOME, SQLite) and the processes we start."""

    def __init__(self, home: Path) -> None:
        self.home, self.port = home, free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.env = {
            **os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": self.api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_SERVER_DATABASE_CONNECTION_URL":
                f"sqlite+aiosqlite:///{home / 'prefect.db'}",
            "PWD": str(ROOT),  # the pull step's directory, resolved at deploy time
        }
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, *args: str, cwd: Path) -> subprocess.Popen:
        log = open(self.home / f"{name}.log", "wb")  # noqa: SIM115 - lives with the process
        proc = subprocess.Popen(
            [PREFECT, *args], cwd=cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def cli(self, *args: str, timeout: float = 180) -> str:
        out = subprocess.run(
            [PREFECT, *args], cwd=ROOT, env=self.env, capture_output=True, text=True,
            timeout=timeout,
        )
        assert out.returncode == 0, f"prefect {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
        return out.stdout

    def get(self, path: str):
        import httpx

        return httpx.get(f"{self.api}{path}", timeout=10).raise_for_status().json()

    def post(self, path: str, body: dict):
        import httpx

        return httpx.post(f"{self.api}{path}", json=body, timeout=10).raise_for_status().json()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.home.glob("*.log"))
        )

    def stop(self) -> None:
        for proc in reversed(self.procs):  # the worker (and its flow runs), then the server
            stop_group(proc, grace=5)  # all runs have ended: nothing to wait for


@pytest.fixture
def prefect(tmp_path):
    home = tmp_path / "prefect-home"
    home.mkdir()
    p = Prefect(home)
    try:
        server = p.start("server", "server", "start", "--host", "127.0.0.1", "--port",
                         str(p.port), cwd=tmp_path)
        wait_http(f"{p.api}/health", timeout=120, proc=server)
        yield p
    finally:
        p.stop()


def _wait_for_run(p: Prefect, run_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = p.get(f"/flow_runs/{run_id}")
        if run["state_type"] in FINAL:
            return run
        time.sleep(1)
    raise TimeoutError(f"flow run {run_id} not finished after {timeout:.0f} s:\n{p.logs()}")


def test_nightly_deployment_runs_on_a_worker(prefect, small_corpus, tmp_path):
    from sproutrag.storage.store import Store

    prefect.cli("work-pool", "create", POOL, "--type", "process")
    prefect.cli("--no-prompt", "deploy", "--all", "--prefect-file", "infra/prefect.yaml")
    nightly = prefect.get("/deployments/name/index-corpus/nightly")
    assert [s["schedule"]["cron"] for s in nightly["schedules"]] == ["0 2 * * *"]
    limit = nightly.get("global_concurrency_limit") or {}
    assert limit.get("limit") == 1 and nightly["work_pool_name"] == POOL, nightly
    assert nightly["concurrency_options"]["collision_strategy"] == "ENQUEUE"
    assert nightly["pull_steps"] == [{"prefect.deployments.steps.set_working_directory": {
        "directory": str(ROOT)}}]
    assert prefect.get("/deployments/name/query-corpus/batch")["parameters"]["k"] == 5

    prefect.start("worker", "worker", "start", "--pool", POOL, cwd=tmp_path)
    db = tmp_path / "db"
    params = {"corpus": str(small_corpus), "db": str(db)}
    out = prefect.cli("deployment", "run", "index-corpus/nightly",
                      "--params", json.dumps(params))
    run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", out).group(1)

    run = _wait_for_run(prefect, run_id, timeout=300)
    assert run["state_type"] == "COMPLETED", prefect.logs()
    artifacts = prefect.post("/artifacts/filter",
                             {"artifacts": {"flow_run_id": {"any_": [run_id]}}})
    [artifact] = [a for a in artifacts if a["key"] == "index-run"]
    assert artifact["type"] == "markdown" and "| 3 | 0 | 0 | 0 | 0 |" in artifact["data"]

    store = Store.open_existing(str(db))
    documents = store.table("documents").to_arrow().to_pylist()
    assert sorted(d["doc_id"] for d in documents) == sorted(SMALL_DOCS)
    assert store.table("nodes").count_rows() == sum(2 * d["n_chunks"] - 1 for d in documents)
    [row] = store.table("runs").to_arrow().to_pylist()
    assert (row["n_new"], row["n_failed"]) == (3, 0)
