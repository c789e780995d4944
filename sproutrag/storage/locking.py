"""One index run per database at a time: an advisory lock file beside the tables.

On a local database the lock is `fcntl.flock` on `<db>/.sproutrag-index.lock`: the
kernel releases it when the holder dies (kill -9 included), so a crashed run never
leaves a stale lock. Object stores (s3://) have no such lock: there, run the deployment
with a Prefect concurrency limit of 1 (infra/prefect.yaml does).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from sproutrag.errors import DatabaseBusyError  # noqa: F401 - also importable from here


class DatabaseLock:
    def __init__(self, db: str, *, timeout: float = 0.0, poll: float = 0.5) -> None:
        self.db, self.timeout, self.poll = db, timeout, poll
        self.local = "://" not in db or db.startswith("file://")
        self._fh = None

    @property
    def path(self) -> Path:
        return Path(self.db.removeprefix("file://")) / ".sproutrag-index.lock"

    def __enter__(self) -> DatabaseLock:
        if not self.local:
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until exit
        except PermissionError as exc:
            raise PermissionError(
                f"cannot write to the database folder {self.db!r}: {exc.strerror}; "
                "choose a --db path you can write to"
            ) from None
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    fh.seek(0)
                    holder = fh.read().strip() or "unknown"
                    fh.close()
                    raise DatabaseBusyError(
                        f"another index run is writing to {self.db!r} ({holder}); "
                        "wait for it to finish (or set pipeline.lock_timeout to wait)"
                    ) from None
                time.sleep(self.poll)
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "since": datetime.now(UTC).isoformat()}))
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
