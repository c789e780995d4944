"""Helpers for the operations tests: free ports, small corpora, stopping what we started."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLE

SMALL_DOCS = ("field_notes_river_survey.txt", "nda_harbor_labs.txt", "one_sentence.txt")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Wait until URL answers 200 (or the process we wait on has died)."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before {url} was up")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def stop_group(proc: subprocess.Popen, *, first: int = signal.SIGINT, grace: float = 15) -> None:
    """Stop a process started with start_new_session=True and its children, by group id.

    Prefect workers and servers stop cleanly on SIGINT (not SIGTERM); whatever is left
    after the grace period is killed.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, first)
            proc.wait(timeout=grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children that outlived the leader too
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    """Three small documents of the sample corpus, copied (tests may change them)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in SMALL_DOCS:
        shutil.copy(SAMPLE / name, corpus / name)
    return corpus
