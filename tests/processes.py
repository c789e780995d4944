"""Helpers for tests that start processes: their children (from /proc), waiting for a
process to stop itself or for its children to die, free ports, HTTP endpoints coming up,
stopping a process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def children_of(pid: int) -> set[int]:
    """The pids of PID's children now."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def process_state(pid: int) -> str | None:
    """The process's state letter (R, S, T stopped, Z zombie, ...); None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether PID runs (a zombie does not)."""
    return process_state(pid) not in (None, "Z")


def children_now(pid: int) -> dict[int, str]:
    """{pid: command line} of PID's children now. A child between fork and exec still
    shows its parent's command line: callers look again until they see what they wait for."""
    found = {}
    for child in children_of(pid):
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
    while process_state(proc.pid) != "T":
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, "the index command never reached its crash point"
        time.sleep(0.05)


def assert_gone(pids: set[int], within: float = 15) -> None:
    """Assert that every process of PIDS has ended within WITHIN seconds."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if alive(p)], "a child of the index command outlived it"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
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
