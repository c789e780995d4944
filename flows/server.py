"""The temporary Prefect server of a command-line run, tied to the command's life.

Without PREFECT_API_URL, Prefect 3 starts a temporary server itself
(`prefect.server.api.server.SubprocessASGIServer`: `python -m uvicorn ...` as a child
process) and stops it at interpreter exit. A command killed with SIGKILL never gets
there, and the server (~220 MB) lives on, re-parented to PID 1. `temporary_server()`
starts the same server (Prefect's class and command line; only the server module's view
of `subprocess.Popen` is wrapped while it starts) before the flow runs, with the
kernel's parent-death signal (Linux `PR_SET_PDEATHSIG`: SIGKILL when the command dies),
in a session of its own, and points the flow at it; on a normal exit it is stopped as usual.

Its own session: Ctrl-C in a terminal sends SIGINT to the whole foreground process group.
In the command's group the server stopped at once, and the run, which finishes its batch on
SIGINT, then spent minutes retrying its API calls against it (hundreds of lines of
connection tracebacks, no summary). Outside it, only the command gets the signal; it stops
between batches and then stops the server itself.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sproutrag.interrupt import crash_point

PR_SET_PDEATHSIG = 1


def _prctl() -> Any:
    """libc's prctl (from the symbols this process already has), looked up before the
    fork: a forked copy of a threaded process should do as little as possible before exec
    (`ctypes.util.find_library`, used there before, even starts a process)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the atexit stop still applies
        return None


def _die_with_parent(prctl: Any, parent: int) -> None:
    """preexec_fn: SIGKILL this child when the thread that started it dies (Linux)."""
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


#: The temporary server's own log level (`PREFECT_SERVER_LOGGING_LEVEL`, when not set):
#: stopped with the command, its services logged "Error flushing events" with four
#: tracebacks now and then after a run that succeeded (exit 0), which log monitoring
#: reads as a failure. The run's own logs are the client's, unchanged.
SERVER_LOG_LEVEL = "CRITICAL"
#: What the temporary server's process logs, each unless the user sets it: the server's
#: own loggers, and the root logger, where SQLAlchemy's pool logged a cancelled reset
#: with its traceback as the server stopped (an upgrade QA pass: 1 run in 35).
QUIET_SERVER_ENV = {"PREFECT_SERVER_LOGGING_LEVEL": SERVER_LOG_LEVEL,
                    "PREFECT_LOGGING_ROOT_LEVEL": SERVER_LOG_LEVEL}


class _Subprocess:
    """The `subprocess` module as Prefect's server module sees it while starting: its
    Popen adds the parent-death signal, a session of the child's own and the quiet log
    levels (`QUIET_SERVER_ENV`, each unless the environment given sets it)."""

    def __init__(self, parent: int) -> None:
        self._parent = parent
        self._prctl = _prctl()

    def Popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802
        prctl, parent = self._prctl, self._parent
        env = dict(kwargs.pop("env", None) or os.environ)
        env.update({k: v for k, v in QUIET_SERVER_ENV.items() if k not in env})
        return subprocess.Popen(
            *args, preexec_fn=lambda: _die_with_parent(prctl, parent), start_new_session=True,
            env=env, **kwargs,
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)


def _start_server():
    import prefect.server.api.server as server_module

    server = server_module.SubprocessASGIServer(port=None)
    real = server_module.subprocess
    server_module.subprocess = _Subprocess(os.getpid())
    try:
        server.start()
    finally:
        server_module.subprocess = real
    return server


def _drain_workers() -> None:
    """Send Prefect's queued logs and events before the server goes away (as Prefect's
    test harness does); otherwise they are retried against a dead server at exit."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        try:
            result = APILogWorker.instance().drain()
            if inspect.isawaitable(result):
                await result
        except RuntimeError:  # the worker never started
            pass
        result = EventsWorker.drain_all()
        if inspect.isawaitable(result):
            await result

    run_coro_as_sync(drain())


@contextmanager
def temporary_server() -> Iterator[str | None]:
    """Run the block against a temporary Prefect server that dies with this process.

    With PREFECT_API_URL set (a real server), does nothing and yields None. Call it from
    the main thread: the kernel signals the child when the starting thread ends.
    """
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield None
        return
    crash_point("server-start")
    server = _start_server()
    # Prefect code that asks for "the" temporary server gets this one, not a second one.
    SubprocessASGIServer._instances[None] = server
    saved = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = server.api_url  # for Prefect's background threads too
    try:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            yield server.api_url
            _drain_workers()
    finally:
        if saved is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = saved
        server.stop()
        SubprocessASGIServer._instances.pop(None, None)
