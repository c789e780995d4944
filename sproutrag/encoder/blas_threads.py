"""Numpy's BLAS threads, for the whole process (threadpoolctl's view of the libraries).

OpenBLAS (numpy's, and scipy's beside it) keeps one thread count for the process. Two
things of threadpoolctl (3.8) do not suit a library that sets it from any thread:

* for OpenBLAS with pthreads, only the first Python thread that sets a limit (while it
  lives) may set one again: a limit asked by any other thread is dropped silently, so a
  web service's second thread embedding a question would keep every BLAS thread;
* a `ThreadpoolController` sees the libraries loaded when it was made: one kept from
  before scipy was imported would not know scipy's OpenBLAS.

So each call scans the loaded libraries again and sets each library's count with its own
setter (`_real_set_num_threads`, threadpoolctl's call of the library's function;
`set_num_threads` on a threadpoolctl without it): 0.3 ms a question, measured alone.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


def _libraries() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries this process has loaded now."""
    from threadpoolctl import ThreadpoolController

    return list(ThreadpoolController().select(user_api="blas").lib_controllers)


def _set(lib: Any, threads: int) -> None:
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(threads)


def set_blas_threads(threads: int) -> list[tuple[Any, int]]:
    """Set every loaded BLAS library's thread count to THREADS for the whole process;
    returns (library, its count before) to give to `restore`."""
    found = [(lib, lib.get_num_threads()) for lib in _libraries()]
    for lib, _ in found:
        _set(lib, threads)
    return found


def restore(saved: list[tuple[Any, int]]) -> None:
    """Give each library of SAVED (`set_blas_threads`) its count back."""
    for lib, threads in saved:
        if threads:
            _set(lib, threads)


_lock = threading.Lock()
_users = 0
_saved: list[tuple[Any, int]] = []


@contextlib.contextmanager
def blas_on_one_thread() -> Iterator[None]:
    """BLAS on one thread while the block runs; the process's counts come back when the
    last of the threads inside such a block at once leaves it (a count: BLAS's thread
    count is the whole process's)."""
    global _users, _saved
    with _lock:
        if _users == 0:
            _saved = set_blas_threads(1)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                restore(_saved)
                _saved = []
