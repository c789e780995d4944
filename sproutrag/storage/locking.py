"""One index run per database at a time: an advisory lock file beside the tables.

On a local database the lock is `fcntl.flock` on `<db>/.sproutrag-index.lock`: the
kernel releases it when the holder dies (kill -9 included), so a crashed run never
leaves a stale lock. Object stores (s3://) have no such lock: there, run the deployment
with a Prefect concurrency limit of 1 (infra/prefect.yaml does).

The lock is re-entrant within a process: `sproutrag index` takes it before it starts a
Prefect server (a busy database is refused in a second, not after the server's start),
and the flow it runs takes it again without waiting for itself.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, TextIO

from sproutrag.errors import DatabaseBusyError  # noqa: F401 - also importable from here

log = logging.getLogger(__name__)


class DatabaseLock:
    """The index lock of database DB (a context manager; see the module docstring)."""

    #: Locks this process holds: lock file path -> (open file, how many holders).
    _held: ClassVar[dict[str, tuple[TextIO, int]]] = {}
    _guard = threading.Lock()

    def __init__(self, db: str, *, timeout: float = 0.0, poll: float = 0.5) -> None:
        self.db, self.timeout, self.poll = db, timeout, poll
        self.local = "://" not in db or db.startswith("file://")
        self._fh = None
        self._key: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.db.removeprefix("file://")) / ".sproutrag-index.lock"

    def __enter__(self) -> DatabaseLock:
        if not self.local:
            return self
        key = str(self.path.expanduser().resolve())
        with self._guard:
            if key in self._held:  # this process holds it already: enter again
                fh, count = self._held[key]
                self._held[key] = (fh, count + 1)
                self._key = key
                return self
        self._acquire()
        with self._guard:
            self._held[key] = (self._fh, 1)
        self._key = key
        return self

    def _acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until exit
        except PermissionError as exc:
            raise PermissionError(
                f"cannot write to the database folder {self.db!r}: {exc.strerror}; "
                "choose a --db path you can write to"
            ) from None
        except (FileExistsError, NotADirectoryError):  # a file where the folder goes
            from sproutrag.errors import DatabaseNotFoundError

            raise DatabaseNotFoundError(
                f"database {self.db} is not a folder (a file is there): give a folder, a "
                "new one or the one `sproutrag index` wrote") from None
        deadline = time.monotonic() + self.timeout
        said = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said and self.timeout > 0:  # a wait without a word looks hung
                    said = True
                    log.warning("another index run is writing to %r (%s): waiting up to "
                                "%.0f s for it (pipeline.lock_timeout)", self.db,
                                _holder(fh), self.timeout)
                if time.monotonic() >= deadline:
                    holder = _holder(fh)
                    fh.close()
                    wait = (f"still writing after pipeline.lock_timeout ({self.timeout:g} s)"
                            if self.timeout > 0 else
                            "wait for it to finish (or set pipeline.lock_timeout to wait)")
                    raise DatabaseBusyError(
                        f"another index run is writing to {self.db!r} ({holder}); {wait}"
                    ) from None
                time.sleep(self.poll)
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "since": datetime.now(UTC).isoformat()}))
        fh.flush()
        self._fh = fh

    def __exit__(self, *exc: object) -> None:
        if self._key is None:
            return
        with self._guard:
            fh, count = self._held[self._key]
            if count > 1:
                self._held[self._key] = (fh, count - 1)
                self._key = None
                return
            del self._held[self._key]
        self._key = None
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()
        self._fh = None


def _holder(fh: TextIO) -> str:
    """What the lock file FH says of the run holding it (its pid and start)."""
    fh.seek(0)
    return fh.read().strip() or "unknown"
