"""The command line's console: Prefect's log lines without tracebacks for expected errors.

A missing corpus, a bad setting, a full disk or a read-only database are explained by
their message; Prefect's console handler would print each with its traceback (twice: the
task run and the flow run). While `quiet_expected_tracebacks()` is active, the console
shows such records without the traceback; an unexpected exception (a bug) keeps it, and
the records sent to the Prefect server are unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sproutrag.errors import is_expected


class _Quiet(logging.Formatter):
    """Wraps a handler's formatter; drops the traceback of expected exceptions."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not is_expected(exc):
            return self.inner.format(record)
        saved = record.exc_info, record.exc_text
        record.exc_info, record.exc_text = None, None
        try:
            return self.inner.format(record)
        finally:
            record.exc_info, record.exc_text = saved


def _console_handlers() -> list[logging.Handler]:
    from prefect.logging.handlers import PrefectConsoleHandler

    found: list[logging.Handler] = []
    for name in ("prefect", "prefect.flow_runs", "prefect.task_runs", ""):
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, PrefectConsoleHandler) and handler not in found:
                found.append(handler)
    return found


@contextmanager
def quiet_expected_tracebacks() -> Iterator[None]:
    handlers = [(h, h.formatter) for h in _console_handlers()]
    for handler, formatter in handlers:
        handler.setFormatter(_Quiet(formatter or logging.Formatter()))
    try:
        yield
    finally:
        for handler, formatter in handlers:
            handler.setFormatter(formatter)
