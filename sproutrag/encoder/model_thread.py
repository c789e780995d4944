"""One thread runs every forward pass of the process's encoders.

torch's CPU kernels run on OpenMP (GNU libgomp): each thread that starts a parallel region
gets a team of worker threads of its own, and the team stays for the thread's life. The
thread runner gives every encode task whichever pool thread is free, and the model is
warmed up on the main thread, so an index run held several teams. Once libgomp manages
more threads than the machine has cores, its idle workers stop spinning almost at once
and sleep (its "throttled" wait), and every one of the forward's hundreds of small
parallel regions then waits for a sleeping worker to wake. On 2 cores the encode stage
of an index run took 1.2-1.3x as long as the same call on the main thread
(docs/results.md, "One thread for the model").

`on_model_thread` runs a function on the process's one model thread (started on first
use; again in a forked child, where the parent's thread does not exist) and returns its
result or raises its exception; called on that thread, it runs the function directly,
so the encoder's methods may call each other. Callers still take `Encoder.lock` for a
whole encoding: this module only decides where the kernels run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

THREAD_NAME = "sproutrag-model"

_here = threading.local()
_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the pid that started it, pool)


def _mark() -> None:
    _here.model_thread = True


def on_model_thread_now() -> bool:
    """Whether the calling thread is this process's model thread."""
    return getattr(_here, "model_thread", False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():  # none yet, or a forked child's copy
            _pool = (os.getpid(), ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=THREAD_NAME, initializer=_mark))
        return _pool[1]


def on_model_thread(fn: Callable[..., T], /, *args, **kwargs) -> T:
    """FN(*ARGS, **KWARGS) run on the model thread; its result, or its exception raised."""
    if on_model_thread_now():
        return fn(*args, **kwargs)
    return _executor().submit(fn, *args, **kwargs).result()
