"""Helpers shared by test modules: corpora on disk, the index's contents, flow and CLI runs
(also without root's permission-bypassing capabilities), named pipes that must not block."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: Run a command as root but without the capabilities that bypass file permissions.
WITHOUT_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def write_files(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def lock_folder(path: Path) -> None:
    """Make PATH unlistable for a process run with WITHOUT_DAC (we are root)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to take away permission-bypassing capabilities")
    for sub in [path, *path.rglob("*")]:
        os.chown(sub, 65534, 65534, follow_symlinks=False)
    path.chmod(0o700)


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


def run_flow(corpus, db, **kw):
    """(final state, the run's `runs` row) of one index-corpus flow run."""
    from flows.index_corpus import index_corpus

    state = index_corpus(corpus=str(corpus), db=str(db), return_state=True, **kw)
    result = state.result(raise_on_failure=False)
    row = getattr(result, "row", result)
    if isinstance(row, BaseException):
        raise row
    return state, row


def run_cli(*args: str, prefix: list[str] = (), timeout: float = 300,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`sproutrag ARGS` in a subprocess on the test session's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), **(env_extra or {})}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=timeout,
    )


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


def runs(db) -> list[dict]:
    """The database's `runs` rows, oldest first."""
    from sproutrag.storage.store import Store

    rows = Store.open_existing(str(db)).table("runs").to_arrow().to_pylist()
    return sorted(rows, key=lambda r: r["started_at"])
