"""Clean shutdown on SIGTERM / SIGINT, and the crash hooks of the crash-safety tests.

`stop_on_signals()` turns the first SIGTERM or SIGINT into a request (`stop_requested()`)
that the index loop checks between batches: the batch being stored is finished, nothing
new starts, and the run is recorded as interrupted. A second signal stops at once
(KeyboardInterrupt). Handlers can only be installed from the main thread; elsewhere the
context manager does nothing and signals keep their usual effect.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

_stop = threading.Event()
_signal_name: list[str] = []
_fired: set[str] = set()


class StopRequested(Exception):  # noqa: N818 - a request, not an error of the code
    """Raised by work that sees a stop request before it starts."""


def stop_requested() -> bool:
    return _stop.is_set()


def stop_reason() -> str:
    return f"interrupted by {_signal_name[0]}" if _signal_name else "interrupted"


def check_stop(where: str) -> None:
    """Raise StopRequested if a stop was requested (for work that has not started)."""
    if _stop.is_set():
        raise StopRequested(f"{stop_reason()}: {where} not started")


def _handler(signum: int, frame: object) -> None:
    if _stop.is_set():  # the second signal: stop now
        raise KeyboardInterrupt(f"second {signal.Signals(signum).name}: stopping at once")
    _signal_name.append(signal.Signals(signum).name)
    _stop.set()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM / SIGINT request a stop instead of killing the process."""
    _stop.clear()
    _signal_name.clear()
    _fired.clear()
    try:
        previous = {s: signal.signal(s, _handler) for s in STOP_SIGNALS}
    except ValueError:  # not the main thread: leave the signals alone
        previous = {}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _stop.clear()  # the request was for this block's work only


def _term_handler(signum: int, frame: object) -> None:
    raise KeyboardInterrupt("SIGTERM")


@contextmanager
def term_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM stops the process as Ctrl-C does (KeyboardInterrupt
    "SIGTERM"), where `stop_on_signals` does not hold it: before an index run's batches
    start (the temporary Prefect server starting; Prefect's engine hands the signal back
    here after its own handling) and after them. By default it killed the command with
    exit 143 and no word. Nothing outside the main thread."""
    try:
        previous = signal.signal(signal.SIGTERM, _term_handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def crash_point(name: str) -> None:
    """Test hook: SPROUTRAG_CRASH_AT=<name> kills the process here with SIGKILL;
    SPROUTRAG_CRASH_AT=<name>:<SIGNAL> sends it that signal instead, and
    SPROUTRAG_CRASH_AT=<name>:ENOSPC raises the error of a full disk (once per run)."""
    wanted = os.environ.get("SPROUTRAG_CRASH_AT", "")
    point, _, sig = wanted.partition(":")
    if point != name or wanted in _fired:
        return
    _fired.add(wanted)
    if sig == "ENOSPC":
        raise OSError(errno.ENOSPC, "No space left on device (SPROUTRAG_CRASH_AT)")
    os.kill(os.getpid(), getattr(signal, sig) if sig else signal.SIGKILL)
