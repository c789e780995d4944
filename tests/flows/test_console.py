"""The command line's console: expected errors are logged without their traceback."""

from __future__ import annotations

import logging
import os
import sys

from sproutrag.flows.console import _Quiet

from sproutrag.interrupt import StopRequested


def _record(exc: BaseException) -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        return logging.LogRecord("prefect.task_runs", logging.ERROR, __file__, 1,
                                 "Task run failed with exception: %r", (exc,), sys.exc_info())


def test_a_batch_stopped_by_a_signal_is_logged_without_traceback():
    # Ctrl-C while a batch's encode task waited for the model: the task raises
    # StopRequested ("... encode not started"), which is not an error of the code.
    line = _Quiet(logging.Formatter()).format(
        _record(StopRequested("interrupted by SIGINT: encode not started")))
    assert "encode not started" in line and "Traceback" not in line


def test_a_bug_keeps_its_traceback():
    line = _Quiet(logging.Formatter()).format(_record(ZeroDivisionError("division by zero")))
    assert "Traceback" in line and "ZeroDivisionError" in line


def test_the_temporary_server_logs_only_what_is_critical(monkeypatch):
    """Stopped with the command, the temporary server's services now and then logged
    "Error flushing events" with tracebacks after a run that succeeded. Its own log
    level is CRITICAL unless the user sets PREFECT_SERVER_LOGGING_LEVEL; this process's
    environment is left as it was."""
    from pathlib import Path

    from prefect.server.api.server import SubprocessASGIServer
    from sproutrag.flows.server import QUIET_SERVER_ENV, SERVER_LOG_LEVEL, _start_server

    monkeypatch.delenv("PREFECT_SERVER_LOGGING_LEVEL", raising=False)
    monkeypatch.delenv("PREFECT_LOGGING_ROOT_LEVEL", raising=False)
    # Prefect keeps one server per port, None included: the test session's server is
    # that one; this test starts (and stops) a server of its own
    monkeypatch.setattr(SubprocessASGIServer, "_instances", {})
    server = _start_server()
    try:
        environ = Path(f"/proc/{server.server_process.pid}/environ").read_bytes().split(b"\0")
    finally:
        server.stop()
    assert f"PREFECT_SERVER_LOGGING_LEVEL={SERVER_LOG_LEVEL}".encode() in environ
    # the root logger too: SQLAlchemy's pool logged a cancelled reset as the server stopped
    assert f"PREFECT_LOGGING_ROOT_LEVEL={SERVER_LOG_LEVEL}".encode() in environ
    assert not set(QUIET_SERVER_ENV) & set(os.environ)
